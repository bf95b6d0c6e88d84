"""run end to end with notification: the mail arrives, and nothing about it changes the exit status."""
import email
import email.policy
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, RunTestCase  # noqa: E402
from servers import SilentServer, SmtpSink, closed_port  # noqa: E402

OOM_JOB = """
import sys
print("step 1 | loss 2.31")
print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB", file=sys.stderr)
sys.exit(1)
"""


class RunNotify(RunTestCase):
    def run_notified(self, url, args, opts=(), **extra):
        env = dict(self.env, GPUALERT_SMTP_URL=url, GPUALERT_TO="me@example.org",
                   GPUALERT_FROM="gpualert@example.org", **extra)
        cmd = [BIN, "run", "--log-dir", self.logs, *opts, "--", *args]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, env=env, cwd=self.tmp, timeout=120)
        return p, time.monotonic() - t0

    def outbox(self):
        d = os.path.join(self.state, "outbox", "new")
        return sorted(f for f in os.listdir(d) if f.endswith(".eml")) if os.path.isdir(d) else []

    def test_failed_job_mail_arrives_with_verdict_and_log(self):
        with SmtpSink() as smtp:
            p, _ = self.run_notified(f"smtp://127.0.0.1:{smtp.port}", [PY, "-c", OOM_JOB], opts=["--name", "llama-ft"])
            self.assertEqual(p.returncode, 1)
            self.assertEqual(len(smtp.messages), 1)
            _, rcpts, raw = smtp.messages[0]
        self.assertEqual(rcpts, ["me@example.org"])
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        self.assertRegex(msg["Subject"], r"^\[gpualert\] FAILED cuda_oom: torch\.OutOfMemoryError: "
                         r"CUDA out of memory\. .* \| llama-ft on ", msg["Subject"])
        self.assertIn("(exit 1 after", msg["Subject"])
        body = msg.get_body(preferencelist=("plain",)).get_content()
        self.assertIn("Tried to allocate 2.00 GiB", body)
        self.assertIn("smaller batch", body)
        names = [part.get_filename() for part in msg.iter_attachments()]
        self.assertIn("output.log.gz", names)
        self.assertEqual(self.outbox(), [], "a delivered message leaves the outbox")
        self.assertIn(b"notified", p.stderr)

    def test_signal_death_is_kept_while_the_mail_goes_out(self):
        with SmtpSink() as smtp:
            p, _ = self.run_notified(f"smtp://127.0.0.1:{smtp.port}", ["sh", "-c", "kill -SEGV $$"])
            self.assertEqual(p.returncode, -signal.SIGSEGV)
            self.assertEqual(len(smtp.messages), 1)
            msg = email.message_from_bytes(smtp.messages[0][2], policy=email.policy.default)
            self.assertIn("killed by SIGSEGV", msg["Subject"])

    def test_hung_server_neither_changes_status_nor_delays_past_deadline(self):
        with SilentServer() as silent:
            p, elapsed = self.run_notified(f"smtp://127.0.0.1:{silent.port}", ["sh", "-c", "exit 42"],
                                           opts=["--notify-timeout", "2s"])
        self.assertEqual(p.returncode, 42)
        self.assertLess(elapsed, 2 + 1.5, "bounded by --notify-timeout")
        self.assertEqual(len(self.outbox()), 1, "the message is kept for a later flush")

    def test_refused_port_keeps_message_and_flush_delivers_exactly_once(self):
        port = closed_port()
        p, _ = self.run_notified(f"smtp://127.0.0.1:{port}", ["sh", "-c", "exit 3"])
        self.assertEqual(p.returncode, 3)
        self.assertEqual(len(self.outbox()), 1)
        listed = subprocess.run([BIN, "outbox", "list"], capture_output=True, text=True,
                                env=dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{port}"))
        self.assertEqual(len(listed.stdout.splitlines()[1:]), 1)  # under the header
        with SmtpSink() as smtp:
            env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}", GPUALERT_TO="me@example.org")
            f1 = subprocess.run([BIN, "outbox", "flush"], capture_output=True, env=env)
            f2 = subprocess.run([BIN, "outbox", "flush"], capture_output=True, env=env)
            self.assertEqual(f1.returncode, 0, f1.stderr)
            self.assertEqual(f2.returncode, 0, f2.stderr)
            self.assertEqual(len(smtp.messages), 1)
        self.assertEqual(self.outbox(), [])

    def test_next_run_flushes_pending_messages_in_the_background(self):
        port = closed_port()
        self.run_notified(f"smtp://127.0.0.1:{port}", ["sh", "-c", "exit 3"])
        self.assertEqual(len(self.outbox()), 1)
        with SmtpSink() as smtp:
            p, _ = self.run_notified(f"smtp://127.0.0.1:{smtp.port}", ["sh", "-c", "sleep 1; exit 0"],
                                     opts=["--notify", "failure"])
            self.assertEqual(p.returncode, 0)
            deadline = time.monotonic() + 10
            while len(smtp.messages) < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(len(smtp.messages), 1, "the pending message went out during the next run")
        self.assertEqual(self.outbox(), [])

    def test_notify_failure_skips_successful_runs(self):
        with SmtpSink() as smtp:
            p, _ = self.run_notified(f"smtp://127.0.0.1:{smtp.port}", ["true"], opts=["--notify", "failure"])
            self.assertEqual(p.returncode, 0)
            self.assertEqual(smtp.messages, [])

    def test_crlf_in_job_name_cannot_inject_headers(self):
        with SmtpSink() as smtp:
            p, _ = self.run_notified(f"smtp://127.0.0.1:{smtp.port}", ["sh", "-c", "exit 1"],
                                     opts=["--name", "evil\r\nBcc: victim@example.org"])
            self.assertEqual(p.returncode, 1)
            _, rcpts, raw = smtp.messages[0]
        self.assertEqual(rcpts, ["me@example.org"])
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        self.assertIsNone(msg["Bcc"])
        self.assertNotIn(b"\r\nBcc:", raw.split(b"\r\n\r\n")[0])


if __name__ == "__main__":
    unittest.main()
