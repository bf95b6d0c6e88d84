"""`gpualert run` as a Slurm batch job, on a real single-node Slurm started by the test.

scancel sends its signal to every process of the job, gpualert and the job alike;
whether the job got it too depends on how slurmstepd sent it (see
supervise/signals.hpp). The job must get each signal once: the test counts what it
receives, in the batch step and in an srun step.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, RunTestCase, wait_for, write_script  # noqa: E402
from slurm_node import SlurmNode  # noqa: E402

SLOW_TO_STOP = """
import os, signal, sys, time
out, linger = sys.argv[1], float(sys.argv[2])
def on(sig, frame):
    with open(out, "a") as f:
        f.write("SIGTERM\\n")
    if linger >= 0:
        time.sleep(linger)  # a checkpoint that takes a while
        sys.exit(143)
signal.signal(signal.SIGTERM, on)
with open(out, "a") as f:
    f.write("ready %d\\n" % os.getppid())
print("training", flush=True)
while True:
    time.sleep(0.05)
"""

COUNTER = """
import os, signal, sys, time
out = sys.argv[1]
def note(text):
    with open(out, "a") as f:
        f.write(text + "\\n")
def on(sig, frame):
    note(signal.Signals(sig).name)
    if sig == signal.SIGTERM:
        time.sleep(1.0)  # a second, duplicate SIGTERM would be noted meanwhile
        sys.exit(143)
signal.signal(signal.SIGUSR1, on)
signal.signal(signal.SIGTERM, on)
note("ready %d" % os.getppid())
print("training", flush=True)
while True:
    time.sleep(0.05)
