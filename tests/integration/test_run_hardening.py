"""run against hostile input and faults: bytes that are not UTF-8, secrets in argv and
the environment, a fallback directory another user made, full or unusable directories.
Each test is named after the fault it reproduces; all use the real binary, real
processes and real servers on 127.0.0.1."""
import email
import email.policy
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, RunTestCase  # noqa: E402
from servers import HttpReceiver, SmtpSink  # noqa: E402

EXIT3 = [PY, "-c", "import sys; print('step 1 failed'); sys.exit(3)"]


def run_bytes(args, env, cwd, timeout=60):
    """subprocess.run with argv/env/cwd as bytes (Linux passes bytes, not text)."""
    return subprocess.run([os.fsencode(a) if isinstance(a, str) else a for a in args],
                          capture_output=True, env=env, cwd=cwd, timeout=timeout)


def mail_parts(raw):
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    text = msg.get_body(preferencelist=("plain",)).get_content()
    html = msg.get_body(preferencelist=("html",)).get_content()
    return msg, text, html


class NonUtf8(RunTestCase):
    """Issue: any non-UTF-8 byte in argv, cwd, --name or $LOGNAME aborted the wrapper
    (134, SIGABRT) after the job ended, with no report and no notice."""

    def env_bytes(self, extra=None):
        env = {os.fsencode(k): os.fsencode(v) for k, v in self.env.items()}
        env.update(extra or {})
        return env

    def check_exact_report(self, p, key, expected):
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertNotIn(b"terminate called", p.stderr)
        run_dir = self.only_run_dir()
        self.assertIsNotNone(run_dir)
        rep = self.report(run_dir)
        self.assertEqual(rep["exit_code"], 3)
        # Readable and exact: the bytes come back from KEY_b64.
        import base64
        if isinstance(expected, list):
            self.assertEqual([base64.b64decode(x) for x in rep[key + "_b64"]], expected)
            self.assertTrue(all(isinstance(x, str) for x in rep[key]))
        else:
            self.assertEqual(base64.b64decode(rep[key + "_b64"]), expected)
            self.assertIn("\ufffd", rep[key])
        return rep

    def run_b(self, opts=(), args=EXIT3, env=None, cwd=None):
        cmd = [BIN, "run", "--log-dir", self.logs, "--notify", "always", *opts, "--", *args]
        return run_bytes(cmd, env or self.env_bytes(), cwd or self.tmp)

    def test_argv_with_latin1_byte_keeps_status_and_report(self):
        args = [*EXIT3, b"caf\xe9.txt"]
        p = self.run_b(args=args)
        self.check_exact_report(p, "argv", [os.fsencode(a) for a in args])
        # The notice was built and queued (no channel configured: the outbox).
        self.assertTrue(os.listdir(os.path.join(self.state, "outbox", "new")))

    def test_cwd_with_invalid_byte(self):
        cwd = os.path.join(os.fsencode(self.tmp), b"dir\xff")
        os.mkdir(cwd)
        p = self.run_b(cwd=cwd)
        self.check_exact_report(p, "cwd", cwd)

    def test_name_with_invalid_byte(self):
        p = self.run_b(opts=[b"--name", b"job\xc3("])
        self.check_exact_report(p, "name", b"job\xc3(")

    def test_logname_with_invalid_byte(self):
        p = self.run_b(env=self.env_bytes({b"LOGNAME": b"j\xf6rg", b"USER": b"j\xf6rg"}))
        self.check_exact_report(p, "user", b"j\xf6rg")


SECRET_JOB = """
import sys
print("connecting with password=hunter2 to the hub")
print("RuntimeError: boom", file=sys.stderr)
sys.exit(1)
"""
HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
SECRETS = ["hunter2", "p4ssw0rd", HF]


