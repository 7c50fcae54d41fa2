// Tensors through safetensors files (see safetensors.h).
#include "model/safetensors.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/safetensors.h"
#include "common/status.h"

namespace gmlp::model {
namespace {

struct DtypeName {
  torch::ScalarType type;
  const char* name;
};

constexpr DtypeName kDtypes[] = {
    {torch::kFloat, "F32"},  {torch::kBFloat16, "BF16"}, {torch::kHalf, "F16"},
    {torch::kDouble, "F64"}, {torch::kLong, "I64"},      {torch::kInt, "I32"},
    {torch::kShort, "I16"},  {torch::kChar, "I8"},       {torch::kByte, "U8"},
    {torch::kBool, "BOOL"},
};

const char* DtypeNameOf(torch::ScalarType type) {
  for (const DtypeName& d : kDtypes) {
    if (d.type == type) return d.name;
  }
  return nullptr;
}

bool ScalarTypeOf(absl::string_view name, torch::ScalarType* type) {
  for (const DtypeName& d : kDtypes) {
    if (name == d.name) {
      *type = d.type;
      return true;
    }
  }
  return false;
}

std::string ShapeString(torch::IntArrayRef shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

const torch::Tensor* SafetensorsFile::Find(absl::string_view name) const {
  for (const auto& [key, tensor] : tensors) {
    if (key == name) return &tensor;
  }
  return nullptr;
}

absl::Status WriteSafetensors(const std::string& path, const TensorList& tensors,
                              const std::map<std::string, std::string>& metadata) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");
  std::vector<SafetensorsEntry> entries;
  std::vector<torch::Tensor> data;
  for (const auto& [name, tensor] : tensors) {
    const char* dtype = DtypeNameOf(tensor.scalar_type());
    if (dtype == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", name, "' has dtype ",
                                                     c10::toString(tensor.scalar_type()),
                                                     ", which gmlp does not write to safetensors"));
    }
    entries.push_back({name, dtype, tensor.sizes().vec(), 0, 0});
    data.push_back(tensor.detach().cpu().contiguous());
  }
  std::string bytes = SafetensorsHeader(entries, metadata);
  for (const torch::Tensor& t : data) {
    bytes.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  }
  return WriteFileAtomic(path, bytes);
}

absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path) {
  if (!PathExists(path)) {
    return absl::NotFoundError(absl::StrCat("weights file ", path, " does not exist"));
  }
  GMLP_ASSIGN_OR_RETURN(const std::string bytes, ReadFile(path));
  GMLP_ASSIGN_OR_RETURN(const SafetensorsLayout layout, ParseSafetensors(bytes, path));
  SafetensorsFile file;
  file.path = path;
  file.metadata = layout.metadata;
  for (const SafetensorsEntry& e : layout.tensors) {
    torch::ScalarType type;
    if (!ScalarTypeOf(e.dtype, &type)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", e.name, "' has dtype ",
                                                     e.dtype, ", which gmlp cannot load"));
    }
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(type));
    if (e.end > e.begin) {
      std::memcpy(t.data_ptr(), bytes.data() + layout.data_start + e.begin, e.end - e.begin);
    }
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return file;
}

TensorList ModuleTensors(const torch::nn::Module& module, absl::string_view prefix) {
  TensorList out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    out.emplace_back(absl::StrCat(prefix, item.key()), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    out.emplace_back(absl::StrCat(prefix, item.key()), item.value());
  }
  return out;
}

absl::Status LoadModuleFrom(torch::nn::Module& module, const SafetensorsFile& file,
                            absl::string_view prefix, bool exact) {
  const TensorList targets = ModuleTensors(module, prefix);
  std::vector<const torch::Tensor*> sources;
  for (const auto& [name, target] : targets) {
    const torch::Tensor* source = file.Find(name);
    if (source == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          file.path, ": no tensor '", name,
          "' (exported from another architecture or config? its config.json must match)"));
    }
    if (source->sizes() != target.sizes()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file.path, ": tensor '", name, "' has shape ", ShapeString(source->sizes()),
                       "; the model's config needs ", ShapeString(target.sizes())));
    }
    if (!source->is_floating_point() && target.is_floating_point()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file.path, ": tensor '", name, "' is not floating point"));
    }
    sources.push_back(source);
  }
  if (exact) {
    for (const auto& [name, tensor] : file.tensors) {
      if (!absl::StartsWith(name, prefix)) continue;
      bool known = false;
      for (const auto& target : targets) known = known || target.first == name;
      if (!known) {
        return absl::InvalidArgumentError(absl::StrCat(
            file.path, ": unexpected tensor '", name,
            "' (the model's config has no such weight: another architecture or config?)"));
      }
    }
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < targets.size(); ++i) {
    torch::Tensor target = targets[i].second;
    target.copy_(*sources[i]);
  }
  return absl::OkStatus();
}

}  // namespace gmlp::model
