// Reading a struct with a field list (a static ForEachField(self, visit(name, field, help)), as
// the configs here have) from a JSON object: each key sets the field of that name, with the
// field's own type, checked strictly (an integer field takes no fraction and no value out of its
// range). The one place such JSON is read, so every config file gives the same errors. And
// KeyOrigins: where each key of a config came from, so that an error names the file or flag to
// fix.
#ifndef GMLP_COMMON_FIELD_JSON_H_
#define GMLP_COMMON_FIELD_JSON_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gmlp {

// `v` as JSON text for an error message. Never throws: bytes that are not UTF-8 (only strings
// from the command line can hold them; the JSON parser refuses them) become U+FFFD.
inline std::string JsonForMessage(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Sets *out from `v` when `v` holds a value of T's kind that T can represent (T: bool, a signed
// or unsigned integer, double, std::string, or a std::vector of one of those), and returns "".
// Otherwise leaves *out alone and returns what is wrong, to follow the key in a message:
// ` is "abc"; expected a number`, ` is 9223372036854775808, out of range for an integer
// (-9223372036854775808 to 9223372036854775807)`, `[0] is 1.5; expected a whole number >= 0`. A
// whole-valued number written as a fraction or with an exponent (1e3) is taken by an integer field.
template <typename T>
std::string ReadJsonValue(const nlohmann::json& v, T* out) {
  auto wrong = [&v](absl::string_view expected) {
    return absl::StrCat(" is ", JsonForMessage(v), "; expected ", expected);
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return wrong("true or false");
    *out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    using Limits = std::numeric_limits<T>;
    const char* kind = std::is_signed_v<T> ? "an integer" : "a whole number >= 0";
    if (!v.is_number()) return wrong(kind);
    const auto out_of_range = [&] {
      return absl::StrCat(" is ", JsonForMessage(v), ", out of range for ", kind, " (",
                          Limits::min(), " to ", Limits::max(), ")");
    };
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(Limits::max())) return out_of_range();
      *out = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if constexpr (std::is_signed_v<T>) {
        if (i < Limits::min() || i > Limits::max()) return out_of_range();
      } else if (i < 0) {
        return wrong(kind);
      }
      *out = static_cast<T>(i);
    } else {
      const double d = v.get<double>();
      if (d != std::floor(d)) return wrong(kind);
      if (d < 0 && !std::is_signed_v<T>) return wrong(kind);
      // Limits::max() + 1 is a power of two, exact as a double.
      if (d < static_cast<double>(Limits::min()) ||
          d >= 2.0 * static_cast<double>(Limits::max() / 2 + 1)) {
        return out_of_range();
      }
      *out = static_cast<T>(d);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return wrong("a number");
    *out = v.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return wrong("a string");
    *out = v.get<std::string>();
  } else {  // a std::vector
    if (!v.is_array()) return wrong("a list");
    T items(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      std::string problem = ReadJsonValue(v[i], &items[i]);
      if (!problem.empty()) return absl::StrCat("[", i, "]", problem);
    }
    *out = std::move(items);
  }
  return "";
}

// Sets the fields of `*s` named by the keys of `j`; fields without a key keep their value. A key
// that is not a field (nor in `other_keys`, which the caller reads itself) or a value the field
// cannot take (ReadJsonValue) is InvalidArgument "<origin>: ...", naming the key and what it
// takes.
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
    const std::string problem = ReadJsonValue(j.at(name), &field);
    if (!problem.empty()) {
      status = absl::InvalidArgumentError(absl::StrCat(origin, ": \"", name, "\"", problem));
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

// Where each key of a config came from, for errors that name what to fix: a key a file set (or
// a flag that sets many keys, like `gmlp study --smoke`) is named `<source>: "key" value`, any
// other key (set by its own flag, or left at its default) `--key=value`.
class KeyOrigins {
 public:
  // `source` (a file's path, or a flag such as "--smoke") set `key`, over any earlier source.
  void Set(const std::string& key, const std::string& source) { source_[key] = source; }
  // `source` set every key of the JSON object `j`.
  void SetAll(const nlohmann::json& j, const std::string& source) {
    if (!j.is_object()) return;
    for (const auto& item : j.items()) Set(item.key(), source);
  }
  // `key` was given on the command line, over any earlier source.
  void SetByFlag(const std::string& key) { source_.erase(key); }
  // The file or flag that set `key`; "" when its own flag did, or nothing (the default).
  std::string Source(const std::string& key) const {
    auto it = source_.find(key);
    return it == source_.end() ? "" : it->second;
  }

  // `key` = `value` at the start of an error line: `FILE: "mask_rate" -0.15` or
  // `--mask_rate=-0.15`.
  std::string Subject(const std::string& key, const nlohmann::json& value) const {
    const std::string source = Source(key);
    if (source.empty()) return Flag(key, value);
    return absl::StrCat(source, ": \"", key, "\" ", JsonForMessage(value));
  }
  // `key` = `value` further on in a line: `"steps" 1000 (FILE)` or `--steps=1000`.
  std::string Mention(const std::string& key, const nlohmann::json& value) const {
    const std::string source = Source(key);
    if (source.empty()) return Flag(key, value);
    return absl::StrCat("\"", key, "\" ", JsonForMessage(value), " (", source, ")");
  }

 private:
  // As the command line writes it: a string bare, a list comma-separated.
  static std::string Flag(const std::string& key, const nlohmann::json& value) {
    auto text = [](const nlohmann::json& v) {
      return v.is_string() ? v.get<std::string>() : JsonForMessage(v);
    };
    std::string out = absl::StrCat("--", key, "=");
    if (!value.is_array()) return absl::StrCat(out, text(value));
    for (size_t i = 0; i < value.size(); ++i) absl::StrAppend(&out, i ? "," : "", text(value[i]));
    return out;
  }

  std::map<std::string, std::string> source_;
};

}  // namespace gmlp

#endif  // GMLP_COMMON_FIELD_JSON_H_
