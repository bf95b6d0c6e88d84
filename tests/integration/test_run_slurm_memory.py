"""A job over its `#SBATCH --mem` limit, on a real Slurm in both tracking modes.

With cgroup confinement the kernel's memory-cgroup OOM killer kills the job's process
and gpualert, which survives, reports it; with proctrack/linuxproc and OverMemoryKill
slurmstepd SIGKILLs the whole step, gpualert too, and `gpualert sweep` reports it from
what Slurm says (OUT_OF_MEMORY). Either way: host_oom, and a notice. Runs alone
(RUN_SERIAL): an OOM kill in a child cgroup counts in its parents' counters, which
other tests' runs read.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, clean_env, wait_for, write_script  # noqa: E402
from slurm_node import SlurmNode  # noqa: E402

GROW = """
import time
chunks = []
for i in range(64):              # 1 GiB in 16 MiB steps, 0.15 s apart
    chunks.append(bytearray(16 << 20))
    for j in range(0, 16 << 20, 4096):
        chunks[-1][j] = 1        # touch every page: resident, not just reserved
    print("allocated %d MiB" % (16 * (i + 1)), flush=True)
    time.sleep(0.15)
print("done")
"""


class MemoryLimit:
    TRACKING = None

    def test_d_mem_limit_is_host_oom(self):
        base = tempfile.mkdtemp(prefix="gpualert-slurm-mem-")
        os.chmod(base, 0o755)  # munged runs as its own user
        node = SlurmNode(os.path.join(base, "slurm"), self.TRACKING)
        node.start()
        try:
            d = os.path.join(base, "d")
            os.makedirs(d)
            job = write_script(d, "grow.py", GROW)
            script = write_script(d, "job.sh", "#!/bin/bash\n#SBATCH --mem=200M\n"
                                  "unset PYTHONUNBUFFERED\n"
                                  f"export GPUALERT_STATE_DIR={d}/state GPUALERT_LOG_DIR={d}/logs\n"
                                  f"{BIN} run --name d -- {PY} {job}\n")
            r = node.sh(["sbatch", "--parsable", "--output", os.path.join(d, "slurm.out"),
                         "--chdir", d, script])
            self.assertEqual(r.returncode, 0, r.stderr)
            jobid = r.stdout.strip().split(";")[0]
            ended = ("COMPLETED", "FAILED", "OUT_OF_MEMORY", "CANCELLED", "TIMEOUT", "NODE_FAIL")
            self.assertTrue(wait_for(lambda: node.job_state(jobid)[0] in ended, timeout=90,
                                     interval=0.5), node.job_state(jobid))
            state = node.job_state(jobid)[0]
            env = clean_env(GPUALERT_STATE_DIR=os.path.join(d, "state"), SLURM_CONF=node.conf)
            sweep = subprocess.run([BIN, "sweep", os.path.join(d, "logs")], capture_output=True,
                                   text=True, env=env, timeout=120)
            self.assertEqual(sweep.returncode, 0, sweep.stderr)
            runs = glob.glob(os.path.join(d, "logs", "*", "report.json"))
            self.assertEqual(len(runs), 1, (state, sweep.stdout, open(os.path.join(d, "slurm.out")).read()))
            with open(runs[0]) as f:
                report = json.load(f)
            self.assertEqual(report["label"], "host_oom", (state, report))
            if report["state"] == "final":
                # gpualert outlived the job in its own cgroup, whose peak it read: near --mem.
                self.assertGreater(report.get("cgroup_memory_peak", 0), 100 << 20, report)
                self.assertLessEqual(report["cgroup_memory_peak"], 210 << 20, report)
            with open(os.path.join(os.path.dirname(runs[0]), "output.log")) as f:
                self.assertIn("allocated", f.read())
            metas = glob.glob(os.path.join(d, "state", "outbox", "new", "*.meta"))
            self.assertEqual(len(metas), 1, metas)
        finally:
            node.stop()
            shutil.rmtree(base, ignore_errors=True)


@unittest.skipUnless(os.geteuid() == 0 and SlurmNode.available("linuxproc"),
                     "needs root and slurm-wlm + munge (scripts/install-deps.sh test installs them)")
class UnderLinuxprocTracking(MemoryLimit, unittest.TestCase):
    TRACKING = "linuxproc"


@unittest.skipUnless(os.geteuid() == 0 and SlurmNode.available("cgroup"),
                     "needs root, slurm-wlm + munge and cgroup v1's freezer and memory controllers")
class UnderCgroupTracking(MemoryLimit, unittest.TestCase):
    TRACKING = "cgroup"


if __name__ == "__main__":
    unittest.main()
