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

// The CPUs this process may run on: its affinity mask (taskset, Slurm's CPU binding, a cgroup
// cpuset), not every core of the machine. At least 1.
int AvailableCpus();

// Threads for one process when the user asked for none: AvailableCpus() shared evenly among the
// LOCAL_WORLD_SIZE ranks of this machine (torchrun and `gmlp pretrain --nproc` set it), so N
// local ranks do not each start a thread per core. At least 1.
int DefaultThreadCount();

}  // namespace gmlp

#endif  // GMLP_COMMON_PROCESS_H_
