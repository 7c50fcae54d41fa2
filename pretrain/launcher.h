// `gmlp pretrain --nproc N`: runs N local ranks of this very command without any launcher.
#ifndef GMLP_PRETRAIN_LAUNCHER_H_
#define GMLP_PRETRAIN_LAUNCHER_H_

namespace gmlp::pretrain {

// True in a process that SpawnLocalRanks started (it must not spawn again).
bool IsSpawnedRank();

// Re-executes this process's command line (/proc/self/cmdline) `nproc` times with RANK,
// LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT set, as torchrun would,
// and waits. When one rank fails (non-zero exit or a signal) the others are terminated (SIGTERM,
// then SIGKILL after a grace period). Children die with this process (PR_SET_PDEATHSIG).
// Returns 0 when every rank succeeded, else 1, after printing which rank failed and how.
int SpawnLocalRanks(int nproc);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_LAUNCHER_H_