class SecretsMasked(RunTestCase):
    """Issue: report.json kept argv verbatim and the JSON webhook posted it; env was
    filtered by variable name only."""

    def test_password_url_and_token_masked_in_report_webhook_and_mail(self):
        args = [PY, "-c", SECRET_JOB, "--password=hunter2",
                "--url", "https://alice:p4ssw0rd@hub.example.com/repo"]
        with SmtpSink() as smtp, HttpReceiver() as hook:
            env = dict(self.env, HF_TOKEN=HF, MASTER_ADDR="https://bob:p4ssw0rd@10.0.0.1",
                       GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}", GPUALERT_TO="me@example.org",
                       GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/hook",
                       GPUALERT_WEBHOOK_FORMAT="json")
            cmd = [BIN, "run", "--log-dir", self.logs, "--", *args]
            p = subprocess.run(cmd, capture_output=True, env=env, cwd=self.tmp, timeout=120)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(len(smtp.messages), 1)
            self.assertEqual(len(hook.posts), 1)
            raw_mail = smtp.messages[0][2]
            hook_body = hook.posts[0][2].decode()
        run_dir = self.only_run_dir()
        with open(os.path.join(run_dir, "report.json")) as f:
            report_text = f.read()
        rep = json.loads(report_text)
        self.assertIn("MASTER_ADDR", rep["env"])  # kept, with its password masked
        _, text, html = mail_parts(raw_mail)
        for where, body in (("report.json", report_text), ("webhook", hook_body),
                            ("mail text", text), ("mail html", html)):
            for secret in SECRETS:
                self.assertNotIn(secret, body, f"{secret} in {where}")
        self.assertIn("********", report_text)
        self.assertIn("--password=********", rep["argv"])
        # The header gpualert writes into output.log is masked too; the job's own lines stay raw.
        with open(os.path.join(run_dir, "output.log")) as f:
            log = f.read()
        header = log[:log.index("---- job output begins ----")]
        for secret in SECRETS:
            self.assertNotIn(secret, header)
        self.assertIn("password=hunter2 to the hub", log)


