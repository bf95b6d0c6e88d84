#!/usr/bin/python3
"""Cases recorded by gpualert itself: the run directory of `gpualert run` is the case.

time_limit: gpualert's own --timeout stops real training jobs (one that stops on
SIGTERM, one that traps it and checkpoints, one that ignores it and gets SIGKILL
after --kill-after, a bash launcher, DataLoader workers, a progress-bar job).
host_oom: gpualert runs inside a memory cgroup with a limit, so its own host
evidence (the cgroup oom_kill counter, /dev/kmsg lines) is what the case records.
cancelled: a controller signals gpualert, which forwards to the job.

The binary comes from $GPUALERT_BIN (make-corpus.sh passes it). The run's
output.log, kernel.log and report.json are kept as they were written; case.json
adds the true label.

usage: gen_wrapper.py [--list]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from capture import JOBS, job_env, mem_cgroup_base, workdir

G = "gen_wrapper.py"
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "reproduced")
BIN = os.environ.get("GPUALERT_BIN") or os.path.join(HERE, "..", "..", "build", "gpualert")
LONG = ["python3", "train.py", "--steps", "100000", "--step-sleep", "0.02", "--log-every", "25"]

CASES = [
    # (label, name, gpualert options, command, expectation, notes)
    ("time_limit", "timeout-plain", ["--timeout", "4s"], LONG, "SIGTERM",
     "gpualert --timeout 4s sent SIGTERM to a training loop, which died of it."),
    ("time_limit", "timeout-hf-style", ["--timeout", "5s"], LONG + ["--style", "hf"], "SIGTERM",
     "gpualert --timeout 5s stopped an HF-style training run."),
    ("time_limit", "timeout-checkpoint-handler", ["--timeout", "4s"], LONG + ["--handle-signals"], 143,
     "the job traps SIGTERM, says it saves a checkpoint and exits 143 when gpualert's --timeout fires."),
    ("time_limit", "timeout-ignores-term", ["--timeout", "3s", "--kill-after", "2s"],
     ["python3", "-c", "import signal, time\nsignal.signal(signal.SIGTERM, lambda s, f: print('SIGTERM received, finishing the epoch first', flush=True))\n"
      "for i in range(10**6):\n    time.sleep(0.05)\n    print(f'epoch 0 step {i} loss {1/(i+1):.4f}', flush=True) if i % 10 == 0 else None\n"],
     "SIGKILL", "the job ignores SIGTERM; gpualert escalates to SIGKILL after --kill-after 2s."),
    ("time_limit", "timeout-bash-launcher", ["--timeout", "4s"],
     ["bash", "-c", "echo launching trainer; python3 train.py --steps 100000 --step-sleep 0.02 --log-every 25 --style logging"],
     "SIGTERM", "a bash launcher running the trainer; gpualert's SIGTERM reaches the whole process group."),
    ("time_limit", "timeout-dataloader-workers", ["--timeout", "6s"], LONG + ["--workers", "2"], "SIGTERM",
     "a training loop with 2 DataLoader workers stopped by gpualert --timeout."),
    ("time_limit", "timeout-progress-bar", ["--timeout", "4s"], LONG + ["--style", "bar", "--log-every", "5"], "SIGTERM",
     "a \\r progress-bar job stopped by gpualert --timeout."),
    ("time_limit", "timeout-eval-phase", ["--timeout", "3s"],
     ["python3", "-c", "import time\nprint('training done, starting evaluation', flush=True)\n"
      "for i in range(10**6):\n    time.sleep(0.1)\n    print(f'eval batch {i}/5000 acc 0.{i%100:02d}', flush=True)\n"],
     "SIGTERM", "a long evaluation phase stopped by gpualert --timeout."),
    ("cancelled", "wrapper-sigint", [], LONG, ("send", signal.SIGINT),
     "SIGINT sent to gpualert (kill -INT), forwarded once to the job: KeyboardInterrupt."),
    ("cancelled", "wrapper-sigterm", [], LONG, ("send", signal.SIGTERM),
     "kill <gpualert pid>: SIGTERM forwarded to the job, which died of it."),
    ("host_oom", "wrapper-in-memcg", [], ["python3", "grow.py"], ("memcg", "160M"),
     "gpualert and the job run in a memory cgroup limited to 160 MiB; the kernel OOM killer kills the growing job; the cgroup counter and /dev/kmsg are gpualert's own evidence."),
]


def list_cases():
    for label, name, *_ in CASES:
        print(f"{label}/wrapper-{name}" if not name.startswith("wrapper-") else f"{label}/{name}")


def case_dir_name(name):
    return name if name.startswith("wrapper-") else "wrapper-" + name


def run_one(label, name, opts, cmd, expect, notes):
    work = workdir("wrapper-" + name, files=("train.py", "grow.py"))
    logs = tempfile.mkdtemp(prefix="gpualert-wrapper-logs-")
    env = job_env()
    env.update(GPUALERT_STATE_DIR=os.path.join(logs, "state"), XDG_CONFIG_HOME=os.path.join(logs, "cfg"))
    argv = [BIN, "run", "-q", "--notify", "never", "--log-dir", logs, "--name", name, *opts, "--", *cmd]
    cg = None
    preexec = None
    if isinstance(expect, tuple) and expect[0] == "memcg":
        base = mem_cgroup_base()
        if base is None:
            print(f"  MISS {label}/{name}: no memory cgroup")
            return False
        cg = os.path.join(base, "gpualert-wrapper-" + name)
        os.makedirs(cg, exist_ok=True)
        with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
            f.write(expect[1])

        def preexec():
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
    proc = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=preexec)
    if isinstance(expect, tuple) and expect[0] == "send":
        time.sleep(4)
        proc.send_signal(expect[1])
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    if cg:
        for _ in range(50):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)
    runs = [d for d in os.listdir(logs) if d.startswith(name + "-")]
    ok = len(runs) == 1
    if ok:
        run = os.path.join(logs, runs[0])
        rep = json.load(open(os.path.join(run, "report.json")))
        want = expect[1] if isinstance(expect, tuple) and expect[0] == "send" else expect
        if isinstance(want, signal.Signals):
            ok = rep["signal"] == want.name
        elif isinstance(want, int):
            ok = rep["exit_code"] == want
        elif isinstance(want, str) and want.startswith("SIG"):
            ok = rep["signal"] == want
        elif isinstance(expect, tuple) and expect[0] == "memcg":
            ok = rep["signal"] == "SIGKILL"
        else:
            ok = False
    if not ok:
        print(f"  MISS {label}/{name}: gpualert exited {rc}")
        shutil.rmtree(logs, ignore_errors=True)
        return False
    dest = os.path.join(OUT, label, case_dir_name(name))
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    for f in ("output.log", "kernel.log", "report.json"):
        if os.path.exists(os.path.join(run, f)):
            shutil.copy(os.path.join(run, f), os.path.join(dest, f))
    case = {"label": label, "exit_code": rep["exit_code"], "signal": rep["signal"], "source": "reproduced-cpu",
            "notes": notes + " Recorded by `gpualert run` itself (this directory is its run directory).",
            "generator": G, "produced": time.strftime("%Y-%m-%d"), "duration_s": round(rep["duration_s"], 1)}
    with open(os.path.join(dest, "case.json"), "w") as f:
        json.dump(case, f, indent=2)
        f.write("\n")
    shutil.rmtree(logs, ignore_errors=True)
    print(f"  ok   {label}/{case_dir_name(name)}")
    return True


def main():
    if "--list" in sys.argv:
        list_cases()
        return 0
    if not os.access(BIN, os.X_OK):
        print(f"{G}: gpualert binary not found at {BIN} (set GPUALERT_BIN)")
        return 1
    t0 = time.time()
    results = [run_one(*c) for c in CASES]
    print(f"{G}: {sum(results)} written, {len(results) - sum(results)} missed in {time.time() - t0:.0f}s")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
