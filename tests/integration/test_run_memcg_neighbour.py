"""Another memory cgroup's OOM kill during the run is not this job's: a job that
fails with a KeyError while a process in a sibling cgroup is OOM-killed reads
script_error, and neither report.json nor kernel.log names the other process or
its cgroup (someone else's data).

ctest runs this file alone (RUN_SERIAL, tests/CMakeLists.txt): the OOM kill counts
in the counters of the cgroups above the one it happens in, which other tests'
runs may share."""
import os
import re
import subprocess
import time
import unittest

from harness import BIN, PY, RunTestCase, wait_for, write_script
from test_run_memcg import GROW, memory_cgroup_for_test

JOB = """
import os, sys, time
open(sys.argv[1], "w").close()
for _ in range(6000):  # until the neighbour has been killed (at most 60 s)
    if os.path.exists(sys.argv[2]):
        break
    time.sleep(0.01)
print("epoch 1 | loss 0.4", flush=True)
config = {"lr": 0.1}
print(config["batch_size"])
"""


def remove_cgroup(cg):
    for _ in range(100):
        try:
            os.rmdir(cg)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def oom_kills(cg):
    for name in ("memory.oom_control", "memory.events"):
        try:
            with open(os.path.join(cg, name)) as f:
                for line in f:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except OSError:
            pass
    return None


class NeighbourOom(RunTestCase):
    def test_another_cgroups_oom_kill_is_not_this_jobs(self):
        tag = "gpualert-test-%d" % os.getpid()
        # The job's cgroup and its neighbour's are siblings: an OOM kill in one is
        # counted in neither the other's counter nor its subtree.
        job_cg = memory_cgroup_for_test(tag + "-job", 4 << 30)
        neighbour_cg = memory_cgroup_for_test(tag + "-neighbour", 64 << 20)
        if job_cg is None or neighbour_cg is None:
            for cg in (job_cg, neighbour_cg):
                if cg:
                    remove_cgroup(cg)
            self.skipTest("no memory cgroup can be made here (needs root and a memory controller)")
        ready, go = os.path.join(self.tmp, "ready"), os.path.join(self.tmp, "go")
        job = write_script(self.tmp, "job.py", JOB)
        grow = write_script(self.tmp, "grow.py", GROW)

        def enter(cg):
            def f():
                with open(os.path.join(cg, "cgroup.procs"), "w") as out:
                    out.write(str(os.getpid()))
            return f

        wrapper = None
        try:
            cmd = [BIN, "run", "--log-dir", self.logs, "--notify", "never", "--", PY, job, ready, go]
            wrapper = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       env=self.env, cwd=self.tmp, preexec_fn=enter(job_cg))
            self.assertTrue(wait_for(lambda: os.path.exists(ready), timeout=30))
            neighbour = subprocess.Popen([PY, grow], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, preexec_fn=enter(neighbour_cg))
            neighbour_err = neighbour.communicate(timeout=60)[1]
            open(go, "w").close()
            out, err = wrapper.communicate(timeout=60)
            neighbour_kills = oom_kills(neighbour_cg)
        finally:
            if wrapper is not None and wrapper.poll() is None:  # a failed step above
                wrapper.kill()
                wrapper.communicate()
            remove_cgroup(job_cg)
            remove_cgroup(neighbour_cg)
        # The neighbour really was OOM-killed, during the run.
        self.assertEqual(neighbour.returncode, -9, neighbour_err)
        self.assertGreaterEqual(neighbour_kills or 0, 1)

        self.assertEqual(wrapper.returncode, 1, err)
        run_dir = self.only_run_dir()
        rep = self.report(run_dir)
        self.assertEqual(rep["label"], "script_error", rep)
        self.assertEqual(rep.get("cgroup_oom_kills"), 0, rep)
        texts = ""
        for name in ("report.json", "kernel.log"):
            if os.path.exists(os.path.join(run_dir, name)):
                with open(os.path.join(run_dir, name)) as f:
                    texts += f.read()
        self.assertNotIn(tag + "-neighbour", texts)
        self.assertIsNone(re.search(r"(?:process |pid=)%d\b" % neighbour.pid, texts))
        said = rep["sources"]["kernel_log"]
        if said.startswith("read"):
            # The report was seen and left out, not missed.
            self.assertRegex(said, r"[1-9]\d* record\(s\) about other processes or GPUs left out")


if __name__ == "__main__":
    unittest.main()
