"""`gpualert sweep`: runs whose wrapper is gone are found and reported, once; runs still
going are left alone. Outside Slurm (test_run_slurm.py has the scheduler's endings).
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, RunTestCase, wait_for, write_script  # noqa: E402

STEPS = """
import sys, time
for i in range(1, 100000):
    print("step %d loss %.3f" % (i, 1.0 / i), flush=True)
    time.sleep(0.05)
"""


class Sweep(RunTestCase):
    def start_run(self, name="job"):
        job = write_script(self.tmp, "steps.py", STEPS)
        p = subprocess.Popen([BIN, "run", "-q", "--name", name, "--log-dir", self.logs, "--", PY, job],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env,
                             start_new_session=True)
        self.assertTrue(wait_for(lambda: self.steps(name) >= 3, timeout=20))
        return p

    def steps(self, name):
        logs = glob.glob(os.path.join(self.logs, name + "-*", "output.log"))
        if not logs:
            return 0
        with open(logs[0], errors="replace") as f:
            return f.read().count("step ")

    def sweep(self, *args):
        r = subprocess.run([BIN, "sweep", "--no-flush", *args], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def kill_wrapper(self, p):
        os.kill(p.pid, signal.SIGKILL)
        p.wait()  # the job dies of its next print (EPIPE: nobody reads its pipe)

    def test_a_killed_wrapper_is_reported_once_and_a_live_one_is_left_alone(self):
        live = self.start_run("live")
        dead = self.start_run("dead")
        try:
            self.kill_wrapper(dead)
            out = self.sweep(self.logs)
            dead_dir = os.path.dirname(glob.glob(os.path.join(self.logs, "dead-*", "output.log"))[0])
            live_dir = os.path.dirname(glob.glob(os.path.join(self.logs, "live-*", "output.log"))[0])
            self.assertRegex(out, r"^reconstructed\t" + re.escape(dead_dir) + r"\t")
            self.assertNotIn(live_dir, out)
            self.assertFalse(os.path.exists(os.path.join(live_dir, "report.json")))
            report = self.report(dead_dir)
            self.assertEqual(report["state"], "reconstructed")
            self.assertIn("was killed", report["reconstructed"])
            self.assertIsNone(report["exit_code"])  # nothing says how the job ended
            self.assertEqual(report["evidence"][0]["source"], "wrapper")
            self.assertGreater(report["log_bytes"], 0)
            # The file the killed wrapper had made ready for its report is gone with it; the
            # live wrapper's is still there.
            self.assertEqual(glob.glob(os.path.join(dead_dir, "report.json.tmp.*")), [])
            self.assertEqual(len(glob.glob(os.path.join(live_dir, "report.json.tmp.*"))), 1)
            # The notice went to the outbox (nothing configured), and only once.
            metas = glob.glob(os.path.join(self.state, "outbox", "new", "*.meta"))
            self.assertEqual(len(metas), 1, metas)
            self.assertEqual(self.sweep(self.logs), "")
            self.assertEqual(len(glob.glob(os.path.join(self.state, "outbox", "new", "*.meta"))), 1)
        finally:
            live.send_signal(signal.SIGTERM)
            live.wait(timeout=30)
        # The live run ended by itself: its own report, nothing for a sweep to do.
        self.assertEqual(self.report(live_dir)["state"], "final")
        self.assertEqual(self.sweep(self.logs), "")

    def test_the_journal_finds_a_lost_run_without_its_log_dir_and_flush_reports_it(self):
        dead = self.start_run("lost")
        self.kill_wrapper(dead)
        entries = os.listdir(os.path.join(self.state, "running"))
        self.assertEqual(len(entries), 1, entries)
        # `outbox flush` sweeps the journal first (no log dir named anywhere).
        r = subprocess.run([BIN, "outbox", "flush"], capture_output=True, text=True, env=self.env,
                           timeout=60, cwd="/")
        run_dir = os.path.dirname(glob.glob(os.path.join(self.logs, "lost-*", "output.log"))[0])
        self.assertEqual(self.report(run_dir)["state"], "reconstructed", r.stderr)
        self.assertEqual(os.listdir(os.path.join(self.state, "running")), [])

    def test_a_run_ended_normally_leaves_no_journal_entry(self):
        # A job that goes on past 50 ms has an entry while it runs, removed at its end.
        p, run_dir = self.run_wrapped([PY, "-c", "import time; print('hi'); time.sleep(0.3)"])
        self.assertEqual(p.returncode, 0)
        self.assertEqual(os.listdir(os.path.join(self.state, "running")), [])
        with open(os.path.join(run_dir, "output.log")) as f:
            self.assertRegex(f.read(), r"(?m)^#gpualert# wrapper: pid=\d+ boot=[0-9a-f-]{36}$")
        self.assertEqual(self.sweep(self.logs), "")

    def test_a_run_from_before_a_reboot_is_a_node_failure(self):
        dead = self.start_run("rebooted")
        self.kill_wrapper(dead)
        log = glob.glob(os.path.join(self.logs, "rebooted-*", "output.log"))[0]
        # The header as it was written on an earlier boot of this host.
        with open(log) as f:
            text = f.read()
        with open(log, "w") as f:
            f.write(re.sub(r"boot=[0-9a-f-]+", "boot=00000000-0000-0000-0000-000000000000", text))
        self.sweep(self.logs)
        report = self.report(os.path.dirname(log))
        self.assertEqual(report["label"], "node_failure", report)
        self.assertIn("reboot", report["reconstructed"])

    def test_concurrent_sweeps_report_a_run_once(self):
        # Each later run also starts a sweep of the journal in the background: a lost
        # run may be reported by it, or by one of the three sweeps here, never twice.
        for i in range(3):
            self.kill_wrapper(self.start_run("lost%d" % i))
        outs = []
        threads = [threading.Thread(target=lambda: outs.append(self.sweep(self.logs)))
                   for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lines = [l for o in outs for l in o.splitlines()]
        self.assertEqual(len(set(l.split("\t")[1] for l in lines)), len(lines), outs)
        time.sleep(1.0)  # a background sweep still sending
        for log in glob.glob(os.path.join(self.logs, "lost*", "output.log")):
            self.assertEqual(self.report(os.path.dirname(log))["state"], "reconstructed")
        self.assertEqual(len(glob.glob(os.path.join(self.state, "outbox", "new", "*.meta"))), 3)


if __name__ == "__main__":
    unittest.main()
