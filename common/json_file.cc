#include "common/json_file.h"

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp {

std::string BytesAfterJsonValue(absl::string_view parsed_text, size_t nul) {
  return absl::StrCat(parsed_text.size() - nul, " bytes after the value, from byte ", nul,
                      ", a NUL");
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path, absl::string_view fix) {
  GMLP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat(path, ": not valid JSON (", e.what(), "); ", fix));
  }
  const size_t nul = NulAfterJson(text);
  if (nul != std::string::npos) {
    return absl::DataLossError(
        absl::StrCat(path, ": not valid JSON (", BytesAfterJsonValue(text, nul), "); ", fix));
  }
  return j;
}

}  // namespace gmlp
