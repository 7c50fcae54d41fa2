// Reading a struct with a field list (a static ForEachField(self, visit(name, field, help)), as
// the configs here have) from a JSON object: each key sets the field of that name, with the
// field's own type. The one place such JSON is read, so every config file gives the same errors.
#ifndef GMLP_COMMON_FIELD_JSON_H_
#define GMLP_COMMON_FIELD_JSON_H_

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gmlp {

// Sets the fields of `*s` named by the keys of `j`; fields without a key keep their value. A key
// that is not a field (nor in `other_keys`, which the caller reads itself) or a value of the
// wrong type is InvalidArgument "<origin>: ...", naming the key and the fix.
template <typename Struct>
absl::Status FieldsFromJson(const nlohmann::json& j, absl::string_view origin, Struct* s,
                            const std::set<std::string>& other_keys = {}) {
  if (!j.is_object())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": expected an object"));
  std::set<std::string> known = other_keys;
  absl::Status status;
  Struct::ForEachField(*s, [&](const char* name, auto& field, const char*) {
    known.insert(name);
    if (!status.ok() || !j.contains(name)) return;
    try {
      j.at(name).get_to(field);
    } catch (const nlohmann::json::exception& e) {
      status = absl::InvalidArgumentError(absl::StrCat(origin, ": key \"", name, "\" has ",
                                                       j.at(name).dump(), ", of the wrong type (",
                                                       e.what(), ")"));
    }
  });
  if (!status.ok()) return status;
  for (const auto& item : j.items()) {
    if (known.count(item.key()) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ": unknown key \"", item.key(),
                                                     "\"; the valid names are the flags of "
                                                     "--help"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gmlp

#endif  // GMLP_COMMON_FIELD_JSON_H_
