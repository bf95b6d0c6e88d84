"""`gpualert run` as a Slurm batch job, on a real single-node Slurm started by the test,
once with proctrack/linuxproc and once with proctrack/cgroup + task/cgroup (how most
production clusters track jobs; Slurm signals differently there: see
supervise/signals.hpp and tests/helpers/slurm_node.py).

The job must get each signal once (the tests count what it receives), in the batch step
and in an srun step; and every run that Slurm ends must be reported: by gpualert itself,
or, when Slurm killed gpualert with the job, by `gpualert sweep` run afterwards as an
epilog would run it.
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, RunTestCase, clean_env, wait_for, write_script  # noqa: E402
from servers import SmtpSink  # noqa: E402
from slurm_node import SlurmNode  # noqa: E402
import shutil  # noqa: E402

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


# A training job as the issue describes it: a step a second; on SIGTERM it says so
# (a checkpoint handler) and exits 143; SIGUSR1 is noted and training goes on.
TERM_LOGGER = """
import signal, sys, time
def on_term(sig, frame):
    print("got signal %d" % sig, flush=True)
    sys.exit(128 + sig)
def on_usr1(sig, frame):
    print("got signal %d" % sig, flush=True)
signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGUSR1, on_usr1)
i = 0
while True:
    i += 1
    print("step %d loss %.4f" % (i, 1.0 / i))
    sys.stdout.flush()
    time.sleep(1)
