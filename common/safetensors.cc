// The safetensors layout: parsing with every check, and writing the header (see safetensors.h).
#include "common/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace gmlp {
namespace {

struct DtypeInfo {
  const char* name;
  int size;
};

// Every dtype the format's specification lists.
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
    {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8},
};

uint64_t ReadU64Le(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

int SafetensorsDtypeSize(absl::string_view dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (dtype == d.name) return d.size;
  }
  return 0;
}

namespace {

absl::Status Corrupt(const std::string& origin, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(origin, ": not a valid safetensors file: ", what));
}

// __metadata__: an object of strings.
absl::Status ParseMetadata(const nlohmann::json& value, const std::string& origin,
                           std::map<std::string, std::string>* metadata) {
  if (!value.is_object()) return Corrupt(origin, "__metadata__ is not an object");
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) {
      return Corrupt(origin, absl::StrCat("__metadata__ '", key, "' is not a string"));
    }
    (*metadata)[key] = text.get<std::string>();
  }
  return absl::OkStatus();
}

// One tensor's entry {dtype, shape, data_offsets}, its offsets inside the `data_size` bytes of
// data and holding exactly the bytes its dtype and shape need.
absl::StatusOr<SafetensorsEntry> ParseEntry(const std::string& name, const nlohmann::json& value,
                                            uint64_t data_size, const std::string& origin) {
  auto bad = [&](absl::string_view what) {
    return Corrupt(origin, absl::StrCat("tensor '", name, "': ", what));
  };
  if (!value.is_object() || value.size() != 3 || !value.contains("dtype") ||
      !value.contains("shape") || !value.contains("data_offsets")) {
    return bad("expected an object with exactly dtype, shape and data_offsets");
  }
  SafetensorsEntry e;
  e.name = name;
  const nlohmann::json& dtype = value["dtype"];
  const int size = dtype.is_string() ? SafetensorsDtypeSize(dtype.get<std::string>()) : 0;
  if (size == 0) return bad(absl::StrCat("unknown dtype ", dtype.dump()));
  e.dtype = dtype.get<std::string>();
  const nlohmann::json& shape = value["shape"];
  if (!shape.is_array()) return bad("shape is not an array");
  uint64_t bytes = static_cast<uint64_t>(size);
  for (const nlohmann::json& dim : shape) {
    // Each dimension and the running byte count stay below 2^62: no overflow below.
    if (!dim.is_number_unsigned() || dim.get<uint64_t>() >= (uint64_t{1} << 62)) {
      return bad(absl::StrCat("shape ", shape.dump(), " is not a list of sizes >= 0"));
    }
    const uint64_t d = dim.get<uint64_t>();
    e.shape.push_back(static_cast<int64_t>(d));
    if (d != 0 && bytes > (uint64_t{1} << 62) / d) {
      return bad(absl::StrCat("shape ", shape.dump(), " is too large"));
    }
    bytes *= d;
  }
  const nlohmann::json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    return bad(absl::StrCat("data_offsets ", offsets.dump(), " is not [begin, end]"));
  }
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.end < e.begin || e.end > data_size) {
    return bad(absl::StrCat("data_offsets [", e.begin, ", ", e.end, "] run past the ", data_size,
                            " bytes of data (truncated file?)"));
  }
  if (e.end - e.begin != bytes) {
    return bad(absl::StrCat("data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin,
                            " bytes; ", e.dtype, " of shape ", shape.dump(), " needs ", bytes));
  }
  return e;
}

// The data must be exactly the tensors, back to back (what the reference reader enforces).
// Sorts `tensors` by offset.
absl::Status CheckTensorsTileData(std::vector<SafetensorsEntry>& tensors, uint64_t data_size,
                                  const std::string& origin) {
  std::sort(tensors.begin(), tensors.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t next = 0;
  for (const SafetensorsEntry& e : tensors) {
    if (e.begin != next) {
      return Corrupt(
          origin, absl::StrCat("tensor '", e.name, "' starts at byte ", e.begin, " of the data, ",
                               e.begin < next ? "overlapping the tensor before it"
                                              : "leaving a hole before it",
                               " (expected ", next, ")"));
    }
    next = e.end;
  }
  if (next != data_size) {
    return Corrupt(origin,
                   absl::StrCat("the tensors hold ", next, " bytes but the data section has ",
                                data_size, " (trailing bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SafetensorsLayout> ParseSafetensors(absl::string_view file,
                                                   const std::string& origin) {
  if (file.size() < 8) {
    return Corrupt(
        origin, absl::StrCat("only ", file.size(), " bytes, fewer than the 8-byte header length"));
  }
  const uint64_t n = ReadU64Le(file.data());
  if (n > kMaxSafetensorsHeader || n > file.size() - 8) {
    return Corrupt(origin, absl::StrCat("header length ", n, " runs past the end of the ",
                                        file.size(), "-byte file (truncated?)"));
  }
  const nlohmann::json header =
      nlohmann::json::parse(file.substr(8, n), /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return Corrupt(origin, "the header is not a JSON object");

  SafetensorsLayout layout;
  layout.data_start = 8 + n;
  const uint64_t data_size = file.size() - layout.data_start;
  for (const auto& item : header.items()) {
    if (item.key() == "__metadata__") {
      GMLP_RETURN_IF_ERROR(ParseMetadata(item.value(), origin, &layout.metadata));
      continue;
    }
    GMLP_ASSIGN_OR_RETURN(SafetensorsEntry e,
                          ParseEntry(item.key(), item.value(), data_size, origin));
    layout.tensors.push_back(std::move(e));
  }
  GMLP_RETURN_IF_ERROR(CheckTensorsTileData(layout.tensors, data_size, origin));
  return layout;
}

std::string SafetensorsHeader(std::vector<SafetensorsEntry>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (SafetensorsEntry& e : tensors) {
    uint64_t bytes = static_cast<uint64_t>(SafetensorsDtypeSize(e.dtype));
    for (int64_t d : e.shape) bytes *= static_cast<uint64_t>(d);
    e.begin = offset;
    e.end = offset + bytes;
    offset = e.end;
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
  return out + json;
}

}  // namespace gmlp
