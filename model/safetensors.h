// Tensors in and out of safetensors files (the format: common/safetensors.h), and loading a module
// from them with strict name and shape checks. What `gmlp export` writes and `--init` reads.
#ifndef GMLP_MODEL_SAFETENSORS_H_
#define GMLP_MODEL_SAFETENSORS_H_

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp::model {

using TensorList = std::vector<std::pair<std::string, torch::Tensor>>;

struct SafetensorsFile {
  std::string path;
  TensorList tensors;  // CPU, contiguous, in the file's data order
  std::map<std::string, std::string> metadata;

  // nullptr when the file has no tensor `name`.
  const torch::Tensor* Find(absl::string_view name) const;
};

// Writes `tensors` (any device; float, bfloat16, half, double, integer and bool dtypes) and
// `metadata` to `path` atomically (temporary file, fsync, rename).
absl::Status WriteSafetensors(const std::string& path, const TensorList& tensors,
                              const std::map<std::string, std::string>& metadata = {});

// Reads a safetensors file written by anyone; errors name the file and the tensor
// (ParseSafetensors' checks, plus dtypes LibTorch has no type for, such as U16 or F8).
absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path);

// The tensors a module's weights are: every named parameter and buffer, as `prefix + name`.
TensorList ModuleTensors(const torch::nn::Module& module, absl::string_view prefix = "");

// Copies file.tensors[prefix + name] into each parameter and buffer of `module` (cast to its
// dtype, on its device). Strict: a missing tensor, one of another shape, or, when `exact`, a
// tensor under `prefix` that the module does not have, is an error naming the file and the
// tensor; nothing is copied unless every tensor fits.
absl::Status LoadModuleFrom(torch::nn::Module& module, const SafetensorsFile& file,
                            absl::string_view prefix = "", bool exact = true);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_SAFETENSORS_H_