"""

class SlurmCases:
    """The tests, for one tracking mode (TRACKING, set by the subclasses below)."""
    TRACKING = None

    @classmethod
    def setUpClass(cls):
        cls.node = SlurmNode(tempfile.mkdtemp(prefix="gpualert-slurm-test-"), cls.TRACKING)
        cls.node.start()
        cls.smtp = SmtpSink().__enter__()
        # Whole-minute time limits take 60-90 s: those jobs start first and run
        # beside the other tests, which look at them last.
        cls.shared = tempfile.mkdtemp(prefix="gpualert-slurm-shared-")
        os.chmod(cls.shared, 0o755)
        cls.time_limited = {
            "plain": cls.submit_ending(cls, "b", "{gpualert} run --name b -- {job}", ["--time=1"]),
            "exec": cls.submit_ending(cls, "b2", "exec {gpualert} run --name b2 -- {job}",
                                      ["--time=1", "--signal=B:USR1@50"]),
        }

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()
        cls.smtp.__exit__(None, None, None)
        shutil.rmtree(cls.shared, ignore_errors=True)

    # ---- the endings of a job that Slurm ends, as a user's batch script runs it

    def submit_ending(self, name, line, sbatch_args=()):
        """Submits `line` ({gpualert}, {job}) as a batch script of its own directory (logs,
        state, Slurm's output); returns (jobid, directory)."""
        d = os.path.join(self.shared, name)
        os.makedirs(d)
        job = write_script(d, "term_logger.py", TERM_LOGGER)
        script = write_script(d, "job.sh", "#!/bin/bash\n"
                              "unset PYTHONUNBUFFERED\n"
                              f"export GPUALERT_STATE_DIR={d}/state GPUALERT_LOG_DIR={d}/logs\n"
                              f"export GPUALERT_SMTP_URL=smtp://127.0.0.1:{self.smtp.port} "
                              f"GPUALERT_TO=ml-user@example.com\n"
                              + line.format(gpualert=BIN, job=f"{PY} {job}") + "\n")
        r = self.node.sh(["sbatch", "--parsable", "--output", os.path.join(d, "slurm.out"),
                          "--chdir", d, *sbatch_args, script])
        assert r.returncode == 0, r.stderr
        return r.stdout.strip().split(";")[0], d

    @staticmethod
    def steps_printed(d):
        n = 0
        for path in glob.glob(os.path.join(d, "logs", "*", "output.log")):
            with open(path, errors="replace") as f:
                n += sum(1 for line in f if line.startswith("step "))
        return n

    def epilog(self, d):
        """What an epilog (or the next cron tick) runs after the job: sweep, then flush.
        It has none of the user's mail settings: a run's notice goes where the run said."""
        env = clean_env(GPUALERT_STATE_DIR=os.path.join(d, "state"), SLURM_CONF=self.node.conf)
        sweep = subprocess.run([BIN, "sweep", os.path.join(d, "logs")], capture_output=True,
                               text=True, env=env, timeout=120)
        self.assertEqual(sweep.returncode, 0, sweep.stderr)
        return sweep.stdout

    def ended_run(self, jobid, d, timeout=60):
        """After Slurm ended the job and the epilog ran: (report, output.log text, notices)."""
        self.assertTrue(self.wait_ended(jobid, timeout=timeout), self.node.job_state(jobid))
        time.sleep(1.0)  # a wrapper that survived writes its report now
        self.epilog(d)
        runs = glob.glob(os.path.join(d, "logs", "*", "output.log"))
        self.assertEqual(len(runs), 1, runs)
        run_dir = os.path.dirname(runs[0])
        with open(os.path.join(run_dir, "report.json")) as f:
            report = json.load(f)
        with open(runs[0], errors="replace") as f:
            log = f.read()
        self.assertEqual(self.mails_about(run_dir), 1, (report, self.smtp.messages))
        return report, log

    def mails_about(self, run_dir):
        name = os.path.basename(run_dir).encode()
        return sum(1 for _, to, body in self.smtp.messages
                   if name in body and to == ["ml-user@example.com"])

    def scancel_after_steps(self, jobid, d, steps=3):
        self.assertTrue(wait_for(lambda: self.steps_printed(d) >= steps, timeout=60, interval=0.2),
                        self.node.job_state(jobid))
        self.assertEqual(self.node.sh(["scancel", jobid]).returncode, 0)

    def test_a_plain_form_scancelled_is_reported(self):
        # Under cgroup tracking the batch shell dies of the SIGTERM and Slurm kills
        # gpualert with the rest of the step: the sweep reports the run.
        jobid, d = self.submit_ending("a", "{gpualert} run --name a -- {job}")
        self.scancel_after_steps(jobid, d)
        report, _ = self.ended_run(jobid, d)
        self.assertEqual(report["label"], "cancelled", report)
        self.assertIn(report["state"], ("final", "provisional", "reconstructed"))

    def test_a2_exec_form_scancelled_runs_the_handler_once(self):
        jobid, d = self.submit_ending("a2", "exec {gpualert} run --name a2 -- {job}")
        self.scancel_after_steps(jobid, d)
        report, log = self.ended_run(jobid, d)
        self.assertEqual(log.count("got signal 15"), 1, log)
        self.assertEqual(report["label"], "cancelled", report)
        self.assertEqual(report["state"], "final")
        self.assertEqual(report["exit_code"], 143)
        self.assertEqual(self.node.job_state(jobid), ("CANCELLED", "143:0"))

    def test_c_srun_form_scancelled_runs_the_handler_once(self):
        jobid, d = self.submit_ending("c", "srun {gpualert} run --name c -- {job}")
        self.scancel_after_steps(jobid, d)
        report, log = self.ended_run(jobid, d)
        self.assertEqual(log.count("got signal 15"), 1, log)
        self.assertEqual(report["label"], "cancelled", report)
        self.assertEqual(report["exit_code"], 143)

    def test_e_wrapper_killed_is_reconstructed(self):
        jobid, d = self.submit_ending("e", "exec {gpualert} run --name e -- {job}")
        self.assertTrue(wait_for(lambda: self.steps_printed(d) >= 2, timeout=60, interval=0.2))
        with open(glob.glob(os.path.join(d, "logs", "*", "output.log"))[0]) as f:
            pid = int(re.search(r"^#gpualert# wrapper: pid=(\d+)", f.read(), re.M).group(1))
        os.kill(pid, signal.SIGKILL)
        report, _ = self.ended_run(jobid, d)
        self.assertEqual(report["state"], "reconstructed", report)
        self.assertIn("was killed", report["reconstructed"])
        self.assertEqual(report["signal"], "SIGKILL", report)
        self.assertEqual(report["evidence"][0]["source"], "wrapper")

    def test_b_time_limit_both_forms(self):
        jobid, d = self.time_limited["plain"]
        report, _ = self.ended_run(jobid, d, timeout=150)
        self.assertEqual(report["label"], "time_limit", report)
        self.assertEqual(self.node.job_state(jobid)[0], "TIMEOUT")
        jobid, d = self.time_limited["exec"]
        report, log = self.ended_run(jobid, d, timeout=150)
        self.assertEqual(report["label"], "time_limit", report)
        self.assertEqual(log.count("got signal 15"), 1, log)
        self.assertEqual(log.count("got signal 10"), 1, log)  # --signal=B:USR1@50, passed on once
        self.assertEqual(report["state"], "final")

    def test_z_node_down_is_node_failure(self):
        # Last: the node goes down under every job on it. Slurm requeues the job (it
        # would run again once the node is back; the test cancels it then).
        jobid, d = self.submit_ending("z", "{gpualert} run --name z -- {job}")
        self.assertTrue(wait_for(lambda: self.steps_printed(d) >= 2, timeout=60, interval=0.2))
        try:
            r = self.node.sh(["scontrol", "update", "nodename=" + self.node.host, "state=down",
                              "reason=gpualert-test"])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(wait_for(lambda: self.node.job_state(jobid)[0] in ("PENDING",) + self.ENDED,
                                     timeout=60, interval=0.5))
            time.sleep(2.0)
            self.epilog(d)
            run_dir = os.path.dirname(glob.glob(os.path.join(d, "logs", "*", "output.log"))[0])
            report = self.report(run_dir)
            self.assertEqual(report["label"], "node_failure", report)
            self.assertIn("requeued", report["action"])
            self.assertNotIn("resubmit", report["action"].replace("don't resubmit", ""))
        finally:
            self.node.sh(["scancel", jobid])
            self.node.sh(["scontrol", "update", "nodename=" + self.node.host, "state=resume"])

    # ---- signals reach the job once

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

    def test_in_the_batch_step_scancel_batch_signal_is_forwarded_once(self):
        # scancel --batch --signal: the batch script's process alone (gpualert, exec'd).
        self.usr1_once_each_way(["--batch"], "exec {wrapped}")

    def test_in_an_srun_step_slurmstepd_signals_reach_the_job_once(self):
        # scancel --signal reaches every process of the srun step: the job has it
        # already, and gpualert does not send it again.
        self.usr1_once_each_way([], "srun {wrapped}")

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
        # KillWait is 10 s here: the job ignores SIGTERM, Slurm's SIGKILL ends gpualert too.
        run_dir = self.scancel_slow_job(-1)
        report = self.report(run_dir)
        self.assertEqual(report["label"], "cancelled")
        self.assertTrue(any(w.startswith("provisional:") for w in report["warnings"]), report)
        self.assertEqual(report["state"], "provisional")
        self.assertIn("Reason=None", " ".join(report["scheduler_lines"]))
        self.assertGreaterEqual(report["duration_s"], 2.0)
        entries = self.outbox_entries()
        self.assertEqual(len(entries), 1, entries)
        self.assertEqual(entries[0]["run_dir"], run_dir)
        self.assertGreater(entries[0]["not_before"], time.time() + 60)  # held back
        # The wrapper is gone: a sweep (an epilog, the next flush) reports the run at
        # once, from the log it left and Slurm's word, and its notice replaces the held one.
        sweep = subprocess.run([BIN, "sweep", "--no-flush", self.logs], capture_output=True,
                               text=True, env=dict(self.env, SLURM_CONF=self.node.conf), timeout=60)
        self.assertEqual(sweep.returncode, 0, sweep.stderr)
        self.assertRegex(sweep.stdout, r"^reconstructed\t" + re.escape(run_dir) + r"\tcancelled")
        report = self.report(run_dir)
        self.assertEqual(report["state"], "reconstructed", report)
        self.assertEqual(report["label"], "cancelled")
        self.assertEqual(report["signal"], "SIGKILL")  # Slurm's ExitCode 0:9
        entries = self.outbox_entries()
        self.assertEqual(len(entries), 1, entries)
        self.assertEqual(entries[0]["not_before"], 0)
        # A second sweep finds nothing more to do.
        again = subprocess.run([BIN, "sweep", "--no-flush", self.logs], capture_output=True,
                               text=True, env=dict(self.env, SLURM_CONF=self.node.conf), timeout=60)
        self.assertEqual(again.stdout, "")

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



@unittest.skipUnless(os.geteuid() == 0 and SlurmNode.available("linuxproc"),
                     "needs root and slurm-wlm + munge (scripts/install-deps.sh test installs them)")
class UnderLinuxprocTracking(SlurmCases, RunTestCase):
    TRACKING = "linuxproc"


@unittest.skipUnless(os.geteuid() == 0 and SlurmNode.available("cgroup"),
                     "needs root, slurm-wlm + munge and cgroup v1's freezer and memory controllers")
class UnderCgroupTracking(SlurmCases, RunTestCase):
    TRACKING = "cgroup"


if __name__ == "__main__":
    unittest.main()
