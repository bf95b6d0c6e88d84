#!/usr/bin/python3
"""Cases produced through a real single-node Slurm (slurm-wlm 22.05 + munge).

Starts a private munged and slurmctld/slurmd (own ports, own state/spool/log
directories under the temp dir, SLURM_CONF pointing at a generated
slurm.conf), submits all jobs at once so that the whole-minute time limits
run in parallel, and stops every daemon at the end.

* time_limit: `--time=1` jobs (banner "*** JOB N ON host CANCELLED AT ... DUE
  TO TIME LIMIT ***"), batch scripts and srun steps;
* cancelled: scancel of running jobs (banner without "DUE TO");
* host_oom: `--mem` exceeded, killed by slurmstepd's OverMemoryKill;
* a few ordinary outcomes under Slurm (srun task errors, tracebacks, success).

For sbatch jobs output.log is the job's output file (stdout+stderr merged by
slurmstepd, which is what the user sees); exit_code/signal come from
`scontrol show job` (ExitCode=code:signal).  srun cases run in the
foreground under capture.py like every other case.
"""
import os
import re
import signal
import sys
import tempfile
import threading
import time

from capture import Case, Result, job_env, workdir, neutral_dir, write_case, run_case, RUN_ROOT

G = "gen_slurm.py"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "helpers"))
from slurm_node import SlurmNode  # noqa: E402  (the same private Slurm the tests start)

NODE = SlurmNode(os.path.join(tempfile.gettempdir(), "gpualert-slurm"))
CONF = NODE.conf
sh = NODE.sh
start = NODE.start
stop = NODE.stop




# --------------------------------------------------------------------------

class Job:
    def __init__(self, name, label, script, notes, sbatch_args=(), files=("train.py",),
                 cancel_after=None, expect_re=None, expect_state=None):
        self.name, self.label, self.script, self.notes = name, label, script, notes
        self.sbatch_args = list(sbatch_args)
        self.files = files
        self.cancel_after = cancel_after  # regex in the output file, or seconds
        self.expect_re = expect_re
        self.expect_state = expect_state
        self.jobid = None
        self.t0 = None


JOBS = []
TRAIN_LONG = "python3 -u train.py --steps 100000 --step-sleep 0.05 --log-every 40"


def job(*a, **k):
    JOBS.append(Job(*a, **k))


TL = r"CANCELLED AT \S+ DUE TO TIME LIMIT"
job("sbatch-train-unbuffered", "time_limit", "#!/bin/bash\n#SBATCH --time=1\n" + TRAIN_LONG + "\n",
    "sbatch --time=1; python -u training loop killed at the time limit.", expect_re=TL, expect_state="TIMEOUT")
job("sbatch-train-buffered", "time_limit", "#!/bin/bash\n#SBATCH --time=1\n#SBATCH --job-name=pretrain\necho \"SLURM_JOB_ID=$SLURM_JOB_ID on $(hostname)\"\npython3 train.py --steps 100000 --step-sleep 0.05 --log-every 40\n",
    "buffered python stdout: most of the progress never reaches the file; only the banner tells why.", expect_re=TL, expect_state="TIMEOUT")
job("sbatch-srun-step", "time_limit", "#!/bin/bash\n#SBATCH --time=1\n#SBATCH --ntasks=1\nsrun python3 -u train.py --steps 100000 --step-sleep 0.05 --log-every 40 --style logging\n",
    "training runs as an srun step inside the batch job; STEP and JOB banners, srun follow-on messages.", expect_re=r"DUE TO TIME LIMIT", expect_state="TIMEOUT")
job("sbatch-sigterm-handler", "time_limit", "#!/bin/bash\n#SBATCH --time=1\n" + TRAIN_LONG + " --handle-signals\n",
    "the trainer traps SIGTERM and prints that it checkpoints before exiting (exit 143).", expect_re=TL, expect_state="TIMEOUT")
job("sbatch-loader-workers", "time_limit", "#!/bin/bash\n#SBATCH --time=1\n#SBATCH --cpus-per-task=2\n#SBATCH --mem=2500M\npython3 -u train.py --steps 100000 --step-sleep 0.05 --log-every 40 --workers 2 --style hf\n",
    "HF-style run with 2 DataLoader workers; all processes get SIGTERM at the limit.", expect_re=TL, expect_state="TIMEOUT")
job("sbatch-progress-bar", "time_limit", "#!/bin/bash\n#SBATCH --time=1\npython3 -u train.py --steps 100000 --step-sleep 0.05 --log-every 1 --style bar\n",
    "\\r progress bar; the banner lands in the middle of the bar line.", expect_re=TL, expect_state="TIMEOUT")
