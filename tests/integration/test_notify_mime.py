"""The message gpualert writes, read back by Python's email package with its strict policy
(any defect raises): every part decodes to what was put in, attachments carry their names
and types, a non-ASCII subject round-trips, and the chart is the HTML's related image.
Delivered through a real SMTP server on loopback, as a notice is."""
import email.parser
import email.policy
import gzip
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from notify_env import Env
from runfixture import OOM_EVIDENCE, OOM_LINES, make_run
from servers import SmtpSink

NAME = "modèle-日本語-training «ü»"
# Lines a naive encoder gets wrong: '=' signs, a leading dot, a line far over 76
# characters, trailing blanks, non-ASCII text.
TRICKY = [
    "lr=3e-4 beta==0.9 =?UTF-8?Q?not-a-word?=",
    ".a line that starts with a dot",
    "x" * 300 + " end",
    "trailing blanks   ",
    "température 42 °C — π ≈ 3.14159 日本語",
]
TIMELINE = [
    {"type": "inventory", "uuid": "GPU-a", "memory_total": 80 * 2**30},
    {"type": "sample", "t": 0, "uuid": "GPU-a", "memory_used": 2**30, "utilization": 10},
    {"type": "sample", "t": 30, "uuid": "GPU-a", "memory_used": 60 * 2**30, "utilization": 95},
    {"type": "sample", "t": 60, "uuid": "GPU-a", "memory_used": 79 * 2**30, "utilization": 99},
]


class MessageFormat(unittest.TestCase):
    def setUp(self):
        self.env = Env()

    def tearDown(self):
        self.env.cleanup()

    def send(self, run_dir, *args):
        with SmtpSink() as sink:
            p = self.env.run("notify", *args, run_dir, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{sink.port}")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(sink.messages), 1)
            return sink.messages[0][2]

    def parse_strict(self, raw):
        msg = email.parser.BytesParser(policy=email.policy.strict).parsebytes(raw)
        for part in msg.walk():  # strict raises on header defects; bodies are checked here
            self.assertEqual(part.defects, [], part.get_content_type())
        return msg

    def test_every_part_decodes_to_what_was_put_in(self):
        run_dir, cwd = make_run(self.env.root, name=NAME, lines=TRICKY + OOM_LINES, evidence=OOM_EVIDENCE)
        with open(os.path.join(run_dir, "gpus.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in TIMELINE))
        report_path = os.path.join(run_dir, "report.json")
        with open(report_path) as f:
            report = json.load(f)
        report["gpus"] = [{"job_index": 0, "uuid": "GPU-a", "name": "NVIDIA H200",
                           "memory_total": 80 * 2**30, "memory_used_peak": 79 * 2**30}]
        with open(report_path, "w") as f:
            json.dump(report, f)
        blob = bytes(range(256)) * 64 + b"\r\n.\r\n" + os.urandom(5000)  # every byte value, SMTP's end mark
        with open(os.path.join(cwd, "weights.bin"), "wb") as f:
            f.write(blob)
        metrics = '{"loss": 2.1, "note": "ünïcode"}\n'.encode()
        with open(os.path.join(cwd, "metrics.json"), "wb") as f:
            f.write(metrics)
        raw = self.send(run_dir, "--attach", "metrics.json", "--attach", "weights.bin")
        msg = self.parse_strict(raw)

        # Headers: ASCII on the wire, the subject back in full.
        raw.split(b"\r\n\r\n", 1)[0].decode("ascii")
        self.assertIn(f"job 4242 {NAME} on gpu-node17", msg["Subject"])
        self.assertEqual(str(msg["To"]), "alice@example.com")
        self.assertEqual(msg["MIME-Version"], "1.0")

        # The structure, part by part.
        self.assertEqual(msg.get_content_type(), "multipart/mixed")
        body, *attachments = msg.iter_parts()
        self.assertEqual(body.get_content_type(), "multipart/alternative")
        plain, related = body.iter_parts()
        self.assertEqual(plain.get_content_type(), "text/plain")
        self.assertEqual(plain.get_content_charset(), "utf-8")
        self.assertEqual(related.get_content_type(), "multipart/related")
        html, png = related.iter_parts()
        self.assertEqual(html.get_content_type(), "text/html")
        self.assertEqual(png.get_content_type(), "image/png")

        # The text parts: every tricky line intact (the excerpt shows the log's last lines).
        text = plain.get_content()
        for line in TRICKY[:3] + [TRICKY[4]]:
            self.assertIn(line, text)
        self.assertIn(NAME, text)
        self.assertIn("torch.OutOfMemoryError: CUDA out of memory", html.get_content())

        # The chart: a PNG the HTML refers to by its Content-ID.
        self.assertTrue(png.get_content().startswith(b"\x89PNG\r\n\x1a\n"))
        cid = png["Content-ID"].strip("<>")
        self.assertIn(f'src="cid:{cid}"', html.get_content())

        # Attachments: names, types, and the bytes themselves.
        got = {a.get_filename(): a for a in attachments}
        self.assertEqual(sorted(got), ["metrics.json", "output.log.gz", "weights.bin"])
        self.assertEqual(got["output.log.gz"].get_content_type(), "application/gzip")
        self.assertEqual(got["metrics.json"].get_content_type(), "application/json")
        self.assertEqual(got["weights.bin"].get_content_type(), "application/octet-stream")
        for a in attachments:
            self.assertEqual(a.get_content_disposition(), "attachment")
        with open(os.path.join(run_dir, "output.log"), "rb") as f:
            self.assertEqual(gzip.decompress(got["output.log.gz"].get_payload(decode=True)), f.read())
        self.assertEqual(got["metrics.json"].get_payload(decode=True), metrics)
        self.assertEqual(got["weights.bin"].get_payload(decode=True), blob)

    def test_lines_stay_within_the_limits_and_boundaries_are_unique(self):
        run_dir, _ = make_run(self.env.root, name=NAME, lines=TRICKY + OOM_LINES, evidence=OOM_EVIDENCE)
        raw = self.send(run_dir)
        self.parse_strict(raw)
        lines = raw.split(b"\r\n")
        self.assertNotIn(b"\n", b"".join(lines))  # CRLF only, no bare LF
        head = raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
        self.assertLessEqual(max(len(line) for line in head), 998)  # RFC 5322 2.1.1
        body = lines[len(head) + 1:]
        self.assertLessEqual(max(len(line) for line in body), 76)  # encoded lines (RFC 2045)
        boundaries = re.findall(rb'boundary="([^"]+)"', raw)
        self.assertEqual(len(boundaries), len(set(boundaries)))
        for b in boundaries:
            delimiters = [line for line in lines if line.startswith(b"--" + b)]
            self.assertEqual(delimiters[-1], b"--" + b + b"--")
            self.assertTrue(all(d in (b"--" + b, b"--" + b + b"--") for d in delimiters))


if __name__ == "__main__":
    unittest.main()
