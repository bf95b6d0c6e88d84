"""Webhook and ntfy delivery (GPUALERT_WEBHOOK_URL, GPUALERT_NTFY_URL) against a real
http.server on 127.0.0.1: Slack Block Kit, the generic report.json POST with its text, ntfy's
push with title, priority and tags, failing endpoints kept in the outbox."""
import email.header
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from notify_env import BIN, Env
from runfixture import OOM_EVIDENCE, OOM_LINES, make_run

# What the job printed in the evidence line, with a token in it: masked in every payload.
TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123"
LEAKY_EVIDENCE = [(11, OOM_EVIDENCE[0][1] + " HF_TOKEN=" + TOKEN)]
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
        self.assertNotIn("username", payload)
        # The fallback text that Slack shows in notifications is the subject.
        self.assertIn("[gpualert] FAILED cuda_oom: torch.OutOfMemoryError: CUDA out of memory. Tried "
                      "to allocate 20.00 GiB | job 4242 llama-ft on gpu-node17 (exit 1 after 2h13m)",
                      payload["text"])
        [attachment] = payload["attachments"]
        self.assertEqual(attachment["color"], "#cf222e")
        blocks = attachment["blocks"]
        self.assertEqual(blocks[0], {"type": "header", "text": {"type": "plain_text",
                                     "text": "FAILED cuda_oom: llama-ft", "emoji": False}})
        cause = blocks[1]["text"]["text"]
        self.assertIn("*Cause*", cause)
        self.assertIn("11: torch.OutOfMemoryError: CUDA out of memory", cause)
        fields = {f["text"].split("\n")[0]: f["text"].split("\n", 1)[1] for f in blocks[2]["fields"]}
        self.assertEqual(fields["*Job*"], "llama-ft (4242)")
        self.assertEqual(fields["*Host*"], "gpu-node17")
        self.assertEqual(fields["*Ended*"], "exit 1 after 2h13m")
        self.assertIn("First action:* smaller batch", blocks[3]["text"]["text"])
        self.assertEqual(blocks[-1]["type"], "context")
        self.assertEqual(self.env.run("outbox", "list").stdout, "")

    def test_slack_colour_says_success(self):
        run_dir, _ = make_run(os.path.join(self.env.root, "ok"), exit_code=0, label="success",
                              lines=["done"], evidence=[])
        with HttpReceiver() as hook:
            p = self.env.run("notify", run_dir, GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/x")
            self.assertEqual(p.returncode, 0, p.stderr)
            payload = json.loads(hook.posts[0][2])
        self.assertEqual(payload["attachments"][0]["color"], "#1a7f37")
        self.assertEqual(payload["attachments"][0]["blocks"][0]["text"]["text"], "succeeded: llama-ft")

    def test_json_format_posts_report_json_and_a_text(self):
        with HttpReceiver() as hook:
            p = self.env.run("notify", self.run_dir, GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/hook",
                             GPUALERT_WEBHOOK_FORMAT="json")
            self.assertEqual(p.returncode, 0, p.stderr)
            body = json.loads(hook.posts[0][2])
        text = body.pop("text")
        with open(os.path.join(self.run_dir, "report.json")) as f:
            report = json.load(f)
        for key, value in report.items():  # its own keys, unchanged
            self.assertEqual(body[key], value, key)
        self.assertTrue(text.startswith("[gpualert] FAILED cuda_oom: torch.OutOfMemoryError"), text)
        self.assertIn("First action: smaller batch", text)
        self.assertIn("output.log on gpu-node17", text)

    def test_no_payload_leaks_a_secret_from_the_evidence(self):
        run_dir, _ = make_run(os.path.join(self.env.root, "leaky"), lines=OOM_LINES,
                              evidence=LEAKY_EVIDENCE)
        bodies = []
        for fmt in ("slack", "json"):
            with HttpReceiver() as hook, HttpReceiver() as push:
                p = self.env.run("notify", run_dir, GPUALERT_WEBHOOK_FORMAT=fmt,
                                 GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/hook",
                                 GPUALERT_NTFY_URL=f"http://127.0.0.1:{push.port}/topic")
                self.assertEqual(p.returncode, 0, p.stderr)
                bodies += [hook.posts[0][2], push.posts[0][2]] + list(push.posts[0][1].values())
        self.assertGreaterEqual(len(bodies), 2 * (2 + 3))  # two bodies and the push's headers, twice
        for body in bodies:
            self.assertNotIn(TOKEN, body if isinstance(body, str) else body.decode())
        # The line itself is there, masked: the check above looked at the right text.
        self.assertIn("CUDA out of memory", json.loads(bodies[0])["attachments"][0]["blocks"][1]["text"]["text"])

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


class NtfyDelivery(unittest.TestCase):
    def setUp(self):
        self.env = Env()
        self.run_dir, _ = make_run(self.env.root, lines=OOM_LINES, evidence=OOM_EVIDENCE)

    def tearDown(self):
        self.env.cleanup()

    def test_failure_is_a_high_priority_push_with_title_and_tags(self):
        with HttpReceiver() as push:
            p = self.env.run("notify", self.run_dir, GPUALERT_NTFY_URL=f"http://127.0.0.1:{push.port}/gpu-jobs")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("ntfy http://127.0.0.1", p.stdout)
            [(path, headers, body)] = push.posts
        self.assertEqual(path, "/gpu-jobs")
        self.assertEqual(headers["Title"], "FAILED cuda_oom: job 4242 llama-ft on gpu-node17")
        self.assertEqual(headers["Priority"], "high")
        self.assertEqual(headers["Tags"], "rotating_light,cuda_oom")
        text = body.decode()
        self.assertIn("Cause: torch.OutOfMemoryError: CUDA out of memory", text)
        self.assertIn("First action: smaller batch", text)
        self.assertEqual(self.env.run("outbox", "list").stdout, "")

    def test_a_title_that_is_not_ascii_goes_as_encoded_words(self):
        run_dir, _ = make_run(os.path.join(self.env.root, "utf8"), name="modèle-日本語",
                              lines=OOM_LINES, evidence=OOM_EVIDENCE)
        with HttpReceiver() as push:
            p = self.env.run("notify", run_dir, GPUALERT_NTFY_URL=f"http://127.0.0.1:{push.port}/t")
            self.assertEqual(p.returncode, 0, p.stderr)
            title = push.posts[0][1]["Title"]
        title.encode("ascii")  # an HTTP header in ASCII, as ntfy expects
        decoded = str(email.header.make_header(email.header.decode_header(title)))
        self.assertEqual(decoded, "FAILED cuda_oom: job 4242 modèle-日本語 on gpu-node17")

    def test_success_is_a_default_priority_push(self):
        run_dir, _ = make_run(os.path.join(self.env.root, "ok"), exit_code=0, label="success",
                              lines=["done"], evidence=[])
        with HttpReceiver() as push:
            p = self.env.run("notify", run_dir, GPUALERT_NTFY_URL=f"http://127.0.0.1:{push.port}/t")
            self.assertEqual(p.returncode, 0, p.stderr)
            headers = push.posts[0][1]
        self.assertEqual(headers["Priority"], "default")
        self.assertEqual(headers["Tags"], "white_check_mark,success")
        self.assertTrue(headers["Title"].startswith("succeeded: "), headers["Title"])

    def test_a_refused_push_is_kept_and_sent_once_by_a_later_flush_to_its_url(self):
        with HttpReceiver(status=503) as push:
            url = f"http://127.0.0.1:{push.port}/gpu-jobs"
            p = self.env.run("notify", self.run_dir, GPUALERT_NTFY_URL=url)
            self.assertEqual(p.returncode, 1)
            self.assertIn("503", p.stderr)
            [entry] = self.env.run("outbox", "list").stdout.splitlines()[1:]
            self.assertIn("ntfy", entry)
            push.status = 200
            # The entry remembers its topic: the flush needs no GPUALERT_NTFY_URL, only a
            # channel configured at all.
            f = self.env.run("outbox", "flush", GPUALERT_WEBHOOK_URL="http://127.0.0.1:9/unused")
            self.assertEqual(f.returncode, 0, f.stderr)
            self.assertEqual(self.env.run("outbox", "flush", GPUALERT_NTFY_URL=url).returncode, 0)
            self.assertEqual(len(push.posts), 2)  # the refused attempt, then exactly one delivery
            self.assertEqual(push.posts[1][1]["Priority"], "high")
        self.assertEqual(self.env.run("outbox", "list").stdout, "")

    def test_run_pushes_the_verdict_of_a_real_job(self):
        logs = os.path.join(self.env.root, "logs")
        with HttpReceiver() as push:
            p = self.env.run("run", "--log-dir", logs, "--", "sh", "-c", "echo 'disk: No space left on device' >&2; exit 1",
                             GPUALERT_NTFY_URL=f"http://127.0.0.1:{push.port}/t")
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(len(push.posts), 1, p.stderr)
            headers = push.posts[0][1]
        self.assertEqual(headers["Priority"], "high")
        self.assertTrue(headers["Title"].startswith("FAILED disk_full"), headers["Title"])

    def test_test_notify_pushes_and_says_so(self):
        with HttpReceiver() as push:
            t = self.env.run("test-notify", GPUALERT_NTFY_URL=f"http://127.0.0.1:{push.port}/t")
            self.assertEqual(t.returncode, 0, t.stderr)
            self.assertIn("ntfy: test message accepted", t.stdout)
            self.assertEqual(len(push.posts), 1)


if __name__ == "__main__":
    unittest.main()