def default_internal_signals():
    """In a child before exec: glibc's internal signals 32 and 33 back to SIG_DFL (Python's
    signal module refuses them; the kernel takes them through rt_sigaction)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    dfl = ctypes.create_string_buffer(32)  # struct kernel_sigaction, all zero: SIG_DFL
    for sig in (32, 33):
        libc.syscall(13, sig, dfl, None, 8)  # SYS_rt_sigaction on x86_64


class SignalsTheJobGets(RunTestCase):
    """Issue: signals 32 and 33 reached the job ignored (glibc's spawn ignores its own
    internal signals unless told otherwise): `kill -32` killed the bare job, but under
    gpualert the job went on and the wrapper exited 0."""

    def test_glibc_internal_signals_reach_the_job_with_their_default(self):
        # Started with 32 and 33 at their default, as from a login shell (under `make`,
        # whose recipes glibc's posix_spawn starts, they come ignored, and then they stay
        # ignored for the job, as for a bare one: that case is the test below).
        for sig in (32, 33):
            job = ["sh", "-c", f"kill -{sig} $$; echo survived"]
            p, run_dir = self.run_wrapped(job, preexec_fn=default_internal_signals)
            self.assertEqual(p.returncode, -sig, p.stderr)
            self.assertNotIn(b"survived", p.stdout)
            self.assertEqual(self.report(run_dir)["signal"], f"SIG{sig}")
            os.rename(run_dir, run_dir + ".done")

    def test_a_signal_ignored_at_start_stays_ignored(self):
        import signal as pysignal
        sig = pysignal.SIGRTMIN + 6
        p, _ = self.run_wrapped(["sh", "-c", f"kill -{sig} $$; exit 5"],
                                preexec_fn=lambda: pysignal.signal(sig, pysignal.SIG_IGN))
        self.assertEqual(p.returncode, 5, p.stderr)

    def test_sigprof_name_written_is_one_classify_reads(self):
        p, run_dir = self.run_wrapped(["sh", "-c", "kill -PROF $$"])
        self.assertEqual(p.returncode, -27)  # SIGPROF on Linux
        self.assertEqual(self.report(run_dir)["signal"], "SIGPROF")
        c = subprocess.run([BIN, "classify", "--signal", "SIGPROF", "--json",
                            os.path.join(run_dir, "output.log")], capture_output=True, env=self.env)
        self.assertEqual(c.returncode, 0, c.stderr)


class NoticeNotLost(RunTestCase):
    """Faults at the end of a run must not cost its notice."""

    def smtp_env(self, smtp, **extra):
        return dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}",
                    GPUALERT_TO="me@example.org", **extra)

    def test_state_dir_is_a_regular_file_mail_is_sent_directly(self):
        state_file = os.path.join(self.tmp, "state-file")
        with open(state_file, "w") as f:
            f.write("not a directory\n")
        with SmtpSink() as smtp:
            cmd = [BIN, "run", "--log-dir", self.logs, "--", *EXIT3]
            p = subprocess.run(cmd, capture_output=True, timeout=120, cwd=self.tmp,
                               env=self.smtp_env(smtp, GPUALERT_STATE_DIR=state_file))
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertEqual(len(smtp.messages), 1, p.stderr)
        self.assertIn(b"sent directly", p.stderr)
        self.assertIn(b"outbox could not be written", p.stderr)

    @unittest.skipUnless(os.geteuid() == 0, "mounting a small tmpfs needs root")
    def test_log_device_full_at_the_end_disk_full_mail_arrives(self):
        small = os.path.join(self.tmp, "small")
        os.mkdir(small)
        # The job's checkpoint fills the log's own device (a 256 KiB tmpfs in a
        # private mount namespace); its traceback still fits in the log's last page,
        # but report.json can't be written beside the log and goes to the state dir:
        # the notice must follow it.
        job = ("import sys\n"
               "print('epoch 1 done, saving checkpoint', flush=True)\n"
               "open(sys.argv[1] + '/ckpt.pt', 'wb').write(b'0' * (1 << 20))\n")
        script = (f'mount -t tmpfs -o size=256k tmpfs "$1" && shift && exec "$@"')
        with SmtpSink() as smtp:
            cmd = ["unshare", "-m", "sh", "-c", script, "sh", small,
                   BIN, "run", "--log-dir", os.path.join(small, "logs"), "--",
                   PY, "-c", job, small]
            p = subprocess.run(cmd, capture_output=True, timeout=120, cwd=self.tmp,
                               env=self.smtp_env(smtp))
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(len(smtp.messages), 1, p.stderr)
            msg, text, _ = mail_parts(smtp.messages[0][2])
        self.assertIn(b"the report is in", p.stderr)
        self.assertIn("disk_full", msg["Subject"])

    def test_helper_missing_notice_is_queued_and_sent_by_a_later_flush(self):
        import shutil
        alone = os.path.join(self.tmp, "bin")
        os.mkdir(alone)
        shutil.copy(BIN, alone)  # gpualert copied alone onto PATH, without gpualert-notify
        with SmtpSink() as smtp:
            env = self.smtp_env(smtp)
            cmd = [os.path.join(alone, "gpualert"), "run", "--log-dir", self.logs, "--", *EXIT3]
            p = subprocess.run(cmd, capture_output=True, timeout=120, cwd=self.tmp, env=env)
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertIn(b"gpualert-notify is not installed beside gpualert", p.stderr)
            self.assertIn(b"queued", p.stderr)
            self.assertEqual(smtp.messages, [])
            listed = subprocess.run([BIN, "outbox", "list"], capture_output=True, env=env, timeout=60)
            self.assertIn(b"\tpending\t", listed.stdout)
            flush = subprocess.run([BIN, "outbox", "flush"], capture_output=True, env=env, timeout=60)
            self.assertEqual(flush.returncode, 0, flush.stderr)
            self.assertEqual(len(smtp.messages), 1)
            msg, _, _ = mail_parts(smtp.messages[0][2])
            self.assertIn("exit 3", msg["Subject"])
        listed = subprocess.run([BIN, "outbox", "list"], capture_output=True, env=env, timeout=60)
        self.assertEqual(listed.stdout, b"")

    def test_server_size_limit_mail_arrives_without_what_does_not_fit(self):
        art = os.path.join(self.tmp, "art")
        os.mkdir(art)
        for i in range(6):
            with open(os.path.join(art, f"ckpt-{i}.bin"), "wb") as f:
                f.write(os.urandom(3 << 20))
        with SmtpSink(size_limit=5_000_000) as smtp:
            cmd = [BIN, "run", "--log-dir", self.logs, "--attach", "art/*", "--", *EXIT3]
            p = subprocess.run(cmd, capture_output=True, timeout=120, cwd=self.tmp,
                               env=self.smtp_env(smtp))
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertEqual(len(smtp.messages), 1, p.stderr)
            raw = smtp.messages[0][2]
        self.assertLessEqual(len(raw), 5_000_000)
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        names = [a.get_filename() for a in msg.iter_attachments()]
        self.assertIn("output.log.gz", names)
        note = "\n".join(part.get_content() for part in msg.walk()
                         if part.get_content_type() == "text/plain")
        self.assertIn("refused this message for its size", note)
        left_out = [n for n in (f"ckpt-{i}.bin" for i in range(6)) if n not in names]
        self.assertTrue(left_out)
        for n in left_out:
            self.assertIn(n, note)  # attached then dropped, or over budget: named either way
        self.assertFalse(os.listdir(os.path.join(self.state, "outbox", "new")))

    def test_bad_recipient_is_a_usage_error_before_the_job(self):
        marker = os.path.join(self.tmp, "ran")
        env = dict(self.env, GPUALERT_TO="ok@example.com, bad address")
        p, _ = self.run_wrapped(["touch", marker], env=env)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"'bad address'", p.stderr)
        self.assertFalse(os.path.exists(marker))

    def test_recipient_refused_by_the_server_the_others_get_the_mail(self):
        with SmtpSink(refuse_rcpt={"gone@example.com"}) as smtp:
            env = dict(self.smtp_env(smtp))
            env["GPUALERT_TO"] = "gone@example.com, ok@example.com"
            cmd = [BIN, "run", "--log-dir", self.logs, "--", *EXIT3]
            p = subprocess.run(cmd, capture_output=True, timeout=120, cwd=self.tmp, env=env)
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertEqual(len(smtp.messages), 1, p.stderr)
            self.assertEqual(smtp.messages[0][1], ["ok@example.com"])


class UsageErrors(RunTestCase):
    """Issue 13: --config pointing at a directory or /dev/zero was accepted as an
    empty config. Issue 6: --to is checked like GPUALERT_TO."""

    def test_config_that_is_not_a_file_and_bad_to_exit_2_before_the_job(self):
        marker = os.path.join(self.tmp, "ran")
        for opts in (["--config", "/dev/zero"], ["--config", self.tmp],
                     ["--to", "j\u00f6rg@example.com"], ["--to", "nobody"]):
            p, _ = self.run_wrapped(["touch", marker], opts=opts)
            self.assertEqual(p.returncode, 2, (opts, p.stderr))
            self.assertIn(b"gpualert: error:", p.stderr)
            self.assertFalse(os.path.exists(marker), opts)


class OutboxEntries(RunTestCase):
    """Issue 16: a queued webhook notice forgot its URL; mail sent from the outbox said
    'To: undisclosed-recipients:;'; with the webhook failing and SMTP working, run's
    last line named only the failure."""

    def test_queued_without_recipients_flushed_mail_names_them(self):
        cmd = [BIN, "run", "--log-dir", self.logs, "--", *EXIT3]
        p = subprocess.run(cmd, capture_output=True, env=self.env, cwd=self.tmp, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        with SmtpSink() as smtp:
            env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}",
                       GPUALERT_TO="me@example.org")
            f = subprocess.run([BIN, "outbox", "flush"], capture_output=True, env=env, timeout=60)
            self.assertEqual(f.returncode, 0, f.stderr)
            self.assertEqual(len(smtp.messages), 1)
            msg, _, _ = mail_parts(smtp.messages[0][2])
        self.assertEqual(msg["To"], "me@example.org")

    def test_webhook_entry_keeps_its_url_and_partial_delivery_names_both(self):
        with SmtpSink() as smtp, HttpReceiver(status=500) as hook:
            env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}",
                       GPUALERT_TO="me@example.org",
                       GPUALERT_WEBHOOK_URL=f"http://127.0.0.1:{hook.port}/hook")
            cmd = [BIN, "run", "--log-dir", self.logs, "--", *EXIT3]
            p = subprocess.run(cmd, capture_output=True, env=env, cwd=self.tmp, timeout=60)
            self.assertEqual(p.returncode, 3)
            self.assertEqual(len(smtp.messages), 1)
            last = p.stderr.decode().strip().splitlines()[-1]
            self.assertIn(f"notified smtp://127.0.0.1:{smtp.port}", last)
            self.assertIn("webhook", last)
            hook.status = 200
            env.pop("GPUALERT_WEBHOOK_URL")  # a later flush from cron, without it
            f = subprocess.run([BIN, "outbox", "flush"], capture_output=True, env=env, timeout=60)
            self.assertEqual(f.returncode, 0, f.stderr)
            self.assertEqual(len(hook.posts), 2)


class OneFlusher(RunTestCase):
    """Issue 14: every run started its own background flush (three runs, three
    flushers against one silent server): one at a time is enough."""

    def test_background_flush_leaves_it_to_the_one_running(self):
        import fcntl
        cmd = [BIN, "run", "--log-dir", self.logs, "--", *EXIT3]
        p = subprocess.run(cmd, capture_output=True, env=self.env, cwd=self.tmp, timeout=60)
        self.assertEqual(p.returncode, 3)  # queued: no channel configured
        with SmtpSink() as smtp:
            env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}",
                       GPUALERT_TO="me@example.org")
            lock = os.path.join(self.state, "outbox", "flush.lock")
            with open(lock, "a") as held:  # a flush is running
                fcntl.flock(held, fcntl.LOCK_EX)
                f = subprocess.run([BIN, "outbox", "flush", "--if-idle"], capture_output=True,
                                   env=env, timeout=60)
                self.assertEqual(f.returncode, 0, f.stderr)
                self.assertEqual(smtp.messages, [])
            f = subprocess.run([BIN, "outbox", "flush", "--if-idle"], capture_output=True,
                               env=env, timeout=60)
            self.assertEqual(f.returncode, 0, f.stderr)
            self.assertEqual(len(smtp.messages), 1)


class DeliveryChild(RunTestCase):
    """Issue 15: a killed `outbox flush` left its delivery child running past the
    deadline, holding the message's lock."""

    def test_delivery_child_dies_with_a_killed_flush(self):
        import signal as pysignal
        import time
        cmd = [BIN, "run", "--log-dir", self.logs, "--", *EXIT3]
        p = subprocess.run(cmd, capture_output=True, env=self.env, cwd=self.tmp, timeout=60)
        self.assertEqual(p.returncode, 3)  # queued: no channel configured
        with SmtpSink(hang=True) as silent:
            env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{silent.port}",
                       GPUALERT_TO="me@example.org", GPUALERT_NOTIFY_TIMEOUT="300s")
            flush = subprocess.Popen([BIN, "outbox", "flush"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            children = f"/proc/{flush.pid}/task/{flush.pid}/children"
            child = None
            for _ in range(500):  # until the delivery child is talking to the server
                with open(children) as f:
                    pids = f.read().split()
                if pids and silent.handler.hung.is_set():
                    child = int(pids[0])
                    break
                time.sleep(0.02)
            self.assertIsNotNone(child, "no delivery child started")
            flush.send_signal(pysignal.SIGKILL)
            flush.wait()
            # Far less than the 300 s deadline: it dies with its parent.
            for _ in range(600):
                if not os.path.exists(f"/proc/{child}") or \
                        open(f"/proc/{child}/stat").read().split()[2] == "Z":
                    break
                time.sleep(0.1)
            alive = os.path.exists(f"/proc/{child}") and \
                open(f"/proc/{child}/stat").read().split()[2] != "Z"
            if alive:
                os.kill(child, pysignal.SIGKILL)
            self.assertFalse(alive, "the delivery child outlived its killed flush")


OTHER_USER = "gpualert-other"


def other_user_uid():
    """A real second user (created once, as root), or None where we can't."""
    import pwd
    try:
        return pwd.getpwnam(OTHER_USER).pw_uid
    except KeyError:
        pass
    if os.geteuid() != 0:
        return None
    r = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        OTHER_USER], capture_output=True)
    if r.returncode != 0:
        return None
    return pwd.getpwnam(OTHER_USER).pw_uid


