// Reading a struct with a field list (a static ForEachField(self, visit(name, field, help)), as
// the configs here have) from a JSON object: each key sets the field of that name, with the
// field's own type. The one place such JSON is read, so every config file gives the same errors.
#ifndef GMLP_COMMON_FIELD_JSON_H_
#define GMLP_COMMON_FIELD_JSON_H_

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gmlp {

// Whether `v` holds a value of a field of type T exactly: an integer field takes only a JSON
// integer within T's range (nlohmann would truncate 1.5, wrap 2^63 and, for 3e37, convert out of
// range: undefined behaviour, found by tests/fuzz/train_config_fuzz), a bool field only a bool.
template <typename T>
bool JsonFitsField(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) {
      return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    }
    if (!v.is_number_integer()) return false;
    const int64_t x = v.get<int64_t>();
    if constexpr (std::is_signed_v<T>) {
      return x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
             x <= static_cast<int64_t>(std::numeric_limits<T>::max());
    } else {
      return x >= 0 && static_cast<uint64_t>(x) <= std::numeric_limits<T>::max();
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    return v.is_number();
  } else {
    return true;  // strings and lists: get_to checks their type
  }
}

// What JsonFitsField<T> wants, for messages.
template <typename T>
std::string JsonFieldKind() {
  if constexpr (std::is_same_v<T, bool>) {
    return "true or false";
  } else if constexpr (std::is_integral_v<T>) {
    return absl::StrCat("an integer in [", std::numeric_limits<T>::min(), ", ",
                        std::numeric_limits<T>::max(), "]");
  } else {
    return "a number";
  }
}

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
    using T = std::decay_t<decltype(field)>;
    if (!JsonFitsField<T>(j.at(name))) {
      status = absl::InvalidArgumentError(absl::StrCat(
          origin, ": key \"", name, "\" has ", j.at(name).dump(), ", not ", JsonFieldKind<T>()));
      return;
    }
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
