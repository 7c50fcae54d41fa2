# Settings for a CUDA LibTorch (the official wheel or zip, 2.x): NCCL, include paths the wheel
# does not set itself, and a RUNPATH that works both on a GPU machine and on a CPU-only one.
# Included by the top-level CMakeLists.txt after find_package(Torch) found torch_cuda.

# ProcessGroupNCCL.hpp declares nothing unless USE_C10D_NCCL is defined, and it includes
# <nccl.h>, which is not in torch/include: the wheel keeps the matching one in
# site-packages/nvidia/nccl/include (a LibTorch zip, or a system NCCL, elsewhere).
get_filename_component(GMLP_TORCH_ROOT "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
find_path(GMLP_NCCL_INCLUDE_DIR nccl.h
  HINTS "${GMLP_TORCH_ROOT}/../nvidia/nccl/include" ENV NCCL_INCLUDE_DIR
  PATHS "${CUDAToolkit_INCLUDE_DIRS}" /usr/include
  NO_CMAKE_SYSTEM_PATH)
if(NOT GMLP_NCCL_INCLUDE_DIR)
  message(FATAL_ERROR "gmlp: nccl.h not found: a CUDA LibTorch needs NCCL's headers (the torch "
          "wheel ships them in site-packages/nvidia/nccl/include; set NCCL_INCLUDE_DIR)")
endif()
target_compile_definitions(gmlp_torch INTERFACE GMLP_WITH_CUDA=1 USE_C10D_NCCL=1)
target_include_directories(gmlp_torch SYSTEM INTERFACE "${GMLP_NCCL_INCLUDE_DIR}")

# CUDA 13 moved Thrust/CUB/libcu++ under include/cccl; CMake < 3.31 does not add it.
foreach(dir ${CUDAToolkit_INCLUDE_DIRS})
  if(EXISTS "${dir}/cccl")
    target_include_directories(gmlp_torch SYSTEM INTERFACE "${dir}/cccl")
  endif()
endforeach()

# Torch's CMake links CUDA::cuda_driver, which on a machine without a driver (a build or CI
# machine) is the toolkit's lib64/stubs/libcuda.so. Linked as needed it drops out (gmlp calls no
# driver API; libtorch_cuda loads the driver itself), and the build RUNPATH is written by hand so
# no `stubs` directory reaches it: on a GPU machine a stub found first would shadow the driver.
add_link_options(LINKER:--as-needed)
set(CMAKE_SKIP_BUILD_RPATH ON)
add_link_options("LINKER:-rpath,${GMLP_TORCH_ROOT}/lib")
message(STATUS "gmlp: NCCL headers ${GMLP_NCCL_INCLUDE_DIR}; RUNPATH ${GMLP_TORCH_ROOT}/lib")
