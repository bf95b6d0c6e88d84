"""Signals reach the job exactly once; --timeout stops it; the terminal keeps working."""
import os
import pty
import select
import fcntl
import signal
import struct
import subprocess
import sys
import termios
import time
import unittest

from harness import BIN, PY, RunTestCase, wait_for, write_script

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from servers import SilentServer  # noqa: E402

TRAPPER = """
import os, signal, sys, time
seen = []
def on(sig, frame):
    seen.append(signal.Signals(sig).name)
    print("got", signal.Signals(sig).name, flush=True)
    if sig == signal.SIGTERM:
        time.sleep(0.3)  # a second, duplicate SIGTERM would show up here
        print("seen", ",".join(seen), flush=True)
        sys.exit(7)
signal.signal(signal.SIGUSR1, on)
signal.signal(signal.SIGTERM, on)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""

LAST_LINE_C = r"""
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
  printf("C LAST LINE BEFORE SIGKILL\n");
  kill(getpid(), SIGKILL);
  return 0;
}
"""

IGNORES_TERM = """
import signal, time
signal.signal(signal.SIGTERM, lambda s, f: print("ignoring SIGTERM", flush=True))
print("ready", flush=True)
time.sleep(60)
"""


class Signals(RunTestCase):
    def start(self, args, opts=()):
        cmd = [BIN, "run", "--log-dir", self.logs, "--notify", "never", "-q", *opts, "--", *args]
        return subprocess.Popen(cmd, env=self.env, cwd=self.tmp, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)

    def test_usr1_and_term_reach_the_job_exactly_once(self):
        job = write_script(self.tmp, "trap.py", TRAPPER)
        proc = self.start([PY, job])
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        proc.send_signal(signal.SIGUSR1)
        self.assertEqual(proc.stdout.readline(), b"got SIGUSR1\n")
        proc.send_signal(signal.SIGTERM)
        rest = proc.stdout.read()
        proc.wait(timeout=10)
        self.assertEqual(rest, b"got SIGTERM\nseen SIGUSR1,SIGTERM\n")
        self.assertEqual(proc.returncode, 7)

    def test_signal_reaches_the_whole_job_tree(self):
        # A launcher whose worker is a grandchild: kill on the wrapper reaches the worker.
        job = "sh -c 'trap \"echo worker got TERM; exit 0\" TERM; echo ready; while :; do sleep 0.05; done' & wait"
        proc = self.start(["sh", "-c", job])
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        proc.send_signal(signal.SIGTERM)
        out = proc.stdout.read()
        proc.wait(timeout=10)
        self.assertIn(b"worker got TERM", out)

    def test_job_ignoring_sigterm_keeps_running_until_sender_escalates(self):
        job = write_script(self.tmp, "ign.py", IGNORES_TERM)
        proc = self.start([PY, job])
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.stdout.readline(), b"ignoring SIGTERM\n")
        time.sleep(0.5)
        self.assertIsNone(proc.poll(), "a job that ignores SIGTERM keeps running")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()

    def test_timeout_term_then_kill_for_a_job_that_ignores_term(self):
        job = write_script(self.tmp, "ign.py", IGNORES_TERM)
        t0 = time.monotonic()
        p, run_dir = self.run_wrapped([PY, job], opts=["--timeout", "1s", "--kill-after", "1s"])
        elapsed = time.monotonic() - t0
        self.assertEqual(p.returncode, -signal.SIGKILL)
        self.assertIn(b"ignoring SIGTERM", p.stdout)
        self.assertGreaterEqual(elapsed, 2.0)
        rep = self.report(run_dir)
        self.assertTrue(rep["wrapper_timeout"])
        self.assertEqual(rep["signal"], "SIGKILL")
        log = open(os.path.join(run_dir, "output.log"), "rb").read()
        self.assertIn(b"#gpualert# time limit: --timeout 1.0s expired, sent SIGTERM", log)
        self.assertIn(b"sent SIGKILL", log)

    def test_timeout_with_a_job_that_stops_on_term(self):
        p, run_dir = self.run_wrapped(["sleep", "30"], opts=["--timeout", "500ms"])
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.assertTrue(self.report(run_dir)["wrapper_timeout"])

    def test_no_timeout_means_wrapper_timeout_false(self):
        p, run_dir = self.run_wrapped(["sh", "-c", "kill -TERM $$"])
        self.assertFalse(self.report(run_dir)["wrapper_timeout"])

    def test_a_signal_after_the_job_ended_does_not_change_the_status(self):
        # The job exits 3 at once; a process it left behind signals the wrapper
        # 0.2 s later, while the wrapper drains the pipe that process holds.
        p, run_dir = self.run_wrapped(
            ["sh", "-c", "W=$PPID; (sleep 0.2; kill -USR1 $W) & exit 3"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(self.report(run_dir)["exit_code"], 3)

    def test_a_sigterm_while_the_notice_is_sent_does_not_change_the_status(self):
        # The job exits 0; the relay accepts and never answers, so the wrapper is
        # still delivering when SIGTERM comes, 0.3 s after the job ended.
        done = os.path.join(self.tmp, "job-ended")
        with SilentServer() as silent:
            env = dict(self.env, GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{silent.port}",
                       GPUALERT_TO="me@example.org", GPUALERT_FROM="gpualert@example.org")
            cmd = [BIN, "run", "-q", "--log-dir", self.logs, "--notify", "always",
                   "--notify-timeout", "4s", "--", "sh", "-c", f"touch {done}; exit 0"]
            proc = subprocess.Popen(cmd, env=env, cwd=self.tmp, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            self.assertTrue(wait_for(lambda: os.path.exists(done)))
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=30), 0)
        self.assertEqual(self.report(self.only_run_dir())["exit_code"], 0)


class Terminal(RunTestCase):
    """Runs the wrapper on a real pseudo-terminal, as an interactive shell would."""

    def spawn_on_pty(self, args, size=None, notify="never"):
        pid, fd = pty.fork()
        if pid == 0:
            if size:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
            os.environ.clear()
            os.environ.update(self.env)
            os.chdir(self.tmp)
            os.execv(BIN, [BIN, "run", "--log-dir", self.logs, "--notify", notify, "-q", "--", *args])
        return pid, fd

    def queued_notices(self):
        d = os.path.join(self.state, "outbox", "new")
        return sorted(n for n in os.listdir(d) if n.endswith(".eml")) if os.path.isdir(d) else []

    def interrupt_python_job(self, notify):
        """Ctrl-C at the terminal of a Python job that lets KeyboardInterrupt end it."""
        job = "import time\nprint('ready', flush=True)\ntime.sleep(30)\n"
        pid, fd = self.spawn_on_pty([PY, "-c", job], notify=notify)
        self.read_until(fd, b"ready")
        os.write(fd, b"\x03")
        self.read_until(fd, b"never printed", timeout=5)  # drain until the wrapper is gone
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        run_dir = self.only_run_dir()
        os.rename(run_dir, run_dir + ".done")
        return status, self.report(run_dir + ".done")

    def test_ctrl_c_at_the_terminal_is_not_mailed_under_notify_failure(self):
        status, report = self.interrupt_python_job("failure")
        self.assertEqual(os.waitstatus_to_exitcode(status), -signal.SIGINT)
        self.assertEqual(report["label"], "cancelled")
        self.assertTrue(report["interactive"])
        self.assertEqual(self.queued_notices(), [])
        # The same ending under --notify always is mailed (here: kept in the outbox, as
        # no SMTP is configured), so the test above can fail.
        status, report = self.interrupt_python_job("always")
        self.assertEqual(report["label"], "cancelled")
        self.assertEqual(len(self.queued_notices()), 1)

    @staticmethod
    def read_until(fd, needle, timeout=10):
        buf = b""
        deadline = time.monotonic() + timeout
        while needle not in buf and time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
        return buf

    def test_job_reads_the_terminal_like_a_pdb_prompt(self):
        job = "import sys; print('(Pdb) ', end='', flush=True); line = sys.stdin.readline(); print('answer=' + line.strip())"
        pid, fd = self.spawn_on_pty([PY, "-c", job])
        self.assertIn(b"(Pdb)", self.read_until(fd, b"(Pdb)"))
        os.write(fd, b"continue\n")
        self.assertIn(b"answer=continue", self.read_until(fd, b"answer="))
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        os.close(fd)

    def test_the_job_sees_a_terminal_sized_like_ours_and_resized_with_it(self):
        job = ("import os, signal, sys, time\n"
               "changed = []\n"
               "signal.signal(signal.SIGWINCH, lambda s, f: changed.append(1))\n"
               "sz = os.get_terminal_size(1)\n"
               "print('tty', os.isatty(1), os.isatty(2), sz.columns, sz.lines, flush=True)\n"
               "for _ in range(500):\n"  # a hang guard: SIGWINCH comes from the test
               "    if changed: break\n"
               "    time.sleep(0.02)\n"
               "for _ in range(250):\n"  # the wrapper copies the new size on its SIGWINCH
               "    sz = os.get_terminal_size(1)\n"
               "    if sz.columns != 111: break\n"
               "    time.sleep(0.02)\n"
               "print('resized', sz.columns, sz.lines)\n")
        pid, fd = self.spawn_on_pty([PY, "-c", job], size=(33, 111))
        self.assertIn(b"tty True True 111 33", self.read_until(fd, b"tty "))
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 77, 0, 0))
        self.assertIn(b"resized 77 40", self.read_until(fd, b"resized"))
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        os.close(fd)
        # The log has the job's bytes: no "\r\n" from the pty's output processing.
        self.assertEqual(self.job_output(self.only_run_dir()),
                         b"tty True True 111 33\nresized 77 40\n")

    def test_on_a_terminal_the_job_line_buffers_without_a_preload(self):
        # The pty line-buffers C stdio by itself: the job's environment gets no
        # stdbuf preload (which every descendant would inherit), and a C program's
        # last line before a SIGKILL is still in the log.
        src = write_script(self.tmp, "last.c", LAST_LINE_C, mode=0o644)
        exe = os.path.join(self.tmp, "last")
        subprocess.run(["cc", "-o", exe, src], check=True)
        job = f'echo "preload=[$_STDBUF_O]"; exec {exe}'
        pid, fd = self.spawn_on_pty(["sh", "-c", job])
        out = self.read_until(fd, b"BEFORE SIGKILL")
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        self.assertIn(b"preload=[]", out)
        self.assertEqual(os.waitstatus_to_exitcode(status), -signal.SIGKILL)
        self.assertEqual(self.job_output(self.only_run_dir()),
                         b"preload=[]\nC LAST LINE BEFORE SIGKILL\n")

    def test_ctrl_c_reaches_the_job_exactly_once(self):
        # The handler only counts: printing from it could land inside the main
        # code's print (stdout is a tty, line-buffered) and raise a reentrant call.
        job = ("import signal, time, sys\n"
               "n = []\n"
               "signal.signal(signal.SIGINT, lambda s, f: n.append(1))\n"
               "print('ready', flush=True)\n"
               "while len(n) < 1: time.sleep(0.02)\n"
               "print('SIGINT', len(n), flush=True)\n"
               "time.sleep(0.5)\n"
               "print('total', len(n), flush=True)\n")
        pid, fd = self.spawn_on_pty([PY, "-c", job])
        self.read_until(fd, b"ready")
        os.write(fd, b"\x03")  # the terminal's interrupt character
        out = self.read_until(fd, b"total 1")  # a second SIGINT would print "total 2"
        _, status = os.waitpid(pid, 0)
        self.assertIn(b"total 1", out)
        self.assertNotIn(b"SIGINT 2", out)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        os.close(fd)

    def test_ctrl_c_on_a_default_job_ends_both_with_sigint(self):
        pid, fd = self.spawn_on_pty(["sh", "-c", "echo ready; sleep 30"])
        self.read_until(fd, b"ready")
        os.write(fd, b"\x03")
        _, status = os.waitpid(pid, 0)
        self.assertTrue(os.WIFSIGNALED(status))
        self.assertEqual(os.WTERMSIG(status), signal.SIGINT)
        os.close(fd)

    def test_ctrl_z_and_fg_in_an_interactive_shell(self):
        # A real interactive bash with job control, as a person at a terminal has.
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.clear()
            os.environ.update(self.env, PS1="$ ", TERM="dumb")
            os.chdir(self.tmp)
            os.execv("/bin/bash", ["bash", "--norc", "--noprofile", "-i"])
        self.read_until(fd, b"$ ")
        cmd = (f"{BIN} run -q --notify never --log-dir {self.logs} -- "
               "sh -c 'echo ready; sleep 1; echo resumed; exit 3'\n")
        os.write(fd, cmd.encode())
        self.read_until(fd, b"ready\r\n")
        os.write(fd, b"\x1a")
        self.assertIn(b"Stopped", self.read_until(fd, b"Stopped"))
        os.write(fd, b"fg\n")
        self.assertIn(b"resumed", self.read_until(fd, b"resumed"))
        os.write(fd, b"echo rc=$?\n")
        self.assertIn(b"rc=3", self.read_until(fd, b"rc=3"))
        os.write(fd, b"exit\n")
        os.waitpid(pid, 0)
        os.close(fd)


if __name__ == "__main__":
    unittest.main()
