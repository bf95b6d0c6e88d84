"""SMTP delivery of run notices against real aiosmtpd servers on 127.0.0.1.

Covers message structure, subject, evidence, secrets, header injection, RFC 2047,
attachments and budget, STARTTLS, AUTH, a 552 rejection, a silent server, a
refused port, the embedded default (outbox only) and outbox flush.
"""
import gzip
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from notify_env import BIN, Env, parse, text_parts
from runfixture import OOM_EVIDENCE, OOM_LINES, make_run
from servers import SilentServer, SmtpSink, closed_port, make_cert


def smtp_url(port):
    return f"smtp://127.0.0.1:{port}"


class SmtpDelivery(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.certdir = Env()
        cls.cert, cls.key = make_cert(cls.certdir.root)

    @classmethod
    def tearDownClass(cls):
        cls.certdir.cleanup()

    def setUp(self):
        self.env = Env()

    def tearDown(self):
        self.env.cleanup()

    def oom_run(self, **kw):
        kw.setdefault("lines", OOM_LINES)
        kw.setdefault("evidence", OOM_EVIDENCE)
        kw.setdefault("fields", {"requested": "20.00 GiB"})
        return make_run(self.env.root, **kw)

    def test_message_structure_subject_evidence_and_masking(self):
        run_dir, _ = self.oom_run()
        with SmtpSink() as sink:
            p = self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(sink.port))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(sink.messages), 1)
            mail_from, rcpts, raw = sink.messages[0]
        self.assertEqual(rcpts, ["alice@example.com"])
        self.assertEqual(mail_from, "gpualert@test.invalid")
        msg = parse(raw)
        self.assertEqual(msg.defects, [])
        self.assertEqual(msg["Subject"], "[gpualert] FAILED cuda_oom: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB | job 4242 llama-ft on gpu-node17 (exit 1 after 2h13m)")
        self.assertEqual(msg.get_content_type(), "multipart/mixed")
        parts = list(msg.iter_parts())
        self.assertEqual(parts[0].get_content_type(), "multipart/alternative")
        self.assertEqual([p.get_content_type() for p in parts[0].iter_parts()], ["text/plain", "text/html"])
        self.assertEqual(parts[1].get_filename(), "output.log.gz")
        log = gzip.decompress(parts[1].get_content())
        with open(os.path.join(run_dir, "output.log"), "rb") as f:
            self.assertEqual(log, f.read())
        plain, html = text_parts(msg)
        self.assertIn("First action: smaller batch", plain)
        self.assertIn(">      11 | torch.OutOfMemoryError: CUDA out of memory", plain)
        self.assertIn("     10 | Traceback (most recent call last):", plain)  # context
        self.assertIn("requested: 20.00 GiB", plain)
        self.assertIn("SLURM_JOB_ID=4242", plain)
        self.assertIn("CUDA_VISIBLE_DEVICES=0,1", plain)
        self.assertIn("\n  100%\n", plain)  # \r redraws collapsed to the last one, ANSI stripped
        self.assertNotIn("\x1b", plain)
        for secret in ("hf_abcdefghijklmnopqrstuvwxyz0123", "hunter2", "sekretbearertoken123"):
            self.assertNotIn(secret, plain)
            self.assertNotIn(secret, html)
        self.assertIn("HF_TOKEN=********", plain)
        self.assertIn("torch.OutOfMemoryError", html)
        self.assertNotIn("<script", html)
        self.assertNotIn("http://", html)  # no external resources
        # Delivered: the entry left the outbox, a copy is in sent/.
        self.assertEqual(self.env.run("outbox", "list").stdout, "")
        self.assertEqual(len(os.listdir(os.path.join(self.env.state, "sent"))), 1)

    def test_success_and_signal_subjects(self):
        run_dir, _ = make_run(self.env.root, name="tiny", lines=["ok"], exit_code=0, label="success",
                              duration_s=302)
        with SmtpSink() as sink:
            self.assertEqual(self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(sink.port)).returncode, 0)
            run2 = Env()
            try:
                run_dir2, _ = make_run(run2.root, name="big", lines=["x"], exit_code=None, signal="SIGKILL",
                                       label="host_oom", duration_s=45)
                self.assertEqual(self.env.run("notify", run_dir2, GPUALERT_SMTP_URL=smtp_url(sink.port)).returncode, 0)
            finally:
                run2.cleanup()
            subjects = [parse(m[2])["Subject"] for m in sink.messages]
        self.assertEqual(subjects, ["[gpualert] succeeded: job 4242 tiny on gpu-node17 (exit 0 after 5m02s)",
                                    "[gpualert] FAILED host_oom: job 4242 big on gpu-node17 (killed by SIGKILL after 45s)"])

    def test_crlf_in_job_name_cannot_inject_headers(self):
        run_dir, _ = self.oom_run(name="evil\r\nBcc: mallory@example.com\r\nX-Injected: yes")
        with SmtpSink() as sink:
            p = self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(sink.port))
            self.assertEqual(p.returncode, 0, p.stderr)
            _, rcpts, raw = sink.messages[0]
        msg = parse(raw)
        self.assertEqual(rcpts, ["alice@example.com"])
        self.assertIsNone(msg["Bcc"])
        self.assertIsNone(msg["X-Injected"])
        self.assertEqual(msg["Subject"],
                         "[gpualert] FAILED cuda_oom: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB | job 4242 evil Bcc: mallory@example.com X-Injected: yes on gpu-node17 "
                         "(exit 1 after 2h13m)")

    def test_non_ascii_subject_is_rfc2047_encoded(self):
        run_dir, _ = self.oom_run(name="modèle-日本語-training")
        with SmtpSink() as sink:
            self.assertEqual(self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(sink.port)).returncode, 0)
            raw = sink.messages[0][2]
        header_block = raw.split(b"\r\n\r\n", 1)[0]
        header_block.decode("ascii")  # every header byte is ASCII
        self.assertIn(b"=?UTF-8?Q?", header_block)
        self.assertEqual(parse(raw)["Subject"],
                         "[gpualert] FAILED cuda_oom: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB | job 4242 modèle-日本語-training on gpu-node17 "
                         "(exit 1 after 2h13m)")

    def test_attachments_budget_head_tail_and_symlink_outside_cwd(self):
        lines = [f"step {i} loss {i * 0.001:.6f} " + os.urandom(24).hex() for i in range(40000)]  # ~2.8 MB, poorly compressible
        run_dir, cwd = self.oom_run(lines=lines + OOM_LINES, evidence=[])
        with open(os.path.join(cwd, "metrics.json"), "w") as f:
            f.write('{"loss": 2.1}')
        with open(os.path.join(cwd, "model.pt"), "wb") as f:
            f.write(os.urandom(600 * 1024))
        outside = os.path.join(self.env.root, "outside-secret.txt")
        with open(outside, "w") as f:
            f.write("not for mail")
        os.symlink(outside, os.path.join(cwd, "link.txt"))
        with SmtpSink() as sink:
            p = self.env.run("notify", "--budget", "512KiB", "--attach", "*.json", "--attach", "model.pt",
                             "--attach", "link.txt", "--attach", "missing-*.bin", run_dir,
                             GPUALERT_SMTP_URL=smtp_url(sink.port))
            self.assertEqual(p.returncode, 0, p.stderr)
            msg = parse(sink.messages[0][2])
        attached = {part.get_filename(): part.get_content() for part in msg.iter_attachments()}
        self.assertEqual(sorted(attached), ["metrics.json", "output-head-tail.log.gz"])
        self.assertLessEqual(sum(len(v) for v in attached.values()), 512 * 1024)
        cut = gzip.decompress(attached["output-head-tail.log.gz"]).decode()
        self.assertIn("#gpualert# ---- head and tail only:", cut)
        self.assertIn("the full log is " + os.path.join(run_dir, "output.log"), cut)
        self.assertTrue(cut.rstrip().endswith("#gpualert# ---- job output ends ----"))
        plain, html = text_parts(msg)
        self.assertIn("model.pt", plain)
        self.assertIn("over budget", plain)
        self.assertIn("symlink pointing outside the working directory", plain)
        self.assertIn("missing-*.bin", plain)
        self.assertIn("no file matched", plain)
        self.assertNotIn("not for mail", plain)

    def test_starttls_with_private_ca(self):
        run_dir, _ = self.oom_run()
        with SmtpSink(tls=(self.cert, self.key)) as sink:
            p = self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(sink.port), GPUALERT_SMTP_CA_FILE=self.cert)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(sink.messages), 1)
            # Without the CA the certificate cannot be verified: a TLS failure, kept in the outbox.
            p = self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(sink.port))
            self.assertEqual(p.returncode, 1)
            self.assertIn("TLS", p.stderr)
            self.assertEqual(len(sink.messages), 1)
        listing = self.env.run("outbox", "list").stdout.splitlines()[1:]  # under the header
        self.assertEqual(len(listing), 1)
        self.assertIn("TLS", listing[0])

    def test_smtps_implicit_tls(self):
        run_dir, _ = self.oom_run()
        with SmtpSink(implicit_tls=(self.cert, self.key)) as sink:
            p = self.env.run("notify", run_dir, GPUALERT_SMTP_URL=f"smtps://127.0.0.1:{sink.port}",
                             GPUALERT_SMTP_CA_FILE=self.cert)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(sink.messages), 1)

    def test_auth_accepted_and_refused(self):
        run_dir, _ = self.oom_run()
        pw = os.path.join(self.env.root, "smtp-password")
        with open(pw, "w") as f:
            f.write("correct horse\n")
        with SmtpSink(tls=(self.cert, self.key), auth=("alice", "correct horse")) as sink:
            common = dict(GPUALERT_SMTP_URL=smtp_url(sink.port), GPUALERT_SMTP_CA_FILE=self.cert,
                          GPUALERT_SMTP_USER="alice", GPUALERT_SMTP_PASSWORD_FILE=pw)
            p = self.env.run("notify", run_dir, **common)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(sink.messages), 1)
            with open(pw, "w") as f:
                f.write("wrong\n")
            p = self.env.run("notify", run_dir, **common)
            self.assertEqual(p.returncode, 1)
            self.assertIn("AUTH", p.stderr)
            t = self.env.run("test-notify", **common)
            self.assertEqual(t.returncode, 1)
            self.assertIn("AUTH", t.stderr)
            self.assertIn("535", t.stderr)
            self.assertEqual(len(sink.messages), 1)
        self.assertIn("AUTH", self.env.run("outbox", "list").stdout)

    def test_552_rejection_is_kept_with_the_servers_text(self):
        run_dir, _ = self.oom_run()
        with SmtpSink(reject="552 5.3.4 Message too big for system") as sink:
            p = self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(sink.port))
            self.assertEqual(p.returncode, 1)
            self.assertIn("552", p.stderr)
            self.assertIn("Message too big", p.stderr)
            t = self.env.run("test-notify", GPUALERT_SMTP_URL=smtp_url(sink.port))
            self.assertEqual(t.returncode, 1)
            self.assertIn("552 5.3.4 Message too big", t.stderr)
        listing = self.env.run("outbox", "list").stdout.splitlines()[1:]  # under the header
        self.assertEqual(len(listing), 1)
        self.assertIn("552", listing[0])
        self.assertIn("1 attempt", listing[0])

    def test_test_notify_warns_of_a_sender_without_a_domain(self):
        with SmtpSink() as sink:
            bare = self.env.run("test-notify", GPUALERT_SMTP_URL=smtp_url(sink.port),
                                GPUALERT_FROM="alerts@gpubox")
            good = self.env.run("test-notify", GPUALERT_SMTP_URL=smtp_url(sink.port))
        # This relay takes it; the warning says why another may not, and what to set.
        self.assertEqual(bare.returncode, 0, bare.stderr)
        self.assertIn("the sender alerts@gpubox has no domain", bare.stderr)
        self.assertIn("set GPUALERT_FROM", bare.stderr)
        self.assertEqual(good.returncode, 0, good.stderr)
        self.assertNotIn("no domain", good.stderr)

    def test_silent_server_is_cut_at_the_deadline(self):
        run_dir, _ = self.oom_run()
        with SilentServer() as silent:
            p = self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(silent.port), GPUALERT_NOTIFY_TIMEOUT="2s")
        self.assertEqual(p.returncode, 1)
        self.assertLess(p.elapsed, 3.0 + 0.5)
        self.assertGreater(p.elapsed, 1.5)
        self.assertIn("timeout", p.stderr.lower())
        self.assertEqual(len(self.env.outbox_files(".eml")), 1)
        print(f"\n  silent server: notify returned after {p.elapsed:.2f} s (deadline 2 s)", end=" ")

    def test_refused_port_fails_fast_and_says_connect(self):
        run_dir, _ = self.oom_run()
        port = closed_port()
        p = self.env.run("notify", run_dir, GPUALERT_SMTP_URL=smtp_url(port))
        self.assertEqual(p.returncode, 1)
        self.assertIn("connect", p.stderr)
        self.assertLess(p.elapsed, 2.0)
        t = self.env.run("test-notify", GPUALERT_SMTP_URL=smtp_url(port))
        self.assertEqual(t.returncode, 1)
        self.assertIn("connect:", t.stderr)
        self.assertEqual(len(t.stderr.strip().splitlines()), 1)

    def test_embedded_default_then_flush_delivers_each_exactly_once(self):
        run_a, _ = self.oom_run()
        other = Env()
        try:
            run_b, _ = make_run(other.root, name="second", lines=["fine"], exit_code=0, label="success")
            for rd in (run_a, run_b):
                p = self.env.run("notify", rd)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn(os.path.join(self.env.state, "outbox"), p.stdout)
                self.assertIn("GPUALERT_SMTP_URL", p.stdout)
                self.assertEqual(len(p.stdout.strip().splitlines()), 1)
            saved = {}
            for path in self.env.outbox_files(".eml"):
                with open(path, "rb") as f:
                    raw = f.read()
                saved[parse(raw)["Message-ID"]] = raw
            self.assertEqual(len(self.env.run("outbox", "list").stdout.splitlines()[1:]), 2)
            # Flushing with nothing configured keeps both and says why.
            p = self.env.run("outbox", "flush")
            self.assertEqual(p.returncode, 1)
            self.assertEqual(len(self.env.run("outbox", "list").stdout.splitlines()[1:]), 2)
            with SmtpSink() as sink:
                p = self.env.run("outbox", "flush", GPUALERT_SMTP_URL=smtp_url(sink.port))
                self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
                again = self.env.run("outbox", "flush", GPUALERT_SMTP_URL=smtp_url(sink.port))
                self.assertEqual(again.returncode, 0)
                got = sink.messages
        finally:
            other.cleanup()
        self.assertEqual(len(got), 2)
        for _, rcpts, raw in got:
            self.assertEqual(rcpts, ["alice@example.com"])
            # Exactly the saved bytes were sent.
            self.assertEqual(raw.replace(b"\r\n", b"\n"), saved[parse(raw)["Message-ID"]].replace(b"\r\n", b"\n"))
        self.assertEqual(self.env.run("outbox", "list").stdout, "")

    def test_usage_and_config_errors(self):
        p = self.env.run("notify")
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.startswith("gpualert: error:"), p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        p = self.env.run("outbox", "frobnicate")
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.startswith("gpualert: error:"), p.stderr)
        cfg = os.path.join(self.env.root, "broken.toml")
        with open(cfg, "w") as f:
            f.write('smtp_url = "smtp://127.0.0.1:1"\nto = [\n"a@b"\nfrom = \n')
        p = self.env.run("outbox", "list", "--config", cfg)
        self.assertEqual(p.returncode, 2)
        self.assertIn(cfg + ":", p.stderr)
        with open(cfg, "w") as f:
            f.write('smtp_url = "smtp://127.0.0.1:1"\nnotify_timeout = true\n')
        p = self.env.run("outbox", "list", GPUALERT_CONFIG=cfg)
        self.assertEqual(p.returncode, 2)
        self.assertIn(cfg + ":2:", p.stderr)

    def test_config_file_gives_settings_and_environment_overrides_it(self):
        run_dir, _ = self.oom_run()
        with SmtpSink() as sink, SmtpSink() as other:
            cfgdir = os.path.join(self.env.root, "config", "gpualert")
            os.makedirs(cfgdir)
            with open(os.path.join(cfgdir, "config.toml"), "w") as f:
                f.write(f'smtp_url = "{smtp_url(sink.port)}"\nto = ["bob@example.com", "carol@example.com"]\n')
            p = self.env.run("notify", run_dir, GPUALERT_TO=None)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sink.messages[0][1], ["bob@example.com", "carol@example.com"])
            p = self.env.run("notify", "--to", "dave@example.com", run_dir, GPUALERT_SMTP_URL=smtp_url(other.port))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(other.messages[0][1], ["dave@example.com"])
            self.assertEqual(len(sink.messages), 1)


if __name__ == "__main__":
    unittest.main()
