// Anchor for the precompiled <torch/torch.h> (see gmlp_use_torch_pch), and the check that the
// LibTorch headers the compiler finds belong to the LibTorch that CMake configured (with
// Debian's libtorch-dev installed, its 1.13 headers sit in /usr/include behind any other).
#include <torch/version.h>

#if defined(GMLP_TORCH_MAJOR) && \
    (TORCH_VERSION_MAJOR != GMLP_TORCH_MAJOR || TORCH_VERSION_MINOR != GMLP_TORCH_MINOR)
#error \
    "torch/version.h is not from the LibTorch CMake configured: check CMAKE_PREFIX_PATH and include order"
#endif
