"""run diagnoses the ending: the verdict is in report.json with evidence line numbers,
a site's rules file extends the rules, and a broken one stops before the job runs."""
import os
import subprocess
import unittest

from harness import BIN, PY, RunTestCase, write_script

SITE_RULES = """
[[rule]]
id = "site-scratch-quota"
label = "disk_full"
tier = "cause"
patterns = ['scratch quota exhausted']
action = "clean /scratch or ask for more quota"
examples = ["lustre: scratch quota exhausted for user alice"]
"""

CASCADE = """
import sys
print("step 100 | loss 2.1", flush=True)
print("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 3 has a total capacity of 79.15 GiB", flush=True)
for r in (0, 1, 2):
    print(f"[rank{r}]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.", flush=True)
sys.exit(1)
"""

CAUGHT = """
import logging
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
print("epoch 1 step 20 | loss 0.71", flush=True)
try:
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB")
except RuntimeError as e:
    logging.error("Failed to execute the training process: %s", e)
"""

RECOVERED = """
print("step 3: CUDA out of memory. Tried to allocate 2.00 GiB, skipping the batch", flush=True)
print("step 4 | loss 0.70", flush=True)
print("training done", flush=True)
"""


class Diagnosis(RunTestCase):
    def test_root_cause_not_cascade_with_line_numbers(self):
        job = write_script(self.tmp, "cascade.py", CASCADE)
        p, run_dir = self.run_wrapped([PY, job])
        self.assertEqual(p.returncode, 1)
        rep = self.report(run_dir)
        self.assertEqual(rep["label"], "cuda_oom")
        self.assertEqual(rep["group"], "gpu software")
        self.assertEqual(rep["fields"].get("requested"), "4.00 GiB")
        lines = open(os.path.join(run_dir, "output.log"), "rb").read().split(b"\n")
        ev = rep["evidence"][0]
        self.assertIn(b"CUDA out of memory", lines[ev["line"] - 1], "evidence line numbers point into output.log")

    def test_header_is_not_evidence(self):
        # A job named after a failure is not evidence of it.
        p, run_dir = self.run_wrapped(["true"], opts=["--name", "cuda-oom-test"])
        self.assertEqual(self.report(run_dir)["label"], "success")

    def test_a_caught_error_printed_last_is_a_failure_and_the_status_stays_0(self):
        # A training script whose handler logs the exception and returns normally.
        job = write_script(self.tmp, "caught.py", CAUGHT)
        p, run_dir = self.run_wrapped([PY, job])
        self.assertEqual(p.returncode, 0, "the job's status is passed on as it is")
        rep = self.report(run_dir)
        self.assertEqual(rep["exit_code"], 0)
        self.assertEqual(rep["label"], "cuda_oom")
        self.assertIn("exit status 0, not believed", rep["evidence"][0]["text"])
        # The same message earlier, and the run went on to its end: a success.
        job = write_script(self.tmp, "recovered.py", RECOVERED)
        p, run_dir = self.run_wrapped([PY, job])
        self.assertEqual((p.returncode, self.report(run_dir)["label"]), (0, "success"))

    def test_wrapper_timeout_is_time_limit(self):
        p, run_dir = self.run_wrapped(["sleep", "30"], opts=["--timeout", "300ms"])
        self.assertEqual(self.report(run_dir)["label"], "time_limit")

    def test_site_rules_extend_the_default(self):
        rules = write_script(self.tmp, "site.toml", SITE_RULES, mode=0o644)
        job = "echo 'lustre: scratch quota exhausted for user alice'; exit 1"
        p, run_dir = self.run_wrapped(["sh", "-c", job], opts=["--rules", rules])
        self.assertEqual(p.returncode, 1)
        rep = self.report(run_dir)
        self.assertEqual((rep["label"], rep["rule"]), ("disk_full", "site-scratch-quota"))
        self.assertEqual(rep["action"], "clean /scratch or ask for more quota")

    def test_broken_rules_file_is_a_usage_error_before_the_job_runs(self):
        rules = write_script(self.tmp, "bad.toml", "[[rule]]\nid = \"x\"\nlabel = \"not_a_label\"\npatterns = ['(']\n",
                             mode=0o644)
        marker = os.path.join(self.tmp, "ran")
        p = subprocess.run([BIN, "run", "--log-dir", self.logs, "--rules", rules, "--", "touch", marker],
                           capture_output=True, env=self.env, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"bad.toml:", p.stderr)
        self.assertFalse(os.path.exists(marker))

    def test_classify_reads_a_run_directory_like_a_case(self):
        job = write_script(self.tmp, "cascade.py", CASCADE)
        _, run_dir = self.run_wrapped([PY, job])
        p = subprocess.run([BIN, "classify", "--json", os.path.join(run_dir, "output.log")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"label": "cuda_oom"', p.stdout)

    def test_a_bare_sigkill_is_judged_by_what_the_host_could_tell(self):
        # A real kill -9 with nothing in the log. What the run could read (/dev/kmsg,
        # the memory cgroup's counter) is in report.json, and decides between "not the
        # OOM killer" and "likely the OOM killer, unconfirmed"; classify on the run
        # directory reads the same facts back and agrees.
        p, run_dir = self.run_wrapped(["sh", "-c", "echo step 1; kill -9 $$"])
        self.assertEqual(p.returncode, -9)
        rep = self.report(run_dir)
        host_read = rep["sources"]["kernel_log"].startswith("read") or "cgroup_oom_kills" in rep
        if "cgroup_oom_kills" in rep:
            self.assertEqual(rep["cgroup_oom_kills"], 0)
        self.assertEqual(rep["label"], "unknown" if host_read else "host_oom")
        self.assertEqual(rep["rule"], "killed-without-a-cause" if host_read else "killed-likely-oom")
        c = subprocess.run([BIN, "classify", "--json", os.path.join(run_dir, "output.log")],
                           capture_output=True, text=True)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn('"rule": "%s"' % rep["rule"], c.stdout)
        # The same log on its own, with nothing on the host to ask.
        alone = os.path.join(self.tmp, "alone")
        os.makedirs(alone)
        with open(os.path.join(run_dir, "output.log"), "rb") as src, \
                open(os.path.join(alone, "output.log"), "wb") as dst:
            dst.write(src.read())
        c = subprocess.run([BIN, "classify", "--json", "--signal", "SIGKILL",
                            os.path.join(alone, "output.log")], capture_output=True, text=True)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn('"rule": "killed-likely-oom"', c.stdout)


if __name__ == "__main__":
    unittest.main()
