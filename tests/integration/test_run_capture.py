"""The durable log: what the job printed reaches output.log, whatever happens."""
import json
import os
import resource
import shutil
import signal
import subprocess
import time
import unittest

from harness import BIN, PY, RunTestCase, clean_env, wait_for, write_script

LAST_LINE_PY = """
import os, signal, sys
print("step 1 loss 2.31")
print("LAST LINE BEFORE SIGKILL")
os.kill(os.getpid(), signal.SIGKILL)
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


HANDLED_THEN_DONE = """
import sys, traceback
print("epoch 1 loss 0.41")
try:
    {}["learning_rate"]
except KeyError:
    traceback.print_exc()
    print("falling back to the default learning rate", file=sys.stderr)
print("Training complete")
"""

FILLS_THE_DISK = """
print("epoch 3 step 1200 loss 0.19", flush=True)
try:
    with open("checkpoint.pt", "wb") as f:
        f.write(b"\\0" * (4 << 20))
finally:
    # More than the log's last page holds: the traceback after it can't be written.
    for i in range(200):
        print(f"rank 0: releasing optimizer state shard {i:03d} of 200", flush=True)
"""


class Capture(RunTestCase):
    def test_stdout_stays_stdout_and_stderr_stays_stderr(self):
        p, run_dir = self.run_wrapped(
            ["sh", "-c", "echo to-out; echo to-err >&2; echo out-again"], opts=["-q"])
        self.assertEqual(p.stdout, b"to-out\nout-again\n")
        self.assertEqual(p.stderr, b"to-err\n")
        body = self.job_output(run_dir)
        self.assertEqual(sorted(body.splitlines()), [b"out-again", b"to-err", b"to-out"])

    def test_wrapper_says_one_line_at_start_and_one_at_end(self):
        p, run_dir = self.run_wrapped(["sh", "-c", "exit 3"])
        lines = p.stderr.decode().splitlines()
        self.assertEqual(len(lines), 2, lines)
        self.assertIn(os.path.join(run_dir, "output.log"), lines[0])
        self.assertIn("exit 3", lines[1])
        self.assertIn("report.json", lines[1])
        q, _ = self.run_wrapped(["sh", "-c", "exit 3"], opts=["--quiet"])
        self.assertEqual(q.stderr, b"")

    def test_header_is_synced_before_the_child_starts(self):
        job = 'head -c 100000 "$GPUALERT_RUN_DIR/output.log"'
        p, run_dir = self.run_wrapped(["sh", "-c", job], opts=["-q", "--name", "hdr"])
        self.assertEqual(p.returncode, 0)
        self.assertIn(b"#gpualert# command: sh -c", p.stdout)
        self.assertIn(b"#gpualert# ---- job output begins ----", p.stdout)
        header = open(os.path.join(run_dir, "output.log"), "rb").read()
        self.assertIn(b"#gpualert# cwd: ", header)
        self.assertIn(b"#gpualert# host: ", header)
        self.assertIn(b"#gpualert# started: ", header)

    def test_header_records_gpu_and_scheduler_environment(self):
        env = dict(self.env, CUDA_VISIBLE_DEVICES="0,1", SLURM_JOB_ID="4242", HF_TOKEN="hf_secret")
        p, run_dir = self.run_wrapped(["true"], env=env)
        log = open(os.path.join(run_dir, "output.log"), "rb").read()
        self.assertIn(b"#gpualert# env: CUDA_VISIBLE_DEVICES=0,1", log)
        self.assertIn(b"#gpualert# env: SLURM_JOB_ID=4242", log)
        self.assertNotIn(b"hf_secret", log)
        self.assertEqual(self.report(run_dir)["env"]["SLURM_JOB_ID"], "4242")

    def test_command_line_is_quoted_so_it_can_be_pasted_back(self):
        arg = "it's a \"test\" with\nnewline"
        p, run_dir = self.run_wrapped(["printf", "%s", arg])
        self.assertEqual(p.stdout, arg.encode())
        rep = self.report(run_dir)
        again = subprocess.run(["bash", "-c", rep["command"]], capture_output=True)
        self.assertEqual(again.stdout, arg.encode())
        header = open(os.path.join(run_dir, "output.log"), "rb").read().split(b"---- job output begins")[0]
        self.assertEqual(header.count(b"\n#gpualert# command:"), 1)
        self.assertNotIn(b"\nnewline", header, "a newline in an argument must not break the header")

    def test_python_last_line_before_sigkill_is_kept_and_lost_under_plain_redirect(self):
        job = write_script(self.tmp, "job.py", LAST_LINE_PY)
        plain_log = os.path.join(self.tmp, "plain.log")
        with open(plain_log, "wb") as f:
            plain = subprocess.run([PY, job], stdout=f, stderr=subprocess.STDOUT, env=clean_env())
        self.assertEqual(plain.returncode, -signal.SIGKILL)
        self.assertNotIn(b"LAST LINE", open(plain_log, "rb").read(),
                         "a plain redirect loses Python's buffered last lines")
        p, run_dir = self.run_wrapped([PY, job])
        self.assertEqual(p.returncode, -signal.SIGKILL)
        self.assertIn(b"LAST LINE BEFORE SIGKILL\n", self.job_output(run_dir))

    @unittest.skipUnless(shutil.which("cc"), "needs a C compiler")
    def test_c_last_line_before_sigkill_is_kept_and_lost_under_plain_redirect(self):
        src = write_script(self.tmp, "last.c", LAST_LINE_C, mode=0o644)
        exe = os.path.join(self.tmp, "last")
        subprocess.run(["cc", "-o", exe, src], check=True)
        plain_log = os.path.join(self.tmp, "plain.log")
        with open(plain_log, "wb") as f:
            subprocess.run([exe], stdout=f, stderr=subprocess.STDOUT)
        self.assertNotIn(b"C LAST LINE", open(plain_log, "rb").read())
        p, run_dir = self.run_wrapped([exe])
        self.assertEqual(p.returncode, -signal.SIGKILL)
        self.assertIn(b"C LAST LINE BEFORE SIGKILL\n", self.job_output(run_dir))

    def test_log_keeps_output_when_the_wrapper_itself_is_sigkilled(self):
        pidfile = os.path.join(self.tmp, "job.pid")
        job = f"echo $$ > {pidfile}; for i in 1 2 3 4 5; do echo line-$i; done; echo ready; exec sleep 30"
        proc = subprocess.Popen([BIN, "run", "--log-dir", self.logs, "--notify", "never", "-q", "--",
                                 "sh", "-c", job], env=self.env, cwd=self.tmp,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.assertEqual(proc.stdout.readline(), b"line-1\n")
        # "\nready\n" as a line of output: the header quotes the command, which says "ready" too.
        self.assertTrue(wait_for(lambda: self.only_run_dir() and b"\nready\n" in open(
            os.path.join(self.only_run_dir(), "output.log"), "rb").read()))
        proc.kill()
        proc.wait()
        proc.stdout.close()
        log = open(os.path.join(self.only_run_dir(), "output.log"), "rb").read()
        for i in range(1, 6):
            self.assertIn(f"line-{i}\n".encode(), log)
        os.kill(int(open(pidfile).read()), signal.SIGKILL)  # the orphaned job, and only it

    def test_huge_line_without_newline_streams_in_bounded_memory(self):
        size = 200 * 1024 * 1024
        job = ("import sys; b = b'x' * (1 << 20)\n"
               f"for _ in range({size >> 20}): sys.stdout.buffer.write(b)\n")
        cmd = [BIN, "run", "--log-dir", self.logs, "--notify", "never", "-q", "--", PY, "-c", job]
        proc = subprocess.Popen(cmd, env=self.env, cwd=self.tmp, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        run_dir = self.only_run_dir()
        self.assertEqual(len(self.job_output(run_dir)), size + 1)  # + the newline before the footer
        self.assertEqual(self.report(run_dir)["log_bytes"], size)
        self.assertLess(usage.ru_maxrss, 64 * 1024, f"wrapper max RSS {usage.ru_maxrss} KiB")

    def test_binary_output_and_progress_bars_are_kept_byte_for_byte(self):
        data = bytes(range(256)) * 64 + b"\xff\xfe invalid utf-8 \xc3\x28\n" + \
            b"".join(b"\r%3d%%|####" % i for i in range(0, 101, 10)) + b"\n"
        src = os.path.join(self.tmp, "blob")
        open(src, "wb").write(data)
        p, run_dir = self.run_wrapped(["cat", src], opts=["-q"])
        self.assertEqual(p.stdout, data)
        self.assertEqual(self.job_output(run_dir), data)

    def test_unwritable_log_dir_falls_back_loudly_and_still_runs(self):
        blocker = os.path.join(self.tmp, "a-file")
        open(blocker, "w").close()
        bad = os.path.join(blocker, "logs")  # a directory can't be made under a file
        p = subprocess.run([BIN, "run", "--log-dir", bad, "--notify", "never", "--", "sh", "-c", "echo ran; exit 5"],
                           capture_output=True, env=self.env, cwd=self.tmp)
        self.assertEqual(p.returncode, 5)
        self.assertEqual(p.stdout, b"ran\n")
        self.assertIn(b"WARNING", p.stderr)
        self.assertIn(b"not usable", p.stderr)
        run_dir = self.only_run_dir(os.path.join(self.state, "runs"))
        self.assertIsNotNone(run_dir, "fallback run directory under the state dir")
        self.assertEqual(os.stat(os.path.join(self.state, "runs")).st_mode & 0o777, 0o700)
        rep = self.report(run_dir)
        self.assertIn("not usable", rep["log_fallback"])
        self.assertTrue(any("not usable" in w for w in rep["warnings"]))
        self.assertIn(b"ran\n", self.job_output(run_dir))

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root for a private tmpfs")
    def test_full_log_device_loses_nothing_else(self):
        # The log directory is a real 256 KiB tmpfs (in a private mount namespace);
        # the job prints 4 MiB. The job's status and its terminal output are untouched,
        # and the loss is said loudly.
        small = os.path.join(self.tmp, "small")
        os.makedirs(small)
        job = "import sys\nfor i in range(40000): print(f'step {i:06d} ' + 'x' * 90)\nsys.exit(3)\n"
        script = (f"mount -t tmpfs -o size=256k tmpfs {small} && "
                  f"exec {BIN} run --notify never --log-dir {small} -- {PY} -c \"$JOB\"")
        p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                           env=dict(self.env, JOB=job), cwd=self.tmp, timeout=60)
        self.assertEqual(p.returncode, 3)
        self.assertEqual(len(p.stdout.splitlines()), 40000)
        self.assertIn(b"the log is incomplete", p.stderr)
        self.assertIn(b"No space left on device", p.stderr)
        fallback = os.path.join(self.state, "reports")
        reports = os.listdir(fallback) if os.path.isdir(fallback) else []
        if reports:  # report.json did not fit either: it went to the state dir
            rep = json.load(open(os.path.join(fallback, reports[0])))
            self.assertEqual(rep["exit_code"], 3)
            self.assertTrue(any("incomplete" in w for w in rep["warnings"]))

    def test_job_sees_run_dir_and_line_buffering_hints(self):
        job = 'echo "$GPUALERT_RUN_DIR|$PYTHONUNBUFFERED|$_STDBUF_O"'
        p, run_dir = self.run_wrapped(["sh", "-c", job], opts=["-q"])
        got = p.stdout.decode().strip().split("|")
        self.assertEqual(got[0], run_dir)
        self.assertEqual(got[1], "1")
        p2, _ = self.run_wrapped(["sh", "-c", job], opts=["-q", "--no-line-buffer"])
        self.assertEqual(p2.stdout.decode().strip().split("|")[1:], ["", ""])

    def test_closed_stdout_still_logs_the_jobs_stdout(self):
        cmd = f"{BIN} run -q --notify never --log-dir {self.logs} -- sh -c 'echo to-out; echo to-err >&2' >&-"
        p = subprocess.run(["sh", "-c", cmd], capture_output=True, env=self.env, cwd=self.tmp, timeout=30)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(sorted(self.job_output(self.only_run_dir()).splitlines()), [b"to-err", b"to-out"])

    def test_reader_going_away_gives_the_job_its_broken_pipe(self):
        # `gpualert run -- yes | head -1` must end, as `yes | head -1` does.
        cmd = f"{BIN} run -q --notify never --log-dir {self.logs} -- yes | head -1"
        p = subprocess.run(["sh", "-c", cmd], capture_output=True, env=self.env, cwd=self.tmp, timeout=30)
        self.assertEqual(p.stdout, b"y\n")
        self.assertEqual(self.report(self.only_run_dir())["signal"], "SIGPIPE")


    def test_a_stalled_reader_holds_back_neither_the_timeout_nor_the_log(self):
        # Our stdout is a FIFO whose reader never reads: the job's 3 MB go to the log
        # all the same, and --timeout still ends the job (the reader does not hold
        # the wrapper in a write). subprocess's timeout only guards against a hang.
        fifo = os.path.join(self.tmp, "fifo")
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer = os.open(fifo, os.O_WRONLY)
        try:
            cmd = [BIN, "run", "--log-dir", self.logs, "--notify", "never", "--timeout", "2s",
                   "--", "sh", "-c", "yes | head -c 3000000; sleep 30"]
            p = subprocess.run(cmd, stdout=writer, stderr=subprocess.PIPE, env=self.env,
                               cwd=self.tmp, timeout=25)
        finally:
            os.close(writer)
            os.close(reader)
        self.assertEqual(p.returncode, -signal.SIGTERM, p.stderr)
        run_dir = self.only_run_dir()
        self.assertEqual(len(self.job_output(run_dir)), 3000000)
        rep = self.report(run_dir)
        self.assertTrue(rep["wrapper_timeout"])
        self.assertEqual(rep["label"], "time_limit")
        self.assertTrue(any("could not be shown" in w for w in rep["warnings"]), rep["warnings"])
        self.assertIn(b"could not be shown", p.stderr)

    def test_stdout_and_stderr_to_one_file_keep_the_order_written(self):
        # `> slurm.out 2>&1`: a handled traceback on stderr, then the last line on
        # stdout (block-buffered, so written at exit). One pipe keeps the order, so
        # the traceback is not the last thing in the log and the run is a success.
        for i in range(20):
            out = os.path.join(self.tmp, f"slurm-{i}.out")
            with open(out, "wb") as f:
                cmd = [BIN, "run", "-q", "--log-dir", self.logs, "--notify", "never", "--",
                       PY, "-c", HANDLED_THEN_DONE]
                p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=self.env,
                                   cwd=self.tmp, timeout=60)
            self.assertEqual(p.returncode, 0)
            run_dir = self.only_run_dir()
            lines = self.job_output(run_dir).decode().splitlines()
            self.assertEqual(lines[0], "epoch 1 loss 0.41")
            self.assertEqual(lines[1], "Traceback (most recent call last):")
            self.assertEqual(lines[-3:], ["KeyError: 'learning_rate'",
                                          "falling back to the default learning rate",
                                          "Training complete"], run_dir)
            self.assertEqual(self.report(run_dir)["label"], "success", i)
            with open(out, "rb") as f:
                self.assertTrue(f.read().endswith(b"learning rate\nTraining complete\n"))
            os.rename(run_dir, run_dir + ".done")

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root for a private tmpfs")
    def test_a_job_that_fills_the_disk_is_diagnosed_from_what_it_printed(self):
        # The log directory and the job's working directory are one 256 KiB tmpfs; the
        # job fills it and dies on Errno 28. Its traceback never reaches output.log,
        # but diagnosis reads the output as it is copied, not the file.
        small = os.path.join(self.tmp, "small")
        saved = os.path.join(self.tmp, "saved")
        os.makedirs(small)
        os.makedirs(saved)
        script = (f"mount -t tmpfs -o size=256k tmpfs {small} && cd {small} && "
                  f"{{ {BIN} run --notify never --log-dir {small} -- {PY} -c \"$JOB\"; rc=$?; "
                  f"for r in {small}/*/report.json; do cp \"$r\" {saved}/ 2>/dev/null; done; "
                  f"exit $rc; }}")
        p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                           env=dict(self.env, JOB=FILLS_THE_DISK), cwd=self.tmp, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"OSError: [Errno 28] No space left on device", p.stderr)
        reports = [os.path.join(saved, f) for f in os.listdir(saved)]
        fallback = os.path.join(self.state, "reports")
        if os.path.isdir(fallback):
            reports += [os.path.join(fallback, f) for f in os.listdir(fallback)]
        self.assertEqual(len(reports), 1, p.stderr)
        rep = json.load(open(reports[0]))
        self.assertEqual(rep["exit_code"], 1)
        self.assertEqual(rep["label"], "disk_full", rep)
        self.assertIn(b"disk_full (exit 1", p.stderr)
        self.assertTrue(any("log is incomplete" in w for w in rep["warnings"]), rep["warnings"])


if __name__ == "__main__":
    unittest.main()
