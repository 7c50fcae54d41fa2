#include "pretrain/dist.h"

#include <torch/version.h>

#include <cstdlib>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef GMLP_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pretrain/agent_store.h"

namespace gmlp::pretrain {
namespace {

// The class that implements collectives. LibTorch 2.x made ProcessGroupGloo and
// ProcessGroupNCCL subclasses of c10d::Backend (ProcessGroup became a dispatcher over backends);
// in 1.13 they are ProcessGroups. Both declare the allreduce/broadcast/barrier used here.
#if TORCH_VERSION_MAJOR >= 2
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

// Reads an integer environment variable; `*found` tells whether it was set.
absl::StatusOr<int> EnvInt(const char* name, bool* found) {
  const char* v = std::getenv(name);
  *found = v != nullptr && *v != '\0';
  if (!*found) return 0;
  int out = 0;
  if (!absl::SimpleAtoi(v, &out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable ", name, "=\"", v, "\" is not an integer"));
  }
  return out;
}

class SingleProcess : public Dist {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void Broadcast(std::vector<torch::Tensor>&, int) override {}
  std::unique_ptr<PendingCollective> AllreduceSumAsync(torch::Tensor) override {
    struct Done : PendingCollective {
      void Wait() override {}
    };
    return std::make_unique<Done>();
  }
  void Barrier() override {}
};

class C10dWork : public PendingCollective {
 public:
  C10dWork(c10::intrusive_ptr<c10d::Work> work, torch::Tensor keep_alive)
      : work_(std::move(work)), tensor_(std::move(keep_alive)) {}
  void Wait() override { work_->wait(); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  torch::Tensor tensor_;
};

class C10dGroup : public Dist {
 public:
  C10dGroup(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<CollectiveGroup> group,
            int rank, int world_size)
      : store_(std::move(store)), group_(std::move(group)), rank_(rank), world_size_(world_size) {}
  ~C10dGroup() override {
#if TORCH_VERSION_MAJOR >= 2
    // NCCL (2.4+) warns at exit about a group destroyed without shutdown; Gloo's is a no-op.
    try {
      group_->shutdown();
    } catch (const std::exception&) {
      // A group whose peer died cannot shut down cleanly; the process is ending anyway.
    }
#endif
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  void Broadcast(std::vector<torch::Tensor>& tensors, int root) override {
    c10d::BroadcastOptions options;
    options.rootRank = root;
    for (torch::Tensor& t : tensors) {
      std::vector<torch::Tensor> one{t};
      group_->broadcast(one, options)->wait();
    }
  }

  std::unique_ptr<PendingCollective> AllreduceSumAsync(torch::Tensor tensor) override {
    std::vector<torch::Tensor> one{tensor};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    return std::make_unique<C10dWork>(group_->allreduce(one, options), std::move(tensor));
  }

  void Barrier() override { group_->barrier()->wait(); }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<CollectiveGroup> group_;
  int rank_;
  int world_size_;
};

c10::intrusive_ptr<CollectiveGroup> MakeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int world_size,
                                                  std::chrono::milliseconds timeout,
                                                  const std::string& master_addr) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  // As torch.distributed: GLOO_SOCKET_IFNAME picks the interface; a loopback master means a
  // single-machine job, where loopback is always right; otherwise the hostname's address.
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname != nullptr && *ifname != '\0') {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else if (master_addr == "127.0.0.1" || master_addr == "localhost") {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
}

#ifdef GMLP_WITH_CUDA
// An NCCL group on the current CUDA device.
c10::intrusive_ptr<CollectiveGroup> MakeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int world_size,
                                                  std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
}
#endif

// The store the process group rendezvouses in. Rank 0 serves a fresh TCPStore unless a launcher
// agent hosts one (torchrun). An agent's store outlives its workers: when torchrun restarts the
// group, the keys of the earlier attempt are still there, and Gloo would read a dead rank's
// address from them. Each rank therefore counts itself in (`add` is atomic) and the group works
// under "gmlp/<attempt>/", attempt = (ranks counted before it) / world size: the same number on
// every rank of one attempt however the launcher numbers its restarts (torchrun's
// TORCHELASTIC_RESTART_COUNT differs between nodes when only one of them failed).
c10::intrusive_ptr<c10d::Store> ConnectStore(const DistEnv& env,
                                             std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(env.master_port);
  options.timeout = timeout;
  if (!env.agent_store) {
    options.isServer = env.rank == 0;
    options.numWorkers = env.world_size;
    options.waitWorkers = true;
    return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  }
#if TORCH_VERSION_MAJOR >= 2
  options.isServer = false;
  options.waitWorkers = false;
  c10::intrusive_ptr<c10d::Store> agent =
      c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
#else
  // LibTorch 1.x's TCPStore cannot speak torch 2's protocol.
  c10::intrusive_ptr<c10d::Store> agent =
      ConnectAgentStore(env.master_addr, env.master_port, timeout);
#endif
  // The agent's store outlives a group that --max-restarts restarts: each attempt works under a
  // prefix of its own, so no rank reads the keys of the attempt before.
  const int64_t before = agent->add("gmlp/ranks_joined", 1) - 1;
  return c10::make_intrusive<c10d::PrefixStore>(absl::StrCat("gmlp/", before / env.world_size),
                                                agent);
}

}  // namespace

