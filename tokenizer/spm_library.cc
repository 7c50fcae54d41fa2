#include "tokenizer/spm_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"

#ifndef GMLP_SPM_SHIM_BUILD_PATH
#define GMLP_SPM_SHIM_BUILD_PATH ""
#endif

namespace gmlp::tokenizer {
namespace {

constexpr char kShimName[] = "libgmlp_spm_shim.so";

template <typename Fn>
absl::Status Resolve(void* handle, const char* name, const std::string& path, Fn* fn) {
  void* sym = ::dlsym(handle, name);
  if (sym == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": the SentencePiece shim lacks ", name,
                                                      "; rebuild the `gmlp_spm_shim` target"));
  }
  *fn = reinterpret_cast<Fn>(sym);
  return absl::OkStatus();
}

absl::StatusOr<const SpmLibrary*> LoadSpmLibrary() {
  std::string path;
  const char* env = std::getenv("GMLP_SPM_SHIM");
  if (env != nullptr && env[0] != '\0' && !PathExists(env)) {
    return absl::NotFoundError(absl::StrCat("GMLP_SPM_SHIM=", env, ": no such file; point it at ",
                                            kShimName, " in the build directory, or unset it"));
  }
  const std::vector<std::string> candidates = SpmShimCandidates();
  for (const std::string& c : candidates) {
    if (PathExists(c)) {
      path = c;
      break;
    }
  }
  if (path.empty()) {
    return absl::NotFoundError(
        absl::StrCat("cannot find the SentencePiece shim ", kShimName,
                     " (looked at: ", absl::StrJoin(candidates, ", "),
                     "); build it with `ninja gmlp_spm_shim` or set GMLP_SPM_SHIM to its path"));
  }
  // A fresh link namespace: SentencePiece's protobuf must not meet LibTorch's.
  void* handle = ::dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": cannot load the SentencePiece shim: ", e != nullptr ? e : "unknown dlmopen error",
        "; check that libsentencepiece0 is installed (apt-get install libsentencepiece0)"));
  }
  // The handle is never closed: the namespace lives as long as the process, and namespaces are
  // few (glibc allows 16), so the shim is loaded exactly once.
  auto* lib = new SpmLibrary;
  lib->path = path;
  int (*abi_version)() = nullptr;
  absl::Status st = Resolve(handle, "gmlp_spm_abi_version", path, &abi_version);
  if (!st.ok()) return st;
  if (abi_version() != GMLP_SPM_SHIM_ABI_VERSION) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": SentencePiece shim ABI version ", abi_version(), ", expected ",
        GMLP_SPM_SHIM_ABI_VERSION, "; rebuild the `gmlp_spm_shim` target with this gmlp"));
  }
  for (absl::Status s : {Resolve(handle, "gmlp_spm_load", path, &lib->load),
                         Resolve(handle, "gmlp_spm_free", path, &lib->free),
                         Resolve(handle, "gmlp_spm_encode", path, &lib->encode),
                         Resolve(handle, "gmlp_spm_decode", path, &lib->decode),
                         Resolve(handle, "gmlp_spm_piece_size", path, &lib->piece_size),
                         Resolve(handle, "gmlp_spm_id_to_piece", path, &lib->id_to_piece),
                         Resolve(handle, "gmlp_spm_piece_type", path, &lib->piece_type),
                         Resolve(handle, "gmlp_spm_load_serialized", path, &lib->load_serialized),
                         Resolve(handle, "gmlp_spm_piece_score", path, &lib->piece_score),
                         Resolve(handle, "gmlp_spm_train", path, &lib->train)}) {
    if (!s.ok()) return s;
  }
  return lib;
}

}  // namespace

std::vector<std::string> SpmShimCandidates() {
  std::vector<std::string> out;
  const char* env = std::getenv("GMLP_SPM_SHIM");
  if (env != nullptr && env[0] != '\0') out.emplace_back(env);
  out.push_back(JoinPath(ExecutableDir(), kShimName));
  const std::string build_path = GMLP_SPM_SHIM_BUILD_PATH;
  if (!build_path.empty() && build_path != out.back()) out.push_back(build_path);
  return out;
}

absl::StatusOr<const SpmLibrary*> GetSpmLibrary() {
  // A function-local static is initialized once, thread-safely; a failure is remembered too.
  static const absl::StatusOr<const SpmLibrary*>* const library =
      new absl::StatusOr<const SpmLibrary*>(LoadSpmLibrary());
  return *library;
}

}  // namespace gmlp::tokenizer
