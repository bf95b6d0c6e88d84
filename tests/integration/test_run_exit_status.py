"""gpualert run exits exactly as its child did: same code, or the same signal."""
import os
import signal
import subprocess
import unittest

from harness import BIN, PY, RunTestCase, write_script


class ExitStatus(RunTestCase):
    def test_exit_codes_pass_through(self):
        for code in (0, 1, 42, 255):
            with self.subTest(code=code):
                p, run_dir = self.run_wrapped(["sh", "-c", f"exit {code}"])
                self.assertEqual(p.returncode, code)
                rep = self.report(run_dir)
                self.assertEqual(rep["exit_code"], code)
                self.assertIsNone(rep["signal"])
                os.rename(run_dir, run_dir + ".done")  # keep only_run_dir() unambiguous

    def test_signal_deaths_are_reraised_without_a_core_of_ours(self):
        for sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL, signal.SIGTERM,
                    signal.SIGINT, signal.SIGHUP, signal.SIGBUS):
            with self.subTest(sig=sig.name):
                reset = "" if sig == signal.SIGKILL else f"signal.signal({int(sig)}, signal.SIG_DFL); "
                job = f"import os, signal; {reset}os.kill(os.getpid(), {int(sig)})"
                cmd = [BIN, "run", "--log-dir", self.logs, "--notify", "never", "-q", "--", PY, "-c", job]
                proc = subprocess.Popen(cmd, env=self.env, cwd=self.tmp,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, status, _ = os.wait4(proc.pid, 0)
                proc.returncode = 0  # reaped by wait4 already
                self.assertTrue(os.WIFSIGNALED(status), f"status {status:#x}")
                self.assertEqual(os.WTERMSIG(status), sig)
                self.assertFalse(os.WCOREDUMP(status), "the wrapper must not dump core")
                run_dir = self.only_run_dir()
                self.assertEqual(self.report(run_dir)["signal"], sig.name)
                self.assertIsNone(self.report(run_dir)["exit_code"])
                os.rename(run_dir, run_dir + ".done")

    def test_shell_sees_same_status_as_without_wrapper(self):
        script = "sh -c 'kill -TERM $$'; echo $?"
        plain = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
        wrapped = subprocess.run(
            ["sh", "-c", f"{BIN} run -q --notify never --log-dir {self.logs} -- sh -c 'kill -TERM $$'; echo $?"],
            capture_output=True, text=True, env=self.env, cwd=self.tmp)
        self.assertEqual(plain.stdout, wrapped.stdout)
        self.assertEqual(wrapped.stdout.strip(), "143")

    def test_command_not_found_is_127(self):
        p, run_dir = self.run_wrapped(["no-such-command-xyz", "--flag"])
        self.assertEqual(p.returncode, 127)
        self.assertIn(b"no-such-command-xyz: command not found", p.stderr)
        log = open(os.path.join(run_dir, "output.log"), "rb").read()
        self.assertIn(b"could not start the job: no-such-command-xyz: command not found", log)
        self.assertEqual(self.report(run_dir)["exit_code"], 127)

    def test_not_executable_is_126(self):
        path = write_script(self.tmp, "not-exec.sh", "#!/bin/sh\necho hi\n", mode=0o644)
        p, run_dir = self.run_wrapped([path])
        self.assertEqual(p.returncode, 126)
        self.assertIn(b"cannot execute", p.stderr)
        self.assertEqual(self.report(run_dir)["exit_code"], 126)

    def test_directory_is_126(self):
        p, _ = self.run_wrapped([self.tmp])
        self.assertEqual(p.returncode, 126)

    def test_usage_errors_exit_2_before_anything_runs(self):
        marker = os.path.join(self.tmp, "ran")
        for opts in (["--timeout", "soon"], ["--kill-after", "-3s"], ["--budget", "lots"],
                     ["--notify", "sometimes"], ["--no-such-option"]):
            with self.subTest(opts=opts):
                p = subprocess.run([BIN, "run", "--log-dir", self.logs, *opts, "--", "touch", marker],
                                   capture_output=True, env=self.env, cwd=self.tmp)
                self.assertEqual(p.returncode, 2)
                self.assertTrue(p.stderr.startswith(b"gpualert: error: "), p.stderr)
                self.assertFalse(os.path.exists(marker))
                self.assertFalse(os.path.exists(self.logs), "no run directory for a usage error")

    def test_broken_config_is_a_usage_error_naming_the_line(self):
        cfg = write_script(self.tmp, "config.toml", 'smtp_url = "smtp://127.0.0.1:25"\nto = [unclosed\n', mode=0o644)
        marker = os.path.join(self.tmp, "ran")
        p = subprocess.run([BIN, "run", "--config", cfg, "--log-dir", self.logs, "--", "touch", marker],
                           capture_output=True, env=self.env, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"config.toml:2", p.stderr)
        self.assertFalse(os.path.exists(marker))

    def test_missing_command_is_usage_error(self):
        p = subprocess.run([BIN, "run", "--"], capture_output=True, env=self.env)
        self.assertEqual(p.returncode, 2)

    def test_help_reads_like_a_man_page(self):
        p = subprocess.run([BIN, "run", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        for word in ("--timeout", "--kill-after", "--notify", "Exit status", "GPUALERT_LOG_DIR"):
            self.assertIn(word, p.stdout)


if __name__ == "__main__":
    unittest.main()