absl::StatusOr<DistEnv> DistEnvFromEnvironment() {
  DistEnv env;
  bool has_rank = false, has_world = false, has_local = false, found = false;
  auto rank = EnvInt("RANK", &has_rank);
  if (!rank.ok()) return rank.status();
  auto world = EnvInt("WORLD_SIZE", &has_world);
  if (!world.ok()) return world.status();
  auto local = EnvInt("LOCAL_RANK", &has_local);
  if (!local.ok()) return local.status();
  const char* source = "RANK/WORLD_SIZE";
  if (!has_rank && !has_world) {
    rank = EnvInt("SLURM_PROCID", &has_rank);
    if (!rank.ok()) return rank.status();
    world = EnvInt("SLURM_NTASKS", &has_world);
    if (!world.ok()) return world.status();
    local = EnvInt("SLURM_LOCALID", &has_local);
    if (!local.ok()) return local.status();
    source = "SLURM_PROCID/SLURM_NTASKS";
  }
  if (has_rank != has_world) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": set both or neither (a launcher such as torchrun or srun sets both)"));
  }
  if (!has_world) return env;
  env.rank = *rank;
  env.world_size = *world;
  env.local_rank = has_local ? *local : *rank;
  if (env.world_size < 1 || env.rank < 0 || env.rank >= env.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": rank ", env.rank, " is not in [0, world size ", env.world_size, ")"));
  }
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') {
    env.master_addr = addr;
  }
  auto port = EnvInt("MASTER_PORT", &found);
  if (!port.ok()) return port.status();
  if (found) env.master_port = *port;
  if (const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE"); agent != nullptr) {
    env.agent_store = std::string(agent) == "True";  // as torch.distributed.rendezvous reads it
  }
  if (env.master_port <= 0 || env.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_PORT=", env.master_port, " is not a TCP port (1..65535)"));
  }
  return env;
}

absl::StatusOr<std::unique_ptr<Dist>> Dist::Connect(const DistEnv& env,
                                                    std::chrono::milliseconds timeout) {
  if (env.world_size == 1) return std::unique_ptr<Dist>(new SingleProcess());
  try {
    c10::intrusive_ptr<c10d::Store> store = ConnectStore(env, timeout);
#ifdef GMLP_WITH_CUDA
    if (torch::cuda::is_available()) {
      // NCCL works on the current device: the one this rank trains on (TrainingDevice).
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(
          env.local_rank % static_cast<int>(torch::cuda::device_count())));
      auto group = MakeNcclGroup(store, env.rank, env.world_size, timeout);
      return std::unique_ptr<Dist>(new C10dGroup(store, group, env.rank, env.world_size));
    }
#endif
    auto group = MakeGlooGroup(store, env.rank, env.world_size, timeout, env.master_addr);
    return std::unique_ptr<Dist>(new C10dGroup(store, group, env.rank, env.world_size));
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("rank ", env.rank, " of ", env.world_size, ": rendezvous at ", env.master_addr,
                     ":", env.master_port, " failed: ", e.what(),
                     "; check MASTER_ADDR/MASTER_PORT and that every rank was started"));
  }
}

std::unique_ptr<Dist> Dist::FromStore(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                      int world_size, std::chrono::milliseconds timeout,
                                      Backend backend) {
  if (backend == Backend::kNccl) {
#ifdef GMLP_WITH_CUDA
    return std::make_unique<C10dGroup>(store, MakeNcclGroup(store, rank, world_size, timeout), rank,
                                       world_size);
#else
    TORCH_CHECK(false, "NCCL needs a gmlp built against a CUDA LibTorch (scripts/setup.sh --cuda)");
#endif
  }
  auto group = MakeGlooGroup(store, rank, world_size, timeout, "127.0.0.1");
  return std::make_unique<C10dGroup>(store, group, rank, world_size);
}

c10::intrusive_ptr<c10d::Store> Dist::MakeHashStore() {
  return c10::make_intrusive<c10d::HashStore>();
}

}  // namespace gmlp::pretrain