class PrivateFallback(RunTestCase):
    """Issue: $TMPDIR/gpualert-$UID/runs was used although another user had made it
    first (0777): they read the victim's log and, with a planted symlink
    report.json.tmp.<pid>, made the victim's gpualert overwrite a file of its own."""

    def test_fallback_made_by_another_user_is_not_written_into(self):
        uid = other_user_uid()
        if uid is None or uid == os.geteuid():
            self.skipTest("needs root to create a second user")
        tmpdir = os.path.join(self.tmp, "shared-tmp")
        os.mkdir(tmpdir)
        os.chmod(tmpdir, 0o1777)
        trap = os.path.join(tmpdir, f"gpualert-{os.geteuid()}")
        os.mkdir(trap)
        os.makedirs(os.path.join(trap, "runs"))
        for d in (trap, os.path.join(trap, "runs")):
            os.chown(d, uid, -1)
            os.chmod(d, 0o777)
        not_a_dir = os.path.join(self.tmp, "file")
        with open(not_a_dir, "w") as f:
            f.write("x")
        env = dict(self.env, TMPDIR=tmpdir, GPUALERT_STATE_DIR=os.path.join(not_a_dir, "state"))
        cmd = [BIN, "run", "--notify", "never", "--log-dir", os.path.join(not_a_dir, "logs"),
               "--", *EXIT3]
        p = subprocess.run(cmd, capture_output=True, env=env, cwd=self.tmp, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(os.listdir(os.path.join(trap, "runs")), [], "wrote into another user's dir")
        self.assertIn(b"not to this user", p.stderr)

    def test_own_fallback_is_private(self):
        tmpdir = os.path.join(self.tmp, "shared-tmp")
        os.mkdir(tmpdir)
        not_a_dir = os.path.join(self.tmp, "file")
        with open(not_a_dir, "w") as f:
            f.write("x")
        env = dict(self.env, TMPDIR=tmpdir, GPUALERT_STATE_DIR=os.path.join(not_a_dir, "state"))
        cmd = [BIN, "run", "--notify", "never", "--log-dir", os.path.join(not_a_dir, "logs"),
               "--", *EXIT3]
        p = subprocess.run(cmd, capture_output=True, env=env, cwd=self.tmp, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        mine = os.path.join(tmpdir, f"gpualert-{os.geteuid()}")
        self.assertEqual(os.stat(mine).st_mode & 0o777, 0o700)
        self.assertEqual(len(os.listdir(os.path.join(mine, "runs"))), 1)

    def test_planted_temp_symlink_is_not_followed(self):
        # The job puts a link at report.json.tmp.<gpualert's pid> in its own run dir
        # (replacing the file gpualert made ready there), as someone who could write
        # there would: report.json is written beside it, and is not that link.
        victim = os.path.join(self.tmp, "victim.txt")
        with open(victim, "w") as f:
            f.write("precious\n")
        script = ("import os, sys, time\n"
                  "d = os.environ['GPUALERT_RUN_DIR']\n"
                  "tmp = os.path.join(d, f'report.json.tmp.{os.getppid()}')\n"
                  "try:\n"
                  "    os.unlink(tmp)\n"
                  "except FileNotFoundError:\n"
                  "    pass\n"
                  "os.symlink(sys.argv[1], tmp)\n"
                  "sys.exit(3)\n")
        p, run_dir = self.run_wrapped([PY, "-c", script, victim])
        self.assertEqual(p.returncode, 3, p.stderr)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertFalse(os.path.islink(os.path.join(run_dir, "report.json")))
        self.assertEqual(self.report(run_dir)["exit_code"], 3)


if __name__ == "__main__":
    unittest.main()
