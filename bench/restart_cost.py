#!/usr/bin/env python3
"""What a restart costs: seconds from a rank's death (SIGKILL) or a preemption (SIGTERM) to the
first training step of the resumed run, for `gmlp pretrain --nproc=2 --max_restarts=1` and torch
2.11's `torchrun --max-restarts=1` (restarts by the launcher), and for a SIGTERM followed by the
same command run again (the job script's or scheduler's restart). The same tiny run each time, on
shards of Moby-Dick made here; the step counter in metrics.jsonl tells when training resumed.

  python3 bench/restart_cost.py [--build build] [--preset gmlp-tiny] [--rounds 3]

Prints one line per round and the median and range of each phase. Standard library only.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOBY = os.path.join(ROOT, "..", "shared", "data", "corpus", "moby-dick", "moby_dick.txt")
TORCHRUN = os.path.join(os.environ.get("GMLP_TORCH_VENV", "/var/cache/gmlp/torch-2.11.0"),
                        "bin", "torchrun")


def last_step(out):
    try:
        with open(os.path.join(out, "metrics.jsonl")) as f:
            steps = [json.loads(line).get("step", 0) for line in f if line.strip()]
        return max(steps, default=0)
    except (OSError, ValueError):
        return 0


def wait_for(predicate, proc, timeout=300):
    """The time at which predicate() became true; an error when proc exits first."""
    start = time.monotonic()
    while not predicate():
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} while waited for")
        if time.monotonic() - start > timeout:
            raise TimeoutError("timed out")
        time.sleep(0.005)
    return time.monotonic()


def children_with_env(root_pid, var):
    """PIDs below root_pid (two levels) whose environment holds var."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{ppid}/stat") as f:
                gppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, IndexError, ValueError):
            continue
        if root_pid in (ppid, gppid) and var.encode() in env and b"gmlp" in cmd:
            found.append(int(pid))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--preset", default="gmlp-tiny")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    gmlp = os.path.join(args.build, "gmlp")
    work = tempfile.mkdtemp(prefix="gmlp_restart_cost_")
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([gmlp, "tokenizer", "train", f"--input={MOBY}", f"--model_prefix={work}/spm",
                    "--vocab_size=1000"], check=True, **quiet)
    subprocess.run([gmlp, "prepare", f"--input={MOBY}", f"--tokenizer={work}/spm.model",
                    f"--output={work}/shards", "--seq_len=128", "--workers=2"], check=True, **quiet)
    common = [f"--shard_dir={work}/shards", f"--preset={args.preset}", "--steps=100000",
              "--micro_batch=8", "--global_batch=16", "--warmup_steps=10", "--log_every=1",
              "--eval_every=0", "--checkpoint_every=20", "--peak_gflops=100", "--threads=1"]
    ckpt_step = 20
    results = {}

    def record(name, seconds):
        results.setdefault(name, []).append(seconds)
        print(f"{name}: {seconds:.2f} s", flush=True)

    launchers = {"nproc": lambda out: [gmlp, "pretrain", "--nproc=2", "--max_restarts=1",
                                       f"--out_dir={out}"] + common}
    if os.path.exists(TORCHRUN):
        launchers["torchrun"] = lambda out: [TORCHRUN, "--nproc_per_node=2", "--max-restarts=1",
                                             "--no_python", gmlp, "pretrain",
                                             f"--out_dir={out}"] + common
    else:
        print(f"no {TORCHRUN}: torchrun not measured", file=sys.stderr)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        measure(args, launchers, env, quiet, work, ckpt_step, record)
    finally:
        subprocess.run(["rm", "-rf", work])
    print(f"\n{args.preset}, {args.rounds} rounds: median [min, max] seconds")
    for name, values in results.items():
        print(f"  {name}: {statistics.median(values):.2f} [{min(values):.2f}, {max(values):.2f}]")


def measure(args, launchers, env, quiet, work, ckpt_step, record):
    for r in range(args.rounds):
        for name, command in launchers.items():
            # A rank SIGKILLed after the checkpoint of step 20: the launcher restarts the group.
            out = os.path.join(work, f"{name}_kill_{r}")
            p = subprocess.Popen(command(out), env=env, **quiet)
            wait_for(lambda: last_step(out) >= ckpt_step + 5, p)
            ranks = children_with_env(p.pid, "RANK=1")
            killed = time.monotonic()
            os.kill(ranks[0], signal.SIGKILL)
            # The resumed group truncates metrics.jsonl to step 20 and logs step 21 again.
            wait_for(lambda: last_step(out) <= ckpt_step, p)
            resumed = wait_for(lambda: last_step(out) > ckpt_step, p)
            record(f"{name}: SIGKILL of a rank -> first resumed step", resumed - killed)
            p.send_signal(signal.SIGTERM)
            p.wait()
            # SIGTERM: the ranks stop together with a checkpoint; the same command again.
            out = os.path.join(work, f"{name}_term_{r}")
            p = subprocess.Popen(command(out), env=env, **quiet)
            wait_for(lambda: last_step(out) >= ckpt_step + 5, p)
            termed = time.monotonic()
            p.send_signal(signal.SIGTERM)
            p.wait()
            stopped_at = last_step(out)
            exited = time.monotonic()
            record(f"{name}: SIGTERM -> all ranks exited with a checkpoint", exited - termed)
            p = subprocess.Popen(command(out), env=env, **quiet)
            started = time.monotonic()
            resumed = wait_for(lambda: last_step(out) > stopped_at, p)
            record(f"{name}: same command again -> first resumed step", resumed - started)
            p.send_signal(signal.SIGTERM)
            p.wait()


if __name__ == "__main__":
    main()
