"""One notice per job: several `gpualert run` processes of one job (a Slurm step's tasks,
or --group) agree through the log directory on one mail, against a real SMTP server."""
import email
import email.policy
import glob
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, RunTestCase, wait_for, write_script  # noqa: E402
from servers import SilentServer, SmtpSink  # noqa: E402

# A rank that fails at once, and one that ends (0 or 1) once the test creates `go`:
# the order of the endings is the test's, not a race of sleeps.
FAIL = """
import os, sys, time
while len(sys.argv) > 1 and not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
print('step 1 | loss 2.3')
raise ValueError('rank one broke: bad shard 7')
"""
WAIT = """
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
print('rank done')
sys.exit(int(sys.argv[2]))
"""


class Group(RunTestCase):
    def setUp(self):
        super().setUp()
        self.smtp = SmtpSink().__enter__()
        self.fail_job = write_script(self.tmp, "fail.py", FAIL)
        self.wait_job = write_script(self.tmp, "wait.py", WAIT)
        self.go = os.path.join(self.tmp, "go")

    def tearDown(self):
        self.smtp.__exit__(None, None, None)
        super().tearDown()

    def start(self, rank, job, opts=(), log_dir=None, slurm=True, **env):
        e = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{self.smtp.port}",
                 GPUALERT_TO="me@example.org", GPUALERT_FROM="gpualert@example.org",
                 GPUALERT_SLURM_COMMENT="0")
        e.update(env)
        if slurm:
            e.update(SLURM_JOB_ID="9001", SLURM_STEP_ID="0", SLURM_STEP_NUM_TASKS="2",
                     SLURM_NTASKS="2", SLURM_PROCID=str(rank), SLURM_JOB_NAME="train")
        cmd = [BIN, "run", "--log-dir", log_dir or self.logs, *opts, "--", *job]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                                cwd=self.tmp)

    def finish(self, p, code):
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, code, err)
        return err.decode()

    def mails(self):
        return [email.message_from_bytes(raw, policy=email.policy.default)
                for _, _, raw in self.smtp.messages]

    def body(self, msg):
        return msg.get_body(preferencelist=("plain",)).get_content()

    def run_dir_of(self, text, base=None):
        for d in glob.glob(os.path.join(base or self.logs, "*", "output.log")):
            with open(d, errors="replace") as f:
                if text in f.read():
                    return os.path.dirname(d)
        return None

    def test_a_failing_task_sends_the_one_mail_and_the_healthy_one_none(self):
        healthy = self.start(0, [PY, self.wait_job, self.go, "0"])
        self.assertTrue(wait_for(lambda: self.registered(1), timeout=20))
        failing = self.start(1, [PY, self.fail_job])
        self.finish(failing, 1)
        self.assertTrue(wait_for(lambda: len(self.smtp.messages) >= 1, timeout=30))
        open(self.go, "w").close()
        said = self.finish(healthy, 0)
        self.assertIn("the job's notice is task 1's", said)
        mails = self.mails()
        self.assertEqual(len(mails), 1, [m["Subject"] for m in mails])
        subject = mails[0]["Subject"]
        self.assertIn("FAILED script_error", subject)
        self.assertIn("job 9001", subject)
        self.assertIn("rank 1", subject)
        body = self.body(mails[0])
        self.assertIn("task 1 failed first", body)
        healthy_dir = self.run_dir_of("rank done")
        self.assertIn("task 0 on ", body)
        self.assertIn(f"still running; run dir {healthy_dir}", body)
        report = self.report(healthy_dir)
        self.assertEqual(report["job_group"]["role"], "covered")
        self.assertFalse(report["job_group"]["send"])

    def registered(self, n):
        return len(glob.glob(os.path.join(self.logs, ".gpualert-groups", "*", "m.*"))) == n

    def test_b_a_failure_after_a_success_names_the_finished_one(self):
        go1 = self.go + "1"
        healthy = self.start(0, [PY, self.wait_job, self.go, "0"])
        failing = self.start(1, [PY, self.fail_job, go1])
        self.assertTrue(wait_for(lambda: self.registered(2), timeout=20))
        open(self.go, "w").close()
        self.finish(healthy, 0)
        self.assertEqual(self.smtp.messages, [], "a healthy task sends nothing while one runs")
        open(go1, "w").close()
        self.finish(failing, 1)
        mails = self.mails()
        self.assertEqual(len(mails), 1, [m["Subject"] for m in mails])
        self.assertIn("rank 1", mails[0]["Subject"])
        self.assertRegex(self.body(mails[0]), r"task 0 on \S+: success \(exit 0 after")

    def test_c_all_tasks_succeeding_send_one_success(self):
        procs = [self.start(r, [PY, self.wait_job, self.go, "0"]) for r in (0, 1)]
        self.assertTrue(wait_for(lambda: self.registered(2), timeout=20))
        open(self.go, "w").close()
        for p in procs:
            self.finish(p, 0)
        mails = self.mails()
        self.assertEqual(len(mails), 1, [m["Subject"] for m in mails])
        self.assertIn("succeeded", mails[0]["Subject"])
        self.assertIn("(all ranks)", mails[0]["Subject"])
        self.assertIn("all 2 tasks succeeded", self.body(mails[0]))

    def test_c2_group_none_sends_a_notice_per_task(self):
        open(self.go, "w").close()
        for rank, job, code in ((0, [PY, self.wait_job, self.go, "0"], 0), (1, [PY, self.fail_job], 1)):
            self.finish(self.start(rank, job, ["--group", "none"]), code)
        subjects = [m["Subject"] for m in self.mails()]
        self.assertEqual(len(subjects), 2, subjects)
        self.assertFalse(os.path.exists(os.path.join(self.logs, ".gpualert-groups")))

    def test_d_group_option_without_slurm(self):
        opts = ["--group", "exp-42", "--group-size", "2"]
        healthy = self.start(0, [PY, self.wait_job, self.go, "0"], opts, slurm=False, RANK="0")
        self.assertTrue(wait_for(lambda: self.registered(1), timeout=20))
        failing = self.start(1, [PY, self.fail_job], opts, slurm=False, RANK="1")
        self.finish(failing, 1)
        open(self.go, "w").close()
        self.finish(healthy, 0)
        mails = self.mails()
        self.assertEqual(len(mails), 1, [m["Subject"] for m in mails])
        self.assertIn("rank 1", mails[0]["Subject"])
        self.assertIn("group exp-42", self.body(mails[0]))
        self.assertIn("rank 0 on ", self.body(mails[0]))

    def test_d2_the_same_group_key_run_again_is_a_new_group(self):
        opts = ["--group", "exp-42", "--group-size", "2"]
        for attempt in (1, 2):
            go = f"{self.go}{attempt}"
            healthy = self.start(0, [PY, self.wait_job, go, "0"], opts, slurm=False, RANK="0")
            failing = self.start(1, [PY, self.fail_job, go], opts, slurm=False, RANK="1")
            self.assertTrue(wait_for(lambda: len(glob.glob(os.path.join(
                self.logs, ".gpualert-groups", "exp-42", "m.*"))) == 2, timeout=20))
            open(go, "w").close()
            self.finish(failing, 1)
            self.finish(healthy, 0)
            self.assertEqual(len(self.mails()), attempt, [m["Subject"] for m in self.mails()])
        self.assertEqual(len(glob.glob(os.path.join(self.logs, ".gpualert-groups",
                                                    "exp-42.ended-*"))), 1)

    def test_e_a_task_with_its_own_log_dir_sends_its_own_marked_notice(self):
        open(self.go, "w").close()
        own0, own1 = os.path.join(self.tmp, "node0-logs"), os.path.join(self.tmp, "node1-logs")
        healthy = self.start(0, [PY, self.wait_job, self.go, "0"], log_dir=own0)
        self.finish(healthy, 0)
        failing = self.start(1, [PY, self.fail_job], log_dir=own1)
        self.finish(failing, 1)
        mails = self.mails()
        self.assertEqual(len(mails), 2, [m["Subject"] for m in mails])
        for m in mails:
            self.assertIn("(own notice)", m["Subject"])
            self.assertIn("own notice", self.body(m))
            self.assertIn("only 1 of the group's 2 tasks", self.body(m))
        subjects = sorted(m["Subject"] for m in mails)
        self.assertTrue(any("FAILED script_error" in s and "rank 1" in s for s in subjects), subjects)
        self.assertTrue(any("succeeded" in s for s in subjects), subjects)

    def test_f_a_task_killed_with_its_wrapper_is_swept_into_the_same_notice(self):
        healthy = self.start(0, [PY, self.wait_job, self.go, "3"])
        self.assertTrue(wait_for(lambda: self.registered(1), timeout=20))
        failing = self.start(1, [PY, self.fail_job])
        self.finish(failing, 1)
        os.kill(healthy.pid, signal.SIGKILL)  # the wrapper, before it writes its ending
        healthy.communicate(timeout=30)
        open(self.go, "w").close()  # its orphaned job ends too
        self.assertEqual(len(self.smtp.messages), 1)
        env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{self.smtp.port}",
                   GPUALERT_TO="me@example.org", GPUALERT_FROM="gpualert@example.org")
        sweep = subprocess.run([BIN, "sweep", "--no-flush", self.logs], capture_output=True,
                               text=True, env=env, timeout=60)
        self.assertEqual(sweep.returncode, 0, sweep.stderr)
        self.assertIn("reconstructed", sweep.stdout)
        mails = self.mails()
        self.assertEqual(len(mails), 1, [m["Subject"] for m in mails])
        reports = [self.report(os.path.dirname(p))
                   for p in glob.glob(os.path.join(self.logs, "*", "report.json"))]
        swept = [r for r in reports if r.get("state") == "reconstructed"]
        self.assertEqual(len(swept), 1, reports)
        self.assertEqual(swept[0]["job_group"]["role"], "covered", swept[0]["job_group"])


    def test_f2_a_claim_whose_wrapper_died_before_sending_is_taken_over(self):
        healthy = self.start(0, [PY, self.wait_job, self.go, "0"])
        self.assertTrue(wait_for(lambda: self.registered(1), timeout=20))
        claim = glob.glob(os.path.join(self.logs, ".gpualert-groups", "*"))[0] + "/notice"
        with SilentServer() as silent:  # task 1's notice never gets through
            failing = self.start(1, [PY, self.fail_job], ["--notify-timeout", "60s"],
                                 GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{silent.port}")
            self.assertTrue(wait_for(lambda: os.path.exists(claim), timeout=20))
            os.kill(failing.pid, signal.SIGKILL)  # after its claim, before its notice
            failing.communicate(timeout=30)
            open(self.go, "w").close()
            said = self.finish(healthy, 0)
        mails = self.mails()
        self.assertEqual(len(mails), 1, (said, [m["Subject"] for m in mails]))
        self.assertIn("(own notice)", mails[0]["Subject"])
        self.assertIn("claimed the job's notice, but its wrapper ended before sending it",
                      self.body(mails[0]))

    def array_member(self, index, opts=()):
        job = [PY, self.fail_job] if index in (1, 3) else [PY, self.wait_job, self.go, "0"]
        p = self.start(0, job, opts, slurm=False, SLURM_JOB_ID=str(20 + index),
                       SLURM_ARRAY_JOB_ID="17", SLURM_ARRAY_TASK_ID=str(index),
                       SLURM_ARRAY_TASK_COUNT="4", SLURM_JOB_NAME="sweep-lr")
        return self.finish(p, 1 if index in (1, 3) else 0)

    def test_g_array_members_are_named_by_their_array_id(self):
        open(self.go, "w").close()
        for i in range(4):
            self.array_member(i, ["--notify", "failure"])
        subjects = sorted(m["Subject"] for m in self.mails())
        self.assertEqual(len(subjects), 2, subjects)
        self.assertIn("job 17_1 sweep-lr", subjects[0])
        self.assertIn("job 17_3 sweep-lr", subjects[1])
        self.assertIn("Scheduler job: array job 17_1", self.body(
            [m for m in self.mails() if "17_1" in m["Subject"]][0]))

    def test_h_array_digest_is_one_mail_once_all_members_ended(self):
        open(self.go, "w").close()
        said = [self.array_member(i, ["--array", "digest"]) for i in range(4)]
        self.assertIn("the array's digest goes out when its last member ends", said[0])
        mails = self.mails()
        self.assertEqual(len(mails), 1, [m["Subject"] for m in mails])
        self.assertIn("FAILED 2 of 4 members failed (script_error 2, success 2) | array job 17_*",
                      mails[0]["Subject"])
        body = self.body(mails[0])
        self.assertRegex(body, r"17_1: script_error \(exit 1 after [^)]*\): ValueError: rank one broke")
        self.assertIn("17_3: script_error", body)
        self.assertNotIn("17_0:", body)


    def test_i_a_member_killed_with_its_wrapper_is_counted_by_the_sweep(self):
        for i in range(3):
            open(self.go, "w").close()
            self.array_member(i, ["--array", "digest"])
        os.unlink(self.go)
        last = self.start(0, [PY, self.wait_job, self.go, "0"], ["--array", "digest"], slurm=False,
                          SLURM_JOB_ID="23", SLURM_ARRAY_JOB_ID="17", SLURM_ARRAY_TASK_ID="3",
                          SLURM_ARRAY_TASK_COUNT="4", SLURM_JOB_NAME="sweep-lr")
        self.assertTrue(wait_for(lambda: self.run_dir_of("") is not None and len(
            glob.glob(os.path.join(self.logs, "*", "output.log"))) == 4, timeout=20))
        os.kill(last.pid, signal.SIGKILL)
        last.communicate(timeout=30)
        open(self.go, "w").close()
        self.assertEqual(self.smtp.messages, [], "three of four members ended: no digest yet")
        env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{self.smtp.port}",
                   GPUALERT_TO="me@example.org", GPUALERT_FROM="gpualert@example.org",
                   GPUALERT_SLURM_COMMENT="0")
        sweep = subprocess.run([BIN, "sweep", "--no-flush", self.logs], capture_output=True,
                               text=True, env=env, timeout=60)
        self.assertEqual(sweep.returncode, 0, sweep.stderr)
        mails = self.mails()
        self.assertEqual(len(mails), 1, (sweep.stdout, [m["Subject"] for m in mails]))
        self.assertIn("2 of 4 members failed", mails[0]["Subject"])
        self.assertIn("17_3: ", self.body(mails[0]))


if __name__ == "__main__":
    unittest.main()
