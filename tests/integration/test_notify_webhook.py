"""Webhook delivery (GPUALERT_WEBHOOK_URL) against a real http.server on 127.0.0.1:
Slack-compatible JSON, the generic report.json POST, a failing endpoint kept in the outbox."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from notify_env import BIN, Env
from runfixture import OOM_EVIDENCE, OOM_LINES, make_run
from servers import HttpReceiver, SmtpSink


class WebhookDelivery(unittest.TestCase):
    def setUp(self):
        self.env = Env()
        self.run_dir, _ = make_run(self.env.root, lines=OOM_LINES, evidence=OOM_EVIDENCE)

    def tearDown(self):
        self.env.cleanup()

    def test_slack_format(self):
        with HttpReceiver() as hook:
            p = self.env.run("notify", self.run_dir, GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/services/T0/B0/x")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(hook.posts), 1)
            path, headers, body = hook.posts[0]
        self.assertEqual(path, "/services/T0/B0/x")
        self.assertEqual(headers["Content-Type"], "application/json")
        payload = json.loads(body)
        self.assertIn("[gpualert] FAILED cuda_oom: torch.OutOfMemoryError: CUDA out of memory. Tried "
                      "to allocate 20.00 GiB | job 4242 llama-ft on gpu-node17 (exit 1 after 2h13m)",
                      payload["text"])
        self.assertIn("CUDA out of memory", payload["text"])
        self.assertIn("First action: smaller batch", payload["text"])
        self.assertEqual(self.env.run("outbox", "list").stdout, "")

    def test_json_format_posts_report_json(self):
        with HttpReceiver() as hook:
            p = self.env.run("notify", self.run_dir, GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/hook",
                             GPUALERT_WEBHOOK_FORMAT="json")
            self.assertEqual(p.returncode, 0, p.stderr)
            body = hook.posts[0][2]
        with open(os.path.join(self.run_dir, "report.json")) as f:
            self.assertEqual(json.loads(body), json.load(f))

    def test_failing_endpoint_is_kept_then_flushed_once(self):
        with HttpReceiver(status=500) as hook:
            url = f"http://127.0.0.1:{hook.port}/hook"
            p = self.env.run("notify", self.run_dir, GPUALERT_WEBHOOK_URL=url)
            self.assertEqual(p.returncode, 1)
            self.assertIn("500", p.stderr)
            header, *listing = self.env.run("outbox", "list").stdout.splitlines()
            self.assertEqual(header.split("\t")[:2], ["id", "channel"])
            self.assertEqual(len(listing), 1)
            self.assertIn("webhook", listing[0])
            self.assertIn("500", listing[0])
            hook.status = 200
            self.assertEqual(self.env.run("outbox", "flush", GPUALERT_WEBHOOK_URL=url).returncode, 0)
            self.assertEqual(self.env.run("outbox", "flush", GPUALERT_WEBHOOK_URL=url).returncode, 0)
            self.assertEqual(len(hook.posts), 2)  # the failed attempt, then exactly one delivery
        self.assertEqual(self.env.run("outbox", "list").stdout, "")

    def test_smtp_and_webhook_together(self):
        with HttpReceiver() as hook, SmtpSink() as sink:
            p = self.env.run("notify", self.run_dir, GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/hook",
                             GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{sink.port}")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(hook.posts), 1)
            self.assertEqual(len(sink.messages), 1)
            t = self.env.run("test-notify", GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/hook",
                             GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{sink.port}")
            self.assertEqual(t.returncode, 0, t.stderr)
            self.assertIn("smtp: test message sent to alice@example.com", t.stdout)
            self.assertIn("webhook: test message accepted", t.stdout)


if __name__ == "__main__":
    unittest.main()
