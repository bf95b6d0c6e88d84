"""run --stall: a job that prints nothing for DURATION gets one notice while it runs (through a
real SMTP server on loopback), left alone or, with --stall-action kill, ended and labelled."""
import email
import email.policy
import json
import os
import signal
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, RunTestCase, wait_for  # noqa: E402
from servers import SmtpSink  # noqa: E402


def parse(raw):
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    text = msg.get_body(preferencelist=("plain",)).get_content().replace("\r\n", "\n")
    return msg, text, msg.get_body(preferencelist=("html",)).get_content()


class RunStall(RunTestCase):
    def run_notified(self, smtp, args, opts=(), timeout=120):
        env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}",
                   GPUALERT_TO="me@example.org", GPUALERT_FROM="gpualert@example.org")
        cmd = [BIN, "run", "--log-dir", self.logs, *opts, "--", *args]
        p = subprocess.run(cmd, capture_output=True, env=env, cwd=self.tmp, timeout=timeout)
        return p, self.only_run_dir()

    def test_a_quiet_job_gets_one_stall_notice_then_its_final_one(self):
        # The brief's own case: silent for 8 s against a 3 s --stall.
        with SmtpSink() as smtp:
            p, run_dir = self.run_notified(
                smtp, ["sh", "-c", "echo start; sleep 8; echo end"], opts=["--stall", "3s"])
            messages = smtp.messages
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(messages), 2, [m[2][:200] for m in messages])
        stall, stall_text, stall_html = parse(messages[0][2])
        final, final_text, _ = parse(messages[1][2])
        self.assertRegex(stall["Subject"], r"^\[gpualert\] STALLED: no output for 3\.0s \| sh on ")
        self.assertIn("(running for 3.", stall["Subject"])
        self.assertEqual(stall["X-Gpualert-State"], "stalled")
        self.assertIn("The job was left running", stall_text)
        self.assertIn("larger --stall", stall_text)
        self.assertIn("Last 1 lines of the log", stall_text)
        self.assertIn("Last 1 lines of the log (all of it)\n  start\n\n", stall_text)
        self.assertEqual([part.get_filename() for part in stall.iter_attachments()], [])
        self.assertIn("STALLED", stall_html)
        # The final notice comes second and says the output came back.
        self.assertRegex(final["Subject"], r"^\[gpualert\] succeeded: sh on .*\(exit 0 after 8\.")
        self.assertIn("Stalled 3.", final_text)
        self.assertIn("output resumed at 8.", final_text)
        rep = self.report(run_dir)
        self.assertEqual(rep["label"], "success")
        self.assertEqual(rep["stall"]["after_s"], 3.0)
        self.assertEqual(rep["stall"]["action"], "notify")
        self.assertFalse(rep["stall"]["killed"])
        self.assertTrue(rep["stall"]["resumed"])
        self.assertLess(rep["stall"]["at_s"], rep["stall"]["resumed_at_s"])
        self.assertIn("sent to smtp://127.0.0.1", rep["stall"]["notice"])
        with open(os.path.join(run_dir, "stall.json")) as f:
            self.assertEqual(json.load(f)["state"], "stalled")
        with open(os.path.join(run_dir, "output.log"), "rb") as f:
            self.assertIn(b"#gpualert# stalled: no output for 3.0s (--stall); the job was left "
                          b"running", f.read())

    def test_the_stall_notice_arrives_while_the_job_runs(self):
        # The job waits until the test has the stall mail, then prints again: only a notice
        # sent during the run, off the copy loop, lets it finish with "got it".
        flag = os.path.join(self.tmp, "mail-arrived")
        with SmtpSink() as smtp:
            def watch():
                if wait_for(lambda: len(smtp.messages) >= 1, timeout=60):
                    open(flag, "w").close()
            t = threading.Thread(target=watch)
            t.start()
            script = (f"echo waiting; i=0; while [ ! -e {flag} ] && [ $i -lt 600 ]; do sleep 0.1; "
                      f"i=$((i+1)); done; [ -e {flag} ] && echo 'got it'")
            p, run_dir = self.run_notified(smtp, ["sh", "-c", script], opts=["--stall", "1s"])
            t.join()
            messages = smtp.messages
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"got it", self.job_output(run_dir))
        self.assertEqual(len(messages), 2)
        self.assertIn("STALLED", parse(messages[0][2])[0]["Subject"])
        self.assertIn("succeeded", parse(messages[1][2])[0]["Subject"])

    def test_stall_action_kill_ends_the_job_and_says_it_stalled(self):
        with SmtpSink() as smtp:
            p, run_dir = self.run_notified(
                smtp, ["sh", "-c", "echo 'epoch 1 step 10 loss 2.3'; exec sleep 60"],
                opts=["--stall", "1s", "--stall-action", "kill", "--kill-after", "5s"])
            messages = smtp.messages
        self.assertEqual(p.returncode, -signal.SIGTERM, p.stderr)
        rep = self.report(run_dir)
        self.assertEqual(rep["label"], "unknown")
        self.assertEqual(rep["rule"], "stalled")
        self.assertTrue(rep["stall"]["killed"])
        self.assertFalse(rep["wrapper_timeout"])
        self.assertTrue(any("stalled" in e["text"] for e in rep["evidence"]), rep["evidence"])
        self.assertEqual(len(messages), 2)
        stall, stall_text, _ = parse(messages[0][2])
        final, final_text, _ = parse(messages[1][2])
        self.assertIn("STALLED, stopping it", stall["Subject"])
        self.assertIn("--stall-action kill is stopping it", stall_text)
        self.assertRegex(final["Subject"], r"FAILED unknown: .*killed by SIGTERM")
        self.assertIn("gpualert --stall-action kill stopped it", final_text)
        self.assertIn("the job stalled", final_text)

    def test_a_stalled_job_after_nccl_set_up_is_comm_timeout(self):
        # SIGTERM ignored: the kill goes on to SIGKILL after --kill-after.
        script = ("trap '' TERM; echo 'node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>'; "
                  "exec sleep 60")
        p, run_dir = self.run_wrapped(
            ["sh", "-c", script],
            opts=["--stall", "1s", "--stall-action", "kill", "--kill-after", "1s"])
        self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr)
        rep = self.report(run_dir)
        self.assertEqual(rep["label"], "comm_timeout")
        self.assertEqual(rep["rule"], "stalled-collective")
        self.assertTrue(rep["stall"]["killed"])
        self.assertEqual(rep["stall"]["notice"], "not sent (notify = never)")
        with open(os.path.join(run_dir, "output.log"), "rb") as f:
            log = f.read()
        self.assertIn(b"stalled: still running 1.0s after SIGTERM, sent SIGKILL", log)

    def test_a_job_printing_steadily_never_gets_a_stall_notice(self):
        script = "i=0; while [ $i -lt 40 ]; do echo step $i; sleep 0.1; i=$((i+1)); done"
        with SmtpSink() as smtp:
            p, run_dir = self.run_notified(smtp, ["sh", "-c", script], opts=["--stall", "3s"])
            messages = smtp.messages
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(messages), 1)
        self.assertIn("succeeded", parse(messages[0][2])[0]["Subject"])
        self.assertNotIn("stall", self.report(run_dir))
        self.assertFalse(os.path.exists(os.path.join(run_dir, "stall.json")))

    def test_the_config_key_turns_it_on_and_kill_needs_a_duration(self):
        cfg = os.path.join(self.tmp, "stall.toml")
        with open(cfg, "w") as f:
            f.write('stall = "1s"\nstall_action = "kill"\n')
        p, run_dir = self.run_wrapped(["sh", "-c", "exec sleep 60"], opts=["--config", cfg])
        self.assertEqual(p.returncode, -signal.SIGTERM, p.stderr)
        self.assertTrue(self.report(run_dir)["stall"]["killed"])
        p = subprocess.run([BIN, "run", "--stall-action", "kill", "--", "true"],
                           capture_output=True, text=True, env=self.env, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--stall-action kill needs --stall", p.stderr)
        with open(cfg, "w") as f:
            f.write('stall = "soon"\n')
        p = subprocess.run([BIN, "run", "--config", cfg, "--", "true"],
                           capture_output=True, text=True, env=self.env, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("stall", p.stderr)


if __name__ == "__main__":
    unittest.main()
