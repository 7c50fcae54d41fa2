// The one "read a file and parse it as JSON" helper.
#ifndef GMLP_COMMON_JSON_FILE_H_
#define GMLP_COMMON_JSON_FILE_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp {

// Reads `path` and parses it. A missing or unreadable file is ReadFile's error; text that is not
// JSON, or JSON followed by anything but whitespace, is DataLoss "<path>: not valid JSON (<parser's
// message, or the byte offset of what follows the value>); <fix>", `fix` saying what to do.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path, absl::string_view fix);

// nlohmann's parser takes a NUL for the end of the text, so it accepts "{}\0garbage" (any other
// byte after the value it refuses itself). A parsed text holds a NUL only after its value: the
// offset of the first NUL, or npos when there is none. Every reader of JSON text checks it.
inline size_t NulAfterJson(absl::string_view parsed_text) { return parsed_text.find('\0'); }
// "N bytes after the value, from byte K, a NUL" for a whole file's text with a NUL at `nul`.
std::string BytesAfterJsonValue(absl::string_view parsed_text, size_t nul);

}  // namespace gmlp

#endif  // GMLP_COMMON_JSON_FILE_H_
