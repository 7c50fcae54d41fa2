#include "pretrain/checkpoint_state.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/field_json.h"

namespace gmlp::pretrain {
namespace {

absl::Status Malformed(const std::string& path, absl::string_view key, absl::string_view want,
                       const nlohmann::json* found) {
  return absl::DataLossError(absl::StrCat(path, ": malformed checkpoint state: \"", key,
                                          "\" must be ", want, ", found ",
                                          found == nullptr ? std::string("nothing") : found->dump(),
                                          "; resume from an older checkpoint"));
}

// The integer at `key` of `object` (at least `min`), or `fallback` when `required` is false and
// the key is absent.
absl::StatusOr<int64_t> Integer(const nlohmann::json& object, const char* key, int64_t min,
                                const std::string& path, absl::string_view shown_key, bool required,
                                int64_t fallback = 0) {
  const auto it = object.find(key);
  if (it == object.end()) {
    if (!required) return fallback;
    return Malformed(path, shown_key, absl::StrCat("an integer >= ", min), nullptr);
  }
  int64_t value = 0;
  if (!ReadJsonValue(*it, &value).empty() || value < min) {
    return Malformed(path, shown_key, absl::StrCat("an integer >= ", min), &*it);
  }
  return value;
}

}  // namespace

absl::StatusOr<CheckpointState> ParseCheckpointState(const nlohmann::json& j,
                                                     const std::string& path) {
  if (!j.is_object()) return Malformed(path, "", "a JSON object", &j);
  CheckpointState s;
  auto step = Integer(j, "step", 0, path, "step", /*required=*/true);
  if (!step.ok()) return step.status();
  s.step = *step;
  const auto loader = j.find("loader");
  if (loader == j.end() || !loader->is_object()) {
    return Malformed(path, "loader", "an object {\"epoch\", \"position\"}",
                     loader == j.end() ? nullptr : &*loader);
  }
  auto epoch = Integer(*loader, "epoch", 0, path, "loader.epoch", /*required=*/false);
  if (!epoch.ok()) return epoch.status();
  auto position = Integer(*loader, "position", 0, path, "loader.position", /*required=*/false);
  if (!position.ok()) return position.status();
  s.loader_epoch = *epoch;
  s.loader_position = *position;
  auto world = Integer(j, "world_size", 1, path, "world_size", /*required=*/false, 1);
  if (!world.ok()) return world.status();
  s.world_size = *world;
  if (const auto e = j.find("elapsed_s"); e != j.end()) {
    if (!e->is_number() || !std::isfinite(e->get<double>()) || e->get<double>() < 0) {
      return Malformed(path, "elapsed_s", "a number >= 0", &*e);
    }
    s.elapsed_s = e->get<double>();
  }
  return s;
}

}  // namespace gmlp::pretrain
