#include "pretrain/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp::pretrain {
namespace {

constexpr char kStepPrefix[] = "step_";
constexpr char kTmpPrefix[] = ".tmp_step_";

}  // namespace

std::string CheckpointName(int64_t step) { return absl::StrFormat("%s%06d", kStepPrefix, step); }

std::vector<std::pair<int64_t, std::string>> ListCheckpoints(const std::string& checkpoints_dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const std::string& name : ListDir(checkpoints_dir)) {
    if (!absl::StartsWith(name, kStepPrefix)) continue;
    int64_t step = 0;
    if (!absl::SimpleAtoi(name.substr(std::strlen(kStepPrefix)), &step)) continue;
    const std::string path = JoinPath(checkpoints_dir, name);
    if (!PathExists(JoinPath(path, kStateFile))) continue;
    out.emplace_back(step, path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path) {
  if (!IsDirectory(path)) {
    return absl::NotFoundError(absl::StrCat(path,
                                            ": no such directory; give a checkpoint "
                                            "directory or a `gmlp pretrain` --out_dir"));
  }
  if (PathExists(JoinPath(path, kStateFile))) return path;
  auto list = ListCheckpoints(JoinPath(path, kCheckpointsSubdir));
  if (list.empty()) list = ListCheckpoints(path);  // `path` is the checkpoints/ directory itself
  if (list.empty()) {
    return absl::NotFoundError(absl::StrCat(
        path, ": holds no complete checkpoint (no ", kCheckpointsSubdir, "/step_*/", kStateFile,
        "); give a checkpoint directory or the --out_dir of a run that wrote one"));
  }
  return list.back().second;
}

absl::StatusOr<std::string> BeginCheckpoint(const std::string& checkpoints_dir, int64_t step) {
  GMLP_RETURN_IF_ERROR(MakeDirs(checkpoints_dir));
  const std::string tmp =
      JoinPath(checkpoints_dir, absl::StrFormat("%s%06d.%d", kTmpPrefix, step, ::getpid()));
  if (PathExists(tmp)) GMLP_RETURN_IF_ERROR(RemoveTree(tmp));
  if (::mkdir(tmp.c_str(), 0755) != 0) return ErrnoError("mkdir", tmp);
  return tmp;
}

absl::StatusOr<std::string> CommitCheckpoint(const std::string& tmp_dir,
                                             const std::string& checkpoints_dir, int64_t step) {
  for (const std::string& name : ListDir(tmp_dir)) {
    GMLP_RETURN_IF_ERROR(FsyncPath(JoinPath(tmp_dir, name)));
  }
  GMLP_RETURN_IF_ERROR(FsyncPath(tmp_dir));
  const std::string final_path = JoinPath(checkpoints_dir, CheckpointName(step));
  if (PathExists(final_path)) {
    // rename(2) cannot replace a non-empty directory: move the old one aside first, so a crash
    // in between leaves it under a temporary name rather than half-deleted.
    const std::string old = absl::StrCat(tmp_dir, ".old");
    GMLP_RETURN_IF_ERROR(RenameAtomic(final_path, old));
    GMLP_RETURN_IF_ERROR(RenameAtomic(tmp_dir, final_path));
    GMLP_RETURN_IF_ERROR(RemoveTree(old));
  } else {
    GMLP_RETURN_IF_ERROR(RenameAtomic(tmp_dir, final_path));
  }
  return final_path;
}

absl::Status PruneCheckpoints(const std::string& checkpoints_dir, int64_t keep) {
  const auto list = ListCheckpoints(checkpoints_dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < list.size(); ++i) {
    GMLP_RETURN_IF_ERROR(RemoveTree(list[i].second));
  }
  for (const std::string& name : ListDir(checkpoints_dir)) {
    if (absl::StartsWith(name, kTmpPrefix)) {
      GMLP_RETURN_IF_ERROR(RemoveTree(JoinPath(checkpoints_dir, name)));
    }
  }
  return absl::OkStatus();
}

absl::Status SaveNamedTensors(const torch::nn::Module& module, const std::string& path) {
  try {
    torch::serialize::OutputArchive archive;
    for (const auto& item : module.named_parameters(/*recurse=*/true)) {
      archive.write(item.key(), item.value().detach().cpu());
    }
    for (const auto& item : module.named_buffers(/*recurse=*/true)) {
      archive.write(item.key(), item.value().detach().cpu(), /*is_buffer=*/true);
    }
    archive.save_to(path);
  } catch (const c10::Error& e) {
    return absl::UnknownError(
        absl::StrCat(path, ": cannot write the model: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::Status LoadNamedTensors(torch::nn::Module& module, const std::string& path) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, torch::kCPU);
    torch::NoGradGuard no_grad;
    for (auto& item : module.named_parameters(/*recurse=*/true)) {
      torch::Tensor t;  // fresh: reading into a defined tensor would set_() it in place
      if (!archive.try_read(item.key(), t)) {
        return absl::DataLossError(absl::StrCat(path, ": has no tensor \"", item.key(), "\""));
      }
      if (!t.sizes().equals(item.value().sizes())) {
        return absl::FailedPreconditionError(absl::StrCat(path, ": \"", item.key(), "\" has shape ",
                                                          c10::str(t.sizes()), ", the model ",
                                                          c10::str(item.value().sizes())));
      }
      item.value().copy_(t);
    }
    for (auto& item : module.named_buffers(/*recurse=*/true)) {
      torch::Tensor t;
      if (archive.try_read(item.key(), t, /*is_buffer=*/true)) item.value().copy_(t);
    }
  } catch (const c10::Error& e) {
    return absl::DataLossError(
        absl::StrCat(path, ": cannot read the model: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

}  // namespace gmlp::pretrain
