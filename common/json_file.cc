#include "common/json_file.h"

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp {

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path, absl::string_view fix) {
  GMLP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::DataLossError(absl::StrCat(path, ": not valid JSON (", e.what(), "); ", fix));
  }
}

}  // namespace gmlp
