// Anchor for the precompiled <torch/torch.h> (see gmlp_use_torch_pch), and the check that the
// LibTorch headers the compiler finds belong to the LibTorch that CMake configured (with
// Debian's libtorch-dev installed, its 1.13 headers sit in /usr/include behind any other).
#include <ATen/Config.h>
#include <torch/version.h>

#if defined(GMLP_TORCH_MAJOR) && \
    (TORCH_VERSION_MAJOR != GMLP_TORCH_MAJOR || TORCH_VERSION_MINOR != GMLP_TORCH_MINOR)
#error \
    "torch/version.h is not from the LibTorch CMake configured: check CMAKE_PREFIX_PATH and include order"
#endif

// gmlp compiles with OpenMP so that at::parallel_for runs its kernels on LibTorch's threads;
// that holds only when LibTorch's own parallel backend is OpenMP.
#if !AT_PARALLEL_OPENMP || !defined(_OPENMP)
#error "gmlp expects a LibTorch built with OpenMP (AT_PARALLEL_OPENMP) and compiles with it"
#endif
