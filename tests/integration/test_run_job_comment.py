"""Inside a Slurm job, `run` writes its verdict into the job's Comment with scontrol (here a
fake scontrol first on PATH that records its arguments), and a hanging scontrol neither
changes the exit status nor holds the wrapper past its deadline."""
import os
import stat
import subprocess
import unittest

from harness import BIN, RunTestCase

RECORDER = """#!/bin/sh
[ "$1" = update ] || exit 1
for a in "$@"; do printf '%s\\n' "$a"; done >> "$0.calls"
"""

HANGS = """#!/bin/sh
[ "$1" = update ] || exit 1
echo $$ > "$0.pid"
exec sleep 60
"""


class JobComment(RunTestCase):
    def fake_scontrol(self, script):
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir, exist_ok=True)
        path = os.path.join(bindir, "scontrol")
        with open(path, "w") as f:
            f.write(script)
        os.chmod(path, stat.S_IRWXU)
        self.env["PATH"] = bindir + ":" + self.env.get("PATH", "/usr/bin:/bin")
        self.env.update(SLURM_JOB_ID="4242", SLURM_PROCID="1", SLURM_JOB_NAME="train")
        return path

    def calls(self, path):
        with open(path + ".calls") as f:
            return f.read().splitlines()

    def test_the_verdict_goes_into_the_comment(self):
        path = self.fake_scontrol(RECORDER)
        p, _ = self.run_wrapped(["sh", "-c", 'echo "OSError: [Errno 28] No space left on device" >&2; exit 3'])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(self.calls(path), [
            "update", "JobId=4242",
            "Comment=gpualert: disk_full rank 1: OSError: [Errno 28] No space left on device"])

    def test_opted_out_nothing_is_written(self):
        path = self.fake_scontrol(RECORDER)
        self.env["GPUALERT_SLURM_COMMENT"] = "0"
        p, _ = self.run_wrapped(["sh", "-c", "exit 3"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertFalse(os.path.exists(path + ".calls"))

    def test_a_hanging_scontrol_is_killed_and_the_status_stays_the_jobs(self):
        path = self.fake_scontrol(HANGS)
        p, _ = self.run_wrapped(["sh", "-c", "exit 5"], timeout=30)
        self.assertEqual(p.returncode, 5, p.stderr)
        with open(path + ".pid") as f:
            pid = int(f.read())
        with self.assertRaises(ProcessLookupError):  # killed and reaped by the wrapper
            os.kill(pid, 0)


if __name__ == "__main__":
    unittest.main()
