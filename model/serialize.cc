// SaveModule / LoadModule over torch::serialize archives (see serialize.h).
#include "model/serialize.h"

#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp::model {

absl::Status SaveModule(const torch::nn::Module& module, const std::string& path) {
  std::ostringstream bytes;
  try {
    torch::serialize::OutputArchive archive;
    for (const auto& item : module.named_parameters(/*recurse=*/true)) {
      archive.write(item.key(), item.value().detach().cpu(), /*is_buffer=*/false);
    }
    for (const auto& item : module.named_buffers(/*recurse=*/true)) {
      archive.write(item.key(), item.value().detach().cpu(), /*is_buffer=*/true);
    }
    archive.save_to(bytes);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("saving weights for ", path, ": ", e.what_without_backtrace()));
  }
  // Written in one piece through a temporary file: a crash never leaves a truncated archive.
  return WriteFileAtomic(path, bytes.str());
}

absl::Status LoadModule(torch::nn::Module& module, const std::string& path,
                        absl::string_view prefix) {
  if (!PathExists(path)) {
    return absl::NotFoundError(absl::StrCat("weights file ", path, " does not exist"));
  }
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, torch::kCPU);  // GPU-trained weights load anywhere
  } catch (const c10::Error& e) {
    return absl::DataLossError(
        absl::StrCat("cannot read weights file ", path,
                     " (truncated or not written by gmlp; re-save it or pick another checkpoint): ",
                     e.what_without_backtrace()));
  }
  auto load = [&](const std::string& name, torch::Tensor& target) -> absl::Status {
    const std::string key = absl::StrCat(prefix, name);
    torch::Tensor value;
    bool found = false;
    try {
      found = archive.try_read(key, value);
    } catch (const c10::Error& e) {
      return absl::DataLossError(absl::StrCat("weights file ", path, ": reading '", key,
                                              "': ", e.what_without_backtrace()));
    }
    if (!found) {
      return absl::NotFoundError(
          absl::StrCat("weights file ", path, " has no tensor '", key,
                       "' (was it saved from a model with another architecture or config?)"));
    }
    if (value.sizes() != target.sizes()) {
      std::ostringstream msg;
      msg << "weights file " << path << ": '" << key << "' has shape " << value.sizes()
          << " but the model expects " << target.sizes()
          << " (the config differs from the one the weights were saved with)";
      return absl::InvalidArgumentError(msg.str());
    }
    torch::NoGradGuard no_grad;
    target.copy_(value);
    return absl::OkStatus();
  };
  for (auto& item : module.named_parameters(/*recurse=*/true)) {
    GMLP_RETURN_IF_ERROR(load(item.key(), item.value()));
  }
  for (auto& item : module.named_buffers(/*recurse=*/true)) {
    GMLP_RETURN_IF_ERROR(load(item.key(), item.value()));
  }
  return absl::OkStatus();
}

}  // namespace gmlp::model
