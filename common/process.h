// Process-wide settings every training or benchmark binary applies at start-up.
#ifndef GMLP_COMMON_PROCESS_H_
#define GMLP_COMMON_PROCESS_H_

namespace gmlp {

// Keeps freed buffers (activations, gradients) inside the process instead of returning them to
// the kernel after every step: glibc otherwise serves tensors of 128 KiB and up with fresh
// mmap()s, and each training step pays tens of thousands of page faults. Measured on the 2-core
// CI-class VM: a gmlp-tiny training step took 3.2x longer without this (bench/RESULTS.md).
// Idempotent; call before the first large allocation.
void KeepFreedMemoryInProcess();

}  // namespace gmlp

#endif  // GMLP_COMMON_PROCESS_H_
