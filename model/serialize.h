// Saving and loading module parameters and buffers by name (torch::serialize archives).
#ifndef GMLP_MODEL_SERIALIZE_H_
#define GMLP_MODEL_SERIALIZE_H_

#include <torch/torch.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gmlp::model {

// Writes every named parameter and buffer of `module` to `path`, atomically (temporary file,
// fsync, rename).
absl::Status SaveModule(const torch::nn::Module& module, const std::string& path);

// Loads into `module` the tensors saved under `prefix + name` for each of its parameters and
// buffers (e.g. prefix "encoder." loads an MlmModel's encoder into a bare encoder). Every
// parameter must be present with the same shape; the error names the first one that is not.
absl::Status LoadModule(torch::nn::Module& module, const std::string& path,
                        absl::string_view prefix = "");

}  // namespace gmlp::model

#endif  // GMLP_MODEL_SERIALIZE_H_
