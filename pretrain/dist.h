// The process group: rendezvous from the launcher's environment and the few collectives the
// trainer uses. Every c10d call of the project lives in dist.cc (Gloo on CPU; NCCL when built
// against a CUDA LibTorch), so a port to another c10d API stays local to that file.
#ifndef GMLP_PRETRAIN_DIST_H_
#define GMLP_PRETRAIN_DIST_H_

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "absl/status/statusor.h"

namespace gmlp::pretrain {

// Where this process sits in the job.
struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // torchrun (PyTorch 2.x) hosts the TCPStore in its agent on MASTER_PORT and says so with
  // TORCHELASTIC_USE_AGENT_STORE=True: every rank is then a client of that store, rank 0 too
  // (a LibTorch 1.x build through agent_store.h, since its own TCPStore speaks an older protocol).
  bool agent_store = false;
};

// Reads RANK/WORLD_SIZE/LOCAL_RANK (torchrun, and `gmlp pretrain --nproc`), else
// SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun), plus MASTER_ADDR/MASTER_PORT and
// TORCHELASTIC_USE_AGENT_STORE; world size 1 when none is set. Malformed or inconsistent values
// are an InvalidArgument naming the variable.
absl::StatusOr<DistEnv> DistEnvFromEnvironment();

// An allreduce in flight.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Blocks until done; throws c10::Error when a peer failed or the timeout passed.
  virtual void Wait() = 0;
};

class Dist {
 public:
  virtual ~Dist() = default;

  // World size 1: a no-op group without sockets. Otherwise a TCPStore rendezvous at
  // master_addr:master_port (rank 0 serves it, or torchrun's agent when env.agent_store) and a
  // group whose collectives fail after
  // `timeout` instead of hanging when a peer dies: NCCL on cuda:(local_rank mod GPUs) when this
  // build has CUDA and sees a GPU, else Gloo (CPU).
  static absl::StatusOr<std::unique_ptr<Dist>> Connect(const DistEnv& env,
                                                       std::chrono::milliseconds timeout);
  enum class Backend { kGloo, kNccl };
  // A group over an existing store (tests run ranks as threads on one c10d::HashStore). kNccl
  // needs a CUDA build (GMLP_WITH_CUDA) and works on the current CUDA device.
  static std::unique_ptr<Dist> FromStore(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                         int world_size, std::chrono::milliseconds timeout,
                                         Backend backend = Backend::kGloo);
  // A fresh in-memory store for FromStore.
  static c10::intrusive_ptr<c10d::Store> MakeHashStore();

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // In place: every rank ends with rank `root`'s values. Throws c10::Error on failure.
  virtual void Broadcast(std::vector<torch::Tensor>& tensors, int root) = 0;
  // In-place SUM over ranks, started now; `tensor` must stay alive until Wait().
  virtual std::unique_ptr<PendingCollective> AllreduceSumAsync(torch::Tensor tensor) = 0;
  void AllreduceSum(torch::Tensor tensor) { AllreduceSumAsync(std::move(tensor))->Wait(); }
  virtual void Barrier() = 0;
};

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_DIST_H_
