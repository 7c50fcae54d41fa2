// `gmlp pretrain --nproc N`: runs N local ranks of this very command without any launcher.
#ifndef GMLP_PRETRAIN_LAUNCHER_H_
#define GMLP_PRETRAIN_LAUNCHER_H_

namespace gmlp::pretrain {

// True in a process that SpawnLocalRanks started (it must not spawn again).
bool IsSpawnedRank();

// Re-executes this process's command line (/proc/self/cmdline) `nproc` times with RANK,
// LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT set, as torchrun would,
// and waits. When one rank fails (a signal, or an exit status other than 0 and kExitPreempted)
// the others are terminated (SIGTERM, then SIGKILL after a grace period) and, while fewer than
// `max_restarts` restarts were made, all ranks start again (they resume from the last
// checkpoint). SIGTERM, SIGUSR1 or SIGINT received here is forwarded to every rank (a preemption:
// they checkpoint and exit). Children die with this process (PR_SET_PDEATHSIG). Returns 0 when
// every rank succeeded, kExitPreempted when they stopped for a preemption, else 1, after
// printing which rank failed and how.
int SpawnLocalRanks(int nproc, int max_restarts = 0);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_LAUNCHER_H_
