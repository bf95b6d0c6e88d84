"""One notice per job on a real Slurm, in both tracking modes: `srun -n 2 gpualert run`
with one task failing sends one mail naming that task; an array's members are named
ARRAYJOBID_INDEX, one mail per failing member, or one digest with `array = digest`.
"""
import email
import email.policy
import glob
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, wait_for, write_script  # noqa: E402
from servers import SmtpSink  # noqa: E402
from slurm_node import SlurmNode  # noqa: E402

RANK = """
import os, sys, time
if os.environ["SLURM_PROCID"] == "1":
    time.sleep(2)
    raise ValueError("rank 1 found a corrupt shard")
time.sleep(5)
print("rank 0 done")
"""

STUBBORN = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("started", flush=True)
time.sleep(300)
"""

MEMBER = """
import os
index = os.environ["SLURM_ARRAY_TASK_ID"]
if index in ("1", "3"):
    raise ValueError("member %s: learning rate diverged" % index)
print("member", index, "done")
"""


class GroupCases:
    TRACKING = None

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="gpualert-slurm-group-")
        os.chmod(cls.base, 0o755)  # munged runs as its own user
        cls.node = SlurmNode(os.path.join(cls.base, "slurm"), cls.TRACKING)
        cls.node.start()
        cls.smtp = SmtpSink().__enter__()
        # All three jobs at once: one Slurm start per mode, the jobs side by side.
        cls.jobs = {
            "srun": cls.submit(cls, "srun", RANK, f"srun -n 2 {BIN} run -- {PY} {{job}}", ["-n", "2"]),
            "array": cls.submit(cls, "array", MEMBER, f"{BIN} run -- {PY} {{job}}",
                                ["--array=0-3"]),
            "digest": cls.submit(cls, "digest", MEMBER, f"{BIN} run --array digest -- {PY} {{job}}",
                                 ["--array=0-3"]),
            "killed": cls.submit(cls, "killed", STUBBORN, f"srun -n 2 {BIN} run -- {PY} {{job}}",
                                 ["-n", "2"]),
        }

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()
        cls.smtp.__exit__(None, None, None)
        shutil.rmtree(cls.base, ignore_errors=True)

    def submit(self, name, job_text, line, sbatch_args):
        d = os.path.join(self.base, name)
        os.makedirs(d)
        job = write_script(d, "job.py", job_text)
        script = write_script(d, "job.sh", "#!/bin/bash\n"
                              f"export GPUALERT_STATE_DIR={d}/state GPUALERT_LOG_DIR={d}/logs\n"
                              f"export GPUALERT_SMTP_URL=smtp://127.0.0.1:{self.smtp.port} "
                              f"GPUALERT_TO={name}@example.com GPUALERT_FROM=gpualert@example.org\n"
                              + line.format(job=job) + "\n")
        r = self.node.sh(["sbatch", "--parsable", "--output", os.path.join(d, "slurm-%j.out"),
                          "--chdir", d, *sbatch_args, script])
        assert r.returncode == 0, r.stderr
        return r.stdout.strip().split(";")[0], d

    def ended(self, jobid):
        """Every member of the job (array) left the queue, its wrappers done sending."""
        def done():
            r = self.node.sh(["squeue", "-h", "-r", "-j", jobid, "-o", "%T"])
            return r.returncode == 0 and r.stdout.strip() == ""
        return wait_for(done, timeout=90, interval=0.3)

    def mails_to(self, name):
        return [email.message_from_bytes(raw, policy=email.policy.default)
                for _, to, raw in self.smtp.messages if to == [f"{name}@example.com"]]

    def test_a_scancelled_ranks_send_one_notice_held_or_swept(self):
        jobid, d = self.jobs["killed"]

        def started():
            n = 0
            for path in glob.glob(os.path.join(d, "logs", "*", "output.log")):
                with open(path, errors="replace") as f:
                    n += "started" in f.read().splitlines()  # the job's line, not the header's
            return n == 2
        self.assertTrue(wait_for(started, timeout=60, interval=0.2), self.node.job_state(jobid))
        self.assertEqual(self.node.sh(["scancel", jobid]).returncode, 0)
        self.assertTrue(self.ended(jobid), self.node.job_state(jobid))  # KillWait's SIGKILL
        # A wrapper still alive 2 s after Slurm's SIGTERM keeps a held notice in case the
        # SIGKILL ends it too: one for the two tasks, not one each (whether any wrapper
        # lives that long depends on how fast Slurm ends the step).
        metas = glob.glob(os.path.join(d, "state", "outbox", "new", "*.meta"))
        self.assertLessEqual(len(metas), 1, metas)
        env = dict(os.environ, GPUALERT_STATE_DIR=os.path.join(d, "state"), SLURM_CONF=self.node.conf)
        env.pop("GPUALERT_SMTP_URL", None)
        sweep = self.node.sh([BIN, "sweep", "--no-flush", os.path.join(d, "logs")], env=env,
                             timeout=120)
        self.assertEqual(sweep.returncode, 0, sweep.stderr)
        states = []
        for path in glob.glob(os.path.join(d, "logs", "*", "report.json")):
            with open(path) as f:
                states.append(json.load(f)["state"])
        # Each task's run reported: by the sweep, or by a wrapper that outlived its job.
        self.assertLessEqual(set(states), {"final", "reconstructed"}, (states, sweep.stdout))
        self.assertEqual(len(states), 2, states)
        mails = self.mails_to("killed")
        self.assertEqual(len(mails), 1, ([m["Subject"] for m in mails], states, sweep.stdout))
        self.assertIn(f"job {jobid} ", mails[0]["Subject"])
        self.assertEqual(glob.glob(os.path.join(d, "state", "outbox", "new", "*.meta")), [],
                         "the held notice was replaced or withdrawn")

    def test_srun_tasks_send_one_mail_naming_the_failing_task(self):
        jobid, d = self.jobs["srun"]
        self.assertTrue(self.ended(jobid), self.node.job_state(jobid))
        mails = self.mails_to("srun")
        self.assertEqual(len(mails), 1, [m["Subject"] for m in mails])
        subject = mails[0]["Subject"]
        self.assertIn(f"job {jobid} ", subject)
        self.assertIn("rank 1", subject)
        self.assertIn("FAILED script_error", subject)
        body = mails[0].get_body(preferencelist=("plain",)).get_content()
        self.assertIn("task 1 failed first", body)
        self.assertIn("task 0 on ", body)
        reports = {}
        for path in glob.glob(os.path.join(d, "logs", "*", "report.json")):
            with open(path) as f:
                r = json.load(f)
            reports[r["job_group"]["rank"]] = r
        self.assertEqual(sorted(reports), ["0", "1"], reports)
        self.assertEqual(reports["1"]["job_group"]["role"], "first_failure")
        self.assertEqual(reports["0"]["label"], "success")
        self.assertFalse(reports["0"]["job_group"]["send"], reports["0"]["job_group"])

    def test_array_members_are_named_by_array_id_one_mail_per_failing_member(self):
        jobid, _ = self.jobs["array"]
        self.assertTrue(self.ended(jobid), self.node.job_state(jobid))
        subjects = [m["Subject"] for m in self.mails_to("array")]
        for s in subjects:
            self.assertRegex(s, rf"job {jobid}_[0-3] ", subjects)
        for index in ("1", "3"):
            failing = [s for s in subjects if f"job {jobid}_{index} " in s]
            self.assertEqual(len(failing), 1, subjects)
            self.assertIn("FAILED script_error", failing[0])
        for index in ("0", "2"):
            self.assertLessEqual(len([s for s in subjects if f"job {jobid}_{index} " in s]), 1)

    def test_array_digest_is_one_mail(self):
        jobid, _ = self.jobs["digest"]
        self.assertTrue(self.ended(jobid), self.node.job_state(jobid))
        mails = self.mails_to("digest")
        self.assertEqual(len(mails), 1, [m["Subject"] for m in mails])
        self.assertIn(f"FAILED 2 of 4 members failed (script_error 2, success 2) | array job {jobid}_*",
                      mails[0]["Subject"])
        body = mails[0].get_body(preferencelist=("plain",)).get_content()
        self.assertIn(f"{jobid}_1: script_error", body)
        self.assertIn(f"{jobid}_3: script_error", body)


@unittest.skipUnless(os.geteuid() == 0 and SlurmNode.available("linuxproc"),
                     "needs root and slurm-wlm + munge (scripts/install-deps.sh test installs them)")
class UnderLinuxprocTracking(GroupCases, unittest.TestCase):
    TRACKING = "linuxproc"


@unittest.skipUnless(os.geteuid() == 0 and SlurmNode.available("cgroup"),
                     "needs root, slurm-wlm + munge and cgroup v1's freezer and memory controllers")
class UnderCgroupTracking(GroupCases, unittest.TestCase):
    TRACKING = "cgroup"


if __name__ == "__main__":
    unittest.main()