job("sbatch-bash-loop", "time_limit", "#!/bin/bash\n#SBATCH --time=1\nfor epoch in $(seq 1 1000); do\n  echo \"epoch $epoch: preprocessing shard $epoch\"\n  sleep 2\ndone\n",
    "a bash preprocessing loop with sleep; killed at the time limit.", expect_re=TL, expect_state="TIMEOUT")
job("sbatch-ddp-2ranks", "time_limit",
    "#!/bin/bash\n#SBATCH --time=1\n#SBATCH --ntasks=2\nexport MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29000 + SLURM_JOB_ID)) WORLD_SIZE=2\n"
    "srun --kill-on-bad-exit=1 bash -c 'RANK=$SLURM_PROCID python3 -u ddp.py --steps 1000000 --timeout 60 --step-sleep 0.02'\n",
    "2 gloo ranks as srun tasks; the whole step is killed at the time limit.", files=("ddp.py",), expect_re=r"DUE TO TIME LIMIT", expect_state="TIMEOUT")
job("sbatch-torchrun", "time_limit",
    "#!/bin/bash\n#SBATCH --time=1\n#SBATCH --cpus-per-task=2\n#SBATCH --mem=2500M\ntorchrun --nproc_per_node 2 --master_port $((28000 + SLURM_JOB_ID)) --redirects 2 --tee 2 --log_dir torchrun_logs ddp.py --steps 1000000 --timeout 60 --step-sleep 0.02\n",
    "torchrun inside the batch job: SIGTERM reaches torchrun and the ranks at the limit.", files=("ddp.py",), expect_re=TL, expect_state="TIMEOUT")
job("sbatch-time-2min-sleep", "time_limit", "#!/bin/bash\n#SBATCH --time=0:01:00\n#SBATCH --output=train-%j.log\necho started; python3 -c 'import time\nwhile True: time.sleep(1)'\n",
    "a job that hangs silently (sleep loop) until the time limit; --output=train-%j.log.", expect_re=TL, expect_state="TIMEOUT")

CA = r"CANCELLED AT \S+ \*\*\*"
job("scancel-train", "cancelled", "#!/bin/bash\n" + TRAIN_LONG + "\n",
    "the user ran scancel on the running job.", cancel_after=r"step 120 loss", expect_re=CA, expect_state="CANCELLED")
job("scancel-srun-step", "cancelled", "#!/bin/bash\nsrun python3 -u train.py --steps 100000 --step-sleep 0.05 --log-every 40 --style logging\n",
    "scancel while an srun step runs.", cancel_after=r"step 120 loss", expect_re=r"CANCELLED AT", expect_state="CANCELLED")
job("scancel-handler", "cancelled", "#!/bin/bash\n" + TRAIN_LONG + " --handle-signals\n",
    "scancel; the trainer traps SIGTERM and exits 143 after its message.", cancel_after=r"step 120 loss", expect_re=CA, expect_state="CANCELLED")
job("scancel-torchrun", "cancelled",
    "#!/bin/bash\n#SBATCH --mem=2500M\ntorchrun --nproc_per_node 2 --master_port $((27000 + SLURM_JOB_ID)) --redirects 2 --tee 2 --log_dir torchrun_logs ddp.py --steps 1000000 --timeout 60 --step-sleep 0.02\n",
    "scancel of a torchrun job.", files=("ddp.py",), cancel_after=r"step 100 loss", expect_re=CA, expect_state="CANCELLED")
job("scancel-pending-deps", "cancelled", "#!/bin/bash\necho 'stage 1: tokenize'\nsleep 600\n",
    "scancel of a job that only slept.", cancel_after=8.0, expect_re=CA, expect_state="CANCELLED")

job("mem-limit-exceeded", "host_oom", "#!/bin/bash\n#SBATCH --mem=300M\npython3 -u train.py --steps 4000 --cache-mb-per-step 8 --log-every 5\n",
    "--mem=300M; the trainer caches 8 MB per step; slurmstepd's OverMemoryKill (jobacct_gather) kills the step: 'exceeded memory limit ... being killed'.",
    expect_re=r"exceeded memory limit|Exceeded job memory limit", expect_state=None)
job("mem-limit-exceeded-srun", "host_oom", "#!/bin/bash\n#SBATCH --mem=400M\nsrun python3 load_all.py 64 16 numpy\n",
    "--mem=400M, srun step loading a dataset into RAM; killed by Slurm's memory enforcement.", files=("load_all.py",),
    expect_re=r"exceeded memory limit|Exceeded job memory limit", expect_state=None)
