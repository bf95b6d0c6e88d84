"""Only the kernel's records about this job count: a GPU driver's Xid that names
another process neither decides the label nor appears in the run's files, one that
names the job's own process does (spec/taxonomy.md, host evidence).

The records are written to /dev/kmsg as the NVIDIA driver writes them, which needs
root; elsewhere the tests are skipped."""
import os
import re
import subprocess
import unittest

from harness import PY, RunTestCase, write_script

# The job writes one Xid record naming the process XID_PID (its own when unset)
# and exits 0: only the pid in the record differs between the tests.
JOB = """
import os, sys
pid = int(os.environ.get("XID_PID") or os.getpid())
with open("/dev/kmsg", "w") as k:
    k.write("<3>NVRM: Xid (PCI:0000:3b:00): 79, pid=%d, name=%s, GPU has fallen off the bus.\\n"
            % (pid, os.environ["XID_NAME"]))
print("epoch 1 | loss 0.4", flush=True)
print("Training complete", flush=True)
"""


def kmsg_writable():
    return os.access("/dev/kmsg", os.R_OK | os.W_OK)


class KernelRecords(RunTestCase):
    def setUp(self):
        super().setUp()
        if not kmsg_writable():
            self.skipTest("/dev/kmsg is not readable and writable here (needs root)")
        self.job = write_script(self.tmp, "job.py", JOB)

    def files_of(self, run_dir):
        text = ""
        for name in ("report.json", "kernel.log"):
            path = os.path.join(run_dir, name)
            if os.path.exists(path):
                with open(path) as f:
                    text += f.read()
        return text

    def test_an_xid_naming_another_process_is_not_this_jobs(self):
        # A real process that is not the job's, as another job's would be.
        other = subprocess.Popen(["sleep", "60"])
        try:
            env = dict(self.env, XID_PID=str(other.pid), XID_NAME="other_job")
            p, run_dir = self.run_wrapped([PY, self.job], env=env)
        finally:
            other.kill()
            other.wait()
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = self.report(run_dir)
        self.assertEqual(rep["label"], "success", rep)
        # The wrapper read the record (and says it left records out, without naming them).
        said = rep["sources"]["kernel_log"]
        self.assertTrue(said.startswith("read"), said)
        self.assertRegex(said, r"[1-9]\d* record\(s\) about other processes or GPUs left out")
        files = self.files_of(run_dir)
        self.assertNotIn("other_job", files)
        self.assertIsNone(re.search(r"\bpid=%d\b" % other.pid, files))
        if os.path.exists(os.path.join(run_dir, "kernel.log")):
            with open(os.path.join(run_dir, "kernel.log")) as f:
                self.assertNotIn("Xid", f.read())

    def test_an_xid_naming_the_jobs_own_process_decides(self):
        env = dict(self.env, XID_NAME="this_job")
        p, run_dir = self.run_wrapped([PY, self.job], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = self.report(run_dir)
        self.assertEqual(rep["label"], "gpu_lost", rep)
        self.assertEqual(rep["rule"], "gpu-fallen-off-bus")
        with open(os.path.join(run_dir, "kernel.log")) as f:
            kept = f.read()
        self.assertIn("name=this_job, GPU has fallen off the bus.", kept)
        self.assertEqual(kept.count("Xid"), 1, kept)


if __name__ == "__main__":
    unittest.main()
