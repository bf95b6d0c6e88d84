#!/usr/bin/python3
"""Cases of the scheduler's endings that taxonomy revision 2 names, through a real
single-node Slurm (slurm-wlm 22.05) with cgroup process tracking, as production
clusters run it:

* preempted: `scontrol requeue` of a running job (banner "DUE TO JOB REQUEUE"; the job
  goes back to PENDING and would run again);
* node_failure: the node set down under a running job (banner "DUE TO NODE FAILURE";
  Slurm requeues the job);
* host_oom: `--mem` exceeded under cgroup confinement (the kernel's memory-cgroup OOM
  killer; Slurm reports OUT_OF_MEMORY and its oom_kill event).

One job at a time (setting the node down ends everything on it). output.log is the
job's output file, copied when Slurm ended the job (a requeued job would overwrite it
when it runs again); the exit status is scontrol's ExitCode at that moment.
"""
import os
import re
import signal
import sys
import tempfile
import time

from capture import Case, Result, job_env, neutral_dir, workdir, write_case

G = "gen_slurm_endings.py"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "helpers"))
from slurm_node import SlurmNode  # noqa: E402

NODE = SlurmNode(os.path.join(tempfile.gettempdir(), "gpualert-slurm-endings"), "cgroup")
# A training loop that checkpoints on SIGTERM (no torch needed).
TRAIN = """python3 -u - <<'PY'
import signal, sys, time
def on_term(sig, frame):
    print("SIGTERM received: saving checkpoint to ckpt/last.pt", flush=True)
    sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
for step in range(1, 100000):
    print("step %d loss %.4f lr 3.0e-04" % (step, 2.5 / (1 + step / 500)))
    time.sleep(0.02)
PY"""


def job_info(jobid):
    out = NODE.sh(["scontrol", "show", "job", "--oneliner", str(jobid)]).stdout
    return dict(tok.split("=", 1) for tok in out.split() if "=" in tok)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def run(name, label, script, notes, end, expect_re, files=()):
    """Submits `script`; when `end` says so (after 'step 120'), ends the job with it;
    waits for Slurm's banner; writes the case."""
    w = workdir(neutral_dir(label, name), files)
    for leftover in ("slurm.out",):
        if os.path.exists(os.path.join(w, leftover)):
            os.unlink(os.path.join(w, leftover))
    with open(os.path.join(w, "job.sh"), "w") as f:
        f.write(script)
    out = os.path.join(w, "slurm.out")
    r = NODE.sh(["sbatch", "--parsable", "--chdir", w, "--output", out, "job.sh"],
                env=job_env({"SLURM_CONF": NODE.conf}))
    if r.returncode:
        print("MISS %-14s %-28s sbatch: %s" % (label, name, r.stderr.strip()), flush=True)
        return False
    jobid = r.stdout.strip().split(";")[0]
    t0 = time.time()
    ended = False
    deadline = t0 + 120
    info = {}
    while time.time() < deadline:
        data = read(out)
        if end and not ended and b"step 120 " in data:  # some training first
            end(jobid)
            ended = True
        info = job_info(jobid)
        if re.search(expect_re.encode(), data) and info.get("JobState") not in ("RUNNING", "COMPLETING"):
            time.sleep(1.0)  # the job's last lines after the signal
            break
        time.sleep(0.3)
    data = read(out)
    info = job_info(jobid)
    NODE.sh(["scancel", jobid])  # a requeued job would run again
    if not re.search(expect_re.encode(), data):
        print("MISS %-14s %-28s %r not in the output (state %s)" % (
            label, name, expect_re, info.get("JobState")), flush=True)
        return False
    code, sig = (info.get("ExitCode", "0:0").split(":") + ["0"])[:2]
    res = Result()
    res.output = data
    res.sent = []
    res.kernel_lines = []
    res.elapsed = time.time() - t0
    if int(sig) == 125:
        # Slurm's mark for a step that its memory cgroup's OOM killer hit, not a signal:
        # the job's process was SIGKILLed, which a wrapper around it would have seen.
        res.exit_code, res.signal = None, "SIGKILL"
    elif int(sig) and int(sig) < 65:
        res.exit_code, res.signal = None, signal.Signals(int(sig)).name
    elif info.get("JobState") == "PENDING":
        # Slurm clears ExitCode when it requeues a job. Under cgroup tracking its SIGTERM
        # reached the batch shell alone, which died of it; the rest was SIGKILLed.
        res.exit_code, res.signal = None, "SIGTERM"
        notes += (" Slurm cleared ExitCode on the requeue; the batch shell died of Slurm's "
                  "SIGTERM (the training loop, its child, got only the SIGKILL after it).")
    else:
        res.exit_code, res.signal = int(code), None
    notes += (" Slurm 22.05 single node, proctrack/cgroup + task/cgroup; JobState=%s Reason=%s "
              "Restarts=%s ExitCode=%s (scontrol show job) when the output was copied; output.log "
              "is the job's output file." % (info.get("JobState"), info.get("Reason"),
                                             info.get("Restarts"), info.get("ExitCode")))
    write_case(Case(name, label, [], notes, G, extra={"slurm_state": info.get("JobState"),
                                                       "slurm_exit_code": info.get("ExitCode")}),
               res)
    return True


def requeue(jobid):
    NODE.sh(["scontrol", "requeue", jobid])


def node_down(jobid):
    NODE.sh(["scontrol", "update", "nodename=" + NODE.host, "state=down", "reason=corpus"])


def main():
    t = time.time()
    NODE.start()
    written = 0
    try:
        written += run("sbatch-scontrol-requeue", "preempted", "#!/bin/bash\n" + TRAIN + "\n",
                       "an admin's `scontrol requeue` of a running training job (what preemption "
                       "with PreemptMode=REQUEUE does too); the trainer traps SIGTERM.",
                       requeue, r"DUE TO JOB REQUEUE")
        written += run("sbatch-node-down", "node_failure", "#!/bin/bash\n" + TRAIN + "\n",
                       "the node was set down (`scontrol update state=down`, as slurmctld does when "
                       "a node stops responding) under a running training job; Slurm requeued it.",
                       node_down, r"DUE TO NODE FAILURE")
        NODE.sh(["scontrol", "update", "nodename=" + NODE.host, "state=resume"])
        time.sleep(2)
        written += run("sbatch-mem-cgroup-oom", "host_oom",
                       "#!/bin/bash\n#SBATCH --mem=200M\npython3 -u grow.py\n",
                       "--mem=200M under cgroup confinement (ConstrainRAMSpace); the job grows its "
                       "memory in steps until the memory cgroup's OOM killer kills it.",
                       None, r"oom.kill event", files=("grow.py",))
    finally:
        NODE.stop()
    print("%s: %d written in %.0fs" % (G, written, time.time() - t), flush=True)
    sys.exit(0 if written else 1)


if __name__ == "__main__":
    main()