job("srun-task-exit-3", "unknown", "#!/bin/bash\n#SBATCH --ntasks=2\nsrun bash -c 'if [ $SLURM_PROCID = 1 ]; then sleep 1; exit 3; fi; sleep 2'\n",
    "srun -n 2; task 1 exits 3 without output: only 'srun: error: ...: task 1: Exited with exit code 3'.",
    files=(), expect_re=r"Exited with exit code 3", expect_state="FAILED")
job("srun-task-segfault", "native_crash", "#!/bin/bash\n#SBATCH --ntasks=2\nsrun python3 -c 'import os, ctypes, time\nif os.environ[\"SLURM_PROCID\"] == \"1\": ctypes.string_at(0)\ntime.sleep(2)'\n",
    "srun -n 2; task 1 segfaults in ctypes: 'srun: error: ...: task 1: Segmentation fault'.",
    files=(), expect_re=r"Segmentation fault", expect_state="FAILED")
job("srun-kill-on-bad-exit-traceback", "script_error",
    "#!/bin/bash\n#SBATCH --ntasks=2\nsrun --kill-on-bad-exit=1 python3 -c 'import os, time\nif os.environ[\"SLURM_PROCID\"] == \"0\":\n    cfg = {}\n    print(cfg[\"data_dir\"])\ntime.sleep(30)'\n",
    "task 0 raises KeyError; --kill-on-bad-exit terminates task 1.", files=(), expect_re=r"KeyError", expect_state="FAILED")
job("sbatch-traceback", "script_error", "#!/bin/bash\n#SBATCH --job-name=finetune\npython3 train.py --data /datasets/missing.npz\n",
    "batch job whose trainer cannot find its dataset.", expect_re=r"FileNotFoundError|No such file", expect_state="FAILED")
job("sbatch-success", "success", "#!/bin/bash\n#SBATCH --job-name=smoke\npython3 train.py --steps 20 --style hf\n",
    "a short batch job that completes.", expect_state="COMPLETED")
job("srun-success-2tasks", "success", "#!/bin/bash\n#SBATCH --ntasks=2\nsrun bash -c 'echo \"task $SLURM_PROCID of $SLURM_NTASKS on $(hostname)\"; python3 -c \"import torch; print(torch.ones(3).sum())\"'\n",
    "two srun tasks that finish.", files=(), expect_state="COMPLETED")


def job_info(jobid):
    out = sh(["scontrol", "show", "job", str(jobid)]).stdout
    d = {}
    for tok in out.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            d.setdefault(k, v)
    return d


def submit(j):
    w = workdir(neutral_dir(j.label, j.name), j.files)
    j.dir = w
    with open(os.path.join(w, "job.sh"), "w") as f:
        f.write(j.script)
    args = ["sbatch", "--parsable", "--chdir", w] + j.sbatch_args
    if "--output" not in j.script:
        args += ["--output", os.path.join(w, "slurm-%j.out")]
    env = job_env({"SLURM_CONF": CONF})
    r = sh(args + ["job.sh"], env=env)
    if r.returncode:
        print("MISS %-22s %-34s sbatch failed: %s" % (j.label, j.name, r.stderr.strip()), flush=True)
        return
    j.jobid = int(r.stdout.strip().split(";")[0])
    j.t0 = time.time()


def outfile(j):
    for f in os.listdir(j.dir):
        if f.endswith("%d.out" % j.jobid) or f.endswith("-%d.log" % j.jobid):
            return os.path.join(j.dir, f)
    return None


def finish(j, info):
    ok = []
    of = outfile(j)
    data = open(of, "rb").read() if of else b""
    state = info.get("JobState")
    if j.expect_state and state != j.expect_state:
        ok.append("state %s, expected %s" % (state, j.expect_state))
    if j.expect_re and not re.search(j.expect_re.encode(), data):
        ok.append("pattern %r not in output" % j.expect_re)
    if ok:
        print("MISS %-22s %-34s %s" % (j.label, j.name, "; ".join(ok)), flush=True)
        print("     " + data[-500:].decode("utf-8", "replace").replace("\n", "\n     "), flush=True)
        return False
    code, sig = (info.get("ExitCode", "0:0").split(":") + ["0"])[:2]
    res = Result()
    res.output = data
    res.sent = []
    res.kernel_lines = []
    res.oom_kill = None
    res.elapsed = time.time() - j.t0
    if int(sig):
        res.exit_code, res.signal = None, signal.Signals(int(sig)).name
    else:
        res.exit_code, res.signal = int(code), None
    notes = (j.notes + " Slurm 22.05 single node; sbatch %s; JobState=%s Reason=%s ExitCode=%s (scontrol show job); "
             "output.log is the job's output file." % (" ".join(j.sbatch_args) or "(options in the script)",
                                                      state, info.get("Reason"), info.get("ExitCode")))
    c = Case(j.name, j.label, [], notes, G, extra={"slurm_state": state, "slurm_exit_code": info.get("ExitCode")})
    write_case(c, res)
    return True