"""


@unittest.skipUnless(os.geteuid() == 0 and SlurmNode.available(),
                     "needs root and slurm-wlm + munge (scripts/install-deps.sh test installs them)")
class UnderSlurm(RunTestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = SlurmNode(tempfile.mkdtemp(prefix="gpualert-slurm-test-"))
        cls.node.start()

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    ENDED = ("TIMEOUT", "CANCELLED", "COMPLETED", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
             "PREEMPTED", "DEADLINE", "BOOT_FAIL")

    def wait_ended(self, jobid, timeout):
        """Waits for a final job state (an unanswered query is not one)."""
        return wait_for(lambda: self.node.job_state(jobid)[0] in self.ENDED, timeout=timeout,
                        interval=0.5)

    def lines(self, path):
        try:
            with open(path) as f:
                return f.read().split()
        except FileNotFoundError:
            return []

    def submit(self, script_line, sbatch_args=()):
        """Submits a batch script running script_line (with {wrapped}); returns
        (jobid, path of the job's signal notes, gpualert's pid) once the job is ready."""
        os.chmod(self.tmp, 0o755)
        job = write_script(self.tmp, "counter.py", COUNTER)
        seen = os.path.join(self.tmp, "signals.txt")
        wrapped = f"{BIN} run -q --notify never --log-dir {self.logs} -- {PY} {job} {seen}"
        batch = write_script(self.tmp, "job.sh", "#!/bin/bash\n" + script_line.format(wrapped=wrapped) + "\n")
        r = self.node.sh(["sbatch", "--parsable", "--output", os.path.join(self.tmp, "slurm.out"),
                          "--chdir", self.tmp, *sbatch_args, batch],
                         env=dict(self.env, SLURM_CONF=self.node.conf))
        self.assertEqual(r.returncode, 0, r.stderr)
        jobid = r.stdout.strip().split(";")[0]
        self.assertTrue(wait_for(lambda: "ready" in self.lines(seen), timeout=60),
                        self.node.sh(["scontrol", "show", "job", jobid]).stdout)
        return jobid, seen, int(self.lines(seen)[1])

    def end_with_scancel(self, jobid, seen, usr1):
        """scancel: SIGCONT and SIGTERM from slurmstepd to every process of the job; the
        job notes SIGTERM once; its report says it was cancelled."""
        r = self.node.sh(["scancel", jobid])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(self.wait_ended(jobid, timeout=60), self.node.job_state(jobid))
        time.sleep(0.5)
        got = self.lines(seen)
        self.assertEqual(got.count("SIGUSR1"), usr1, got)
        self.assertEqual(got.count("SIGTERM"), 1, got)
        self.assertEqual(self.node.job_state(jobid)[0], "CANCELLED")
        run_dir = self.only_run_dir()
        self.assertIsNotNone(run_dir)
        report = self.report(run_dir)
        self.assertEqual(report["exit_code"], 143)
        self.assertEqual(report["label"], "cancelled")
        # Slurm printed why into its own output file; gpualert asked it instead (the
        # job is still COMPLETING then, and the reason is not a time limit).
        self.assertRegex(" ".join(report["scheduler_lines"]),
                         rf"scontrol: job {jobid} JobState=\S+ Reason=None ")
        self.assertEqual(report["env"].get("SLURM_JOB_ID"), jobid)
        self.assertIn(b"training", self.job_output(run_dir))

    def usr1_once_each_way(self, scancel_args, script_line):
        """USR1 through `scancel scancel_args`, then from outside to gpualert: the job
        notes each once; then scancel ends the job."""
        jobid, seen, wrapper = self.submit(script_line)
        r = self.node.sh(["scancel", *scancel_args, "--signal=USR1", jobid])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(wait_for(lambda: "SIGUSR1" in self.lines(seen), timeout=20))
        time.sleep(1.0)
        self.assertEqual(self.lines(seen).count("SIGUSR1"), 1, self.lines(seen))
        # From anyone else to gpualert: forwarded, once.
        os.kill(wrapper, signal.SIGUSR1)
        self.assertTrue(wait_for(lambda: self.lines(seen).count("SIGUSR1") >= 2, timeout=20))
        self.end_with_scancel(jobid, seen, usr1=2)

    def test_in_the_batch_step_a_requested_signal_is_forwarded_and_scancel_is_not(self):
        # --full --signal: slurmstepd signals the batch script's process group, which
        # does not hold the job: gpualert forwards it (without, the job never got it).
        self.usr1_once_each_way(["--full"], "exec {wrapped}")

    def test_in_an_srun_step_slurmstepd_signals_reach_the_job_once(self):
        # scancel --signal reaches every process of the srun step: the job has it
        # already, and gpualert does not send it again.
        self.usr1_once_each_way([], "srun {wrapped}")

    def test_time_limit_with_a_warning_signal_first(self):
        # sbatch --signal=B:USR1@50 --time=1: USR1 to the batch script (gpualert) some
        # seconds in, forwarded once; at the limit SIGCONT and SIGTERM to every process,
        # not forwarded; the verdict is the time limit, which only Slurm knows here
        # (its banner goes to its own output file). About 90 s: limits are whole minutes.
        jobid, seen, _ = self.submit("exec {wrapped}", ["--time=1", "--signal=B:USR1@50"])
        self.assertTrue(self.wait_ended(jobid, timeout=150), self.node.job_state(jobid))
        time.sleep(0.5)
        got = self.lines(seen)
        self.assertEqual(got.count("SIGUSR1"), 1, got)
        self.assertEqual(got.count("SIGTERM"), 1, got)
        self.assertEqual(self.node.job_state(jobid)[0], "TIMEOUT")
        with open(os.path.join(self.tmp, "slurm.out")) as f:
            self.assertIn("DUE TO TIME LIMIT", f.read())
        report = self.report(self.only_run_dir())
        self.assertEqual(report["label"], "time_limit")
        self.assertEqual(report["exit_code"], 143)
        sources = {e["source"]: e["text"] for e in report["evidence"]}
        self.assertIn("Reason=TimeLimit", sources.get("scheduler", ""), report["evidence"])

    def outbox_entries(self):
        new = os.path.join(self.state, "outbox", "new")
        entries = []
        for name in sorted(os.listdir(new)) if os.path.isdir(new) else []:
            if name.endswith(".meta"):
                with open(os.path.join(new, name)) as f:
                    entries.append(json.load(f))
        return entries

    def scancel_slow_job(self, linger):
        """A job that takes `linger` s to stop after SIGTERM (-1: never), under gpualert with
        the default notification (to the outbox), scancelled; returns its run dir."""
        os.chmod(self.tmp, 0o755)
        job = write_script(self.tmp, "slow.py", SLOW_TO_STOP)
        seen = os.path.join(self.tmp, "signals.txt")
        batch = write_script(self.tmp, "job.sh", "#!/bin/bash\n"
                             f"exec {BIN} run -q --log-dir {self.logs} -- {PY} {job} {seen} {linger}\n")
        r = self.node.sh(["sbatch", "--parsable", "--output", os.path.join(self.tmp, "slurm.out"),
                          "--chdir", self.tmp, batch], env=dict(self.env, SLURM_CONF=self.node.conf))
        self.assertEqual(r.returncode, 0, r.stderr)
        jobid = r.stdout.strip().split(";")[0]
        self.assertTrue(wait_for(lambda: "ready" in self.lines(seen), timeout=60))
        self.assertEqual(self.node.sh(["scancel", jobid]).returncode, 0)
        self.assertTrue(self.wait_ended(jobid, timeout=60), self.node.job_state(jobid))
        time.sleep(0.5)
        self.assertEqual(self.lines(seen).count("SIGTERM"), 1)
        return self.only_run_dir()

    def test_a_job_slurm_must_sigkill_leaves_a_report_and_a_held_notice(self):
        # KillWait is 5 s here: the job ignores SIGTERM, Slurm's SIGKILL ends gpualert too.
        run_dir = self.scancel_slow_job(-1)
        report = self.report(run_dir)
        self.assertEqual(report["label"], "cancelled")
        self.assertTrue(any(w.startswith("provisional:") for w in report["warnings"]), report)
        self.assertIn("had not exited 2 s later", " ".join(e["text"] for e in report["evidence"]))
        self.assertGreaterEqual(report["duration_s"], 2.0)
        entries = self.outbox_entries()
        self.assertEqual(len(entries), 1, entries)
        self.assertEqual(entries[0]["run_dir"], run_dir)
        self.assertGreater(entries[0]["not_before"], time.time() + 60)  # held, then sent
        # A flush now leaves it alone and says so; it is not a failed delivery.
        flush = subprocess.run([BIN, "outbox", "flush"], capture_output=True, text=True,
                               env=self.env, timeout=60)
        self.assertEqual(flush.returncode, 0, flush.stderr)
        self.assertRegex(flush.stdout, r"^held\t\S+\theld until ")
        self.assertEqual(len(self.outbox_entries()), 1)

    def test_a_job_that_stops_in_time_withdraws_the_held_notice(self):
        # The job takes 3 s to stop (under KillWait): gpualert writes the provisional report
        # and the held notice at 2 s, then the final ones, which replace them.
        run_dir = self.scancel_slow_job(3)
        report = self.report(run_dir)
        self.assertEqual(report["exit_code"], 143)
        self.assertEqual(report["label"], "cancelled")
        self.assertFalse(any(w.startswith("provisional:") for w in report["warnings"]), report)
        entries = self.outbox_entries()
        self.assertEqual(len(entries), 1, entries)
        self.assertEqual(entries[0]["not_before"], 0)

if __name__ == "__main__":
    unittest.main()
