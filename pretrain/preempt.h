// Preemption: SIGTERM (what Slurm, Kubernetes and cloud preemption send first, and what torchrun
// forwards to its workers) or SIGUSR1 (Slurm's `--signal=USR1@N` warning) asks the run to stop.
// The handler only sets a flag. The trainer folds it into the per-step collective that every
// rank already runs, so all ranks see the request at the same step, finish it, write one
// checkpoint together and exit with kExitPreempted; the same command then resumes.
#ifndef GMLP_PRETRAIN_PREEMPT_H_
#define GMLP_PRETRAIN_PREEMPT_H_

#include <csignal>
#include <initializer_list>

namespace gmlp::pretrain {

// EX_TEMPFAIL (sysexits.h): "temporary failure; the user is invited to retry". A preempted run
// that wrote its checkpoint exits with it, so a job script can tell it from a failure (1).
inline constexpr int kExitPreempted = 75;

// Installs the handler for `signals` (SA_RESTART: blocking calls carry on). Idempotent. The
// `--nproc` launcher also takes SIGINT, to pass it on to its ranks.
void InstallStopSignalHandlers(std::initializer_list<int> signals = {SIGTERM, SIGUSR1});

// The first signal that asked this process to stop, or 0 when none did.
int StopSignal();

// Tests: as if `signal` had arrived (0 clears).
void SetStopSignalForTesting(int signal);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_PREEMPT_H_