def srun_cases():
    """srun in the foreground: srun's own messages and the step's output share the pipe."""
    env = job_env({"SLURM_CONF": CONF})
    cs = []
    w = workdir(neutral_dir("time_limit", "srun-foreground-time-limit"), ("train.py",))
    cs.append(Case("srun-foreground-time-limit", "time_limit",
                   ["srun", "--time=1", "python3", "-u", "train.py", "--steps", "100000", "--step-sleep", "0.05", "--log-every", "40"],
                   "interactive `srun --time=1 python3 -u train.py` captured in the foreground: srun's own messages and the STEP banner.",
                   G, cwd=w, env=env, expect_exit="nonzero", expect_re=r"DUE TO TIME LIMIT", timeout=200))
    w = workdir(neutral_dir("time_limit", "srun-foreground-time-limit-bash"), ())
    cs.append(Case("srun-foreground-time-limit-bash", "time_limit",
                   ["srun", "--time=1", "-l", "bash", "-c", "for i in $(seq 1 1000); do echo \"syncing shard $i\"; sleep 3; done"],
                   "srun -l (task-number prefixes) running a bash loop, killed at the time limit.",
                   G, cwd=w, env=env, expect_exit="nonzero", expect_re=r"DUE TO TIME LIMIT", timeout=200))
    w = workdir(neutral_dir("cancelled", "srun-foreground-ctrl-c"), ("train.py",))
    cs.append(Case("srun-foreground-ctrl-c", "cancelled",
                   ["srun", "python3", "-u", "train.py", "--steps", "100000", "--step-sleep", "0.05", "--log-every", "40"],
                   "interactive srun; the user presses Ctrl-C twice (SIGINT to srun's process group twice within a second aborts the step).",
                   G, cwd=w, env=env, send=[(signal.SIGINT, r"step 80 loss", "group"), (signal.SIGINT, r"step 80 loss[\s\S]*srun: ", "group")],
                   expect_exit="nonzero", timeout=120))
    return cs


def main():
    if sys.argv[1:] == ["--list"]:
        for j in JOBS:
            print("%s/%s" % (j.label, j.name))
        for c in srun_cases():
            print("%s/%s" % (c.label, c.name))
        return
    t = time.time()
    try:
        start()
    except Exception as e:  # noqa: BLE001
        print("gen_slurm: could not start Slurm: %s" % e, flush=True)
        stop()
        sys.exit(1)
    written = 0
    missed = []
    try:
        for j in JOBS:
            submit(j)
        results = []
        th = threading.Thread(target=lambda: results.extend(run_case(c) for c in srun_cases()))
        th.start()
        pending = [j for j in JOBS if j.jobid]
        deadline = time.time() + 240
        while pending and time.time() < deadline:
            time.sleep(1)
            for j in list(pending):
                if j.cancel_after is not None and not getattr(j, "cancelled", False):
                    of = outfile(j)
                    data = open(of, "rb").read() if of else b""
                    if (isinstance(j.cancel_after, float) and time.time() - j.t0 > j.cancel_after) or \
                            (isinstance(j.cancel_after, str) and re.search(j.cancel_after.encode(), data)):
                        sh(["scancel", str(j.jobid)])
                        j.cancelled = True
                info = job_info(j.jobid)
                if info.get("JobState") not in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"):
                    time.sleep(0.5)
                    if finish(j, job_info(j.jobid)):
                        written += 1
                    else:
                        missed.append(j.name)
                    pending.remove(j)
        for j in pending:
            missed.append(j.name)
            print("MISS %-22s %-34s still %s after the deadline" % (j.label, j.name, job_info(j.jobid).get("JobState")), flush=True)
        th.join()
        written += sum(1 for r in results if r)
        missed += ["srun case"] * sum(1 for r in results if not r)
    finally:
        stop()
    print("%s: %d written, %d missed (%s) in %.0fs" % (G, written, len(missed), ", ".join(missed) or "-", time.time() - t), flush=True)
    sys.exit(0 if written else 1)


if __name__ == "__main__":
    main()
