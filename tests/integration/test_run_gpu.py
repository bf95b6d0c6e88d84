"""run with GPU facts: gpualert-gpu loads a fake libnvidia-ml.so.1 (tests/fake_nvml) through
the same dlopen as the real one; the inventory, the timeline, Xids, a GPU that is lost,
NVML errors, no driver at all, and the notice of a CUDA OOM that names the GPU."""
import email
import email.policy
import json
import os
import signal
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from harness import BIN, PY, RunTestCase, wait_for, write_script  # noqa: E402
from servers import SmtpSink  # noqa: E402

FAKE = os.environ.get("GPUALERT_FAKE_NVML") or os.path.join(
    os.path.dirname(BIN), "fake_nvml", "libnvidia-ml.so.1")
GIB = 1 << 30

TWO_GPUS = f"""
driver 550.54.15
cuda 12040
gpu 0 name="NVIDIA H200" uuid=GPU-0000aaaa serial=1650724000001 pci=00000000:19:00.0 memory={141 * GIB} ecc=1
gpu 1 name="NVIDIA H200" uuid=GPU-1111bbbb serial=1650724000002 pci=00000000:3B:00.0 memory={141 * GIB} ecc=1
at 0 gpu 0 used={1 * GIB} util=10 temp=40 power=120000
at 0 gpu 1 used={2 * GIB} util=20 temp=41 power=130000
at 1 gpu 1 used={7 * GIB} util=97 temp=55 power=650000 throttle=4
"""

# Waits (bounded) until the helper's timeline holds a line the test names, so that
# the job's end does not depend on how fast the machine is.
WAIT_FOR = r"""
import json, os, sys, time
want = json.loads(sys.argv[1])
path = os.path.join(os.environ["GPUALERT_RUN_DIR"], "gpus.jsonl")
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        lines = [json.loads(l) for l in open(path) if l.endswith("\n")]
    except FileNotFoundError:
        lines = []
    if any(all(l.get(k) == v for k, v in want.items()) for l in lines):
        print("saw", want)
        sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    time.sleep(0.05)
print("timed out waiting for", want)
sys.exit(3)
"""

OOM_JOB = r"""
import json, os, sys, time
# Two readings of the helper first (bounded), so that the notice has a chart to draw.
path = os.path.join(os.environ["GPUALERT_RUN_DIR"], "gpus.jsonl")
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        if len({json.loads(l)["t"] for l in open(path) if '"type":"sample"' in l}) >= 2:
            break
    except FileNotFoundError:
        pass
    time.sleep(0.05)
print("epoch 3 step 1200 | loss 1.92")
print('''Traceback (most recent call last):
  File "train.py", line 88, in <module>
    loss = model(batch).loss
  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1532, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.19 GiB is free. Including non-PyTorch memory, this process has 138.60 GiB memory in use. Of the allocated memory 136.10 GiB is allocated by PyTorch, and 1.21 GiB is reserved by PyTorch but unallocated.''', file=sys.stderr)
sys.exit(1)
"""


class RunGpu(RunTestCase):
    def setUp(self):
        super().setUp()
        self.assertTrue(os.path.exists(FAKE), f"the fake NVML is not built: {FAKE}")
        self.driver = write_script(self.tmp, "nvidia-version", "NVRM version: fake\n", 0o644)

    def gpu_env(self, script, **extra):
        path = write_script(self.tmp, "nvml.script", script, 0o644)
        env = dict(self.env, GPUALERT_NVML_LIBRARY=FAKE, GPUALERT_FAKE_NVML_SCRIPT=path,
                   GPUALERT_NVIDIA_DRIVER_FILE=self.driver, GPUALERT_GPU_SAMPLE_SECONDS="1")
        env.update(extra)
        return env

    @staticmethod
    def timeline(run_dir):
        with open(os.path.join(run_dir, "gpus.jsonl")) as f:
            return [json.loads(line) for line in f]

    def test_only_the_jobs_gpu_is_inventoried_and_sampled(self):
        env = self.gpu_env(TWO_GPUS, CUDA_VISIBLE_DEVICES="1")
        want = json.dumps({"type": "sample", "memory_used": 7 * GIB})
        p, run_dir = self.run_wrapped([PY, "-c", WAIT_FOR, want], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = self.report(run_dir)
        self.assertEqual(rep["sources"]["gpu"], "read")
        self.assertEqual(len(rep["gpus"]), 1, rep["gpus"])
        g = rep["gpus"][0]
        self.assertEqual(g["uuid"], "GPU-1111bbbb")
        self.assertEqual(g["index"], 1)
        self.assertEqual(g["job_index"], 0)
        self.assertEqual(g["name"], "NVIDIA H200")
        self.assertEqual(g["serial"], "1650724000002")
        self.assertEqual(g["pci"], "00000000:3B:00.0")
        self.assertEqual(g["memory_total"], 141 * GIB)
        self.assertEqual(g["memory_used_peak"], 7 * GIB)
        self.assertEqual(g["memory_used_last"], 7 * GIB)
        self.assertEqual(g["utilization_last"], 97)
        self.assertEqual(g["throttle_reasons_last"], 4)
        self.assertTrue(g["ecc_mode"])
        self.assertEqual(g["xids"], [])
        lines = self.timeline(run_dir)
        self.assertEqual([l["uuid"] for l in lines if l["type"] == "inventory"], ["GPU-1111bbbb"])
        samples = [l for l in lines if l["type"] == "sample"]
        self.assertTrue(samples[-1].get("after_end"), "one reading once the job is gone")
        self.assertFalse(any(l.get("after_end") for l in samples[:-1]))
        self.assertEqual(samples[0]["memory_used"], 2 * GIB)
        self.assertTrue(all(l["uuid"] == "GPU-1111bbbb" for l in samples))
        self.assertEqual(lines[0]["driver"], "550.54.15")

    def test_the_jobs_own_gpu_memory_and_other_processes(self):
        procs = os.path.join(self.tmp, "procs")
        script = TWO_GPUS.replace("gpu 0 name", f"gpu 0 procs={procs} name")
        # The job's child holds 3 GiB (as a DataLoader worker or a launcher's rank would);
        # pid 1 is not the job's and counts as another process on the GPU.
        job = f"""
import json, os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open({procs!r} + ".tmp", "w") as f:
    f.write(f"{{child.pid}} {3 * GIB}\\n1 {5 * GIB}\\n")
os.rename({procs!r} + ".tmp", {procs!r})
code = subprocess.call([sys.executable, "-c", {WAIT_FOR!r}, json.dumps({{"job_memory_used": {3 * GIB}}})])
child.kill()
sys.exit(code)
"""
        p, run_dir = self.run_wrapped([PY, "-c", job], env=self.gpu_env(script, CUDA_VISIBLE_DEVICES="0"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        g = self.report(run_dir)["gpus"][0]
        self.assertEqual(g["job_memory_used_peak"], 3 * GIB)
        self.assertEqual(g["other_processes_last"], 1)

    def test_gpu_named_by_uuid_and_slurm_index(self):
        for extra, uuid in (({"CUDA_VISIBLE_DEVICES": "GPU-0000aaaa"}, "GPU-0000aaaa"),
                            ({"CUDA_VISIBLE_DEVICES": "0", "SLURM_JOB_GPUS": "1"}, "GPU-1111bbbb"),
                            ({"NVIDIA_VISIBLE_DEVICES": "GPU-1111bbbb"}, "GPU-1111bbbb")):
            with self.subTest(extra=extra):
                p, run_dir = self.run_wrapped(["true"], env=self.gpu_env(TWO_GPUS, **extra))
                self.assertEqual(p.returncode, 0, p.stderr)
                rep = self.report(run_dir)
                self.assertEqual([g["uuid"] for g in rep["gpus"]], [uuid])
                os.rename(run_dir, run_dir + ".done")

    def test_xid_and_a_gpu_that_is_lost(self):
        script = TWO_GPUS + "at 0.3 xid 0 79\nat 1 gpu 0 error=15\n"
        env = self.gpu_env(script, CUDA_VISIBLE_DEVICES="0,1")
        p, run_dir = self.run_wrapped([PY, "-c", WAIT_FOR, json.dumps({"type": "lost"}), "1"], env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        rep = self.report(run_dir)
        lost = rep["gpus"][0]
        self.assertEqual(lost["uuid"], "GPU-0000aaaa")
        self.assertEqual([x["xid"] for x in lost["xids"]], [79])
        self.assertIn("lost_at", lost)
        self.assertNotIn("ecc_end", lost, "a lost GPU's counters can't be read at the end")
        self.assertEqual(rep["gpus"][1]["xids"], [])
        self.assertIn("ecc_delta", rep["gpus"][1])
        lines = self.timeline(run_dir)
        self.assertEqual([(l["uuid"], l["xid"]) for l in lines if l["type"] == "xid"],
                         [("GPU-0000aaaa", 79)])
        self.assertIn("GPU is lost", [l for l in lines if l["type"] == "lost"][0]["error"])
        # NVML's Xid is host evidence: labelled as the kernel's line would be.
        self.assertEqual(rep["label"], "gpu_lost")
        self.assertEqual(rep["fields"]["pci"], "0000:19:00")
        self.assertIn({"line": 1, "source": "gpu",
                       "text": "NVRM: Xid (PCI:0000:19:00): 79, reported by NVML for GPU-0000aaaa"},
                      rep["evidence"])
        # `gpualert classify` on the run directory sees the same host facts.
        c = subprocess.run([BIN, "classify", "--json", os.path.join(run_dir, "output.log")],
                           capture_output=True, text=True, env=self.env, timeout=60)
        self.assertEqual(json.loads(c.stdout)["label"], "gpu_lost", c.stdout + c.stderr)

    def test_a_killed_wrapper_leaves_the_summary_for_sweep(self):
        env = self.gpu_env(TWO_GPUS + "at 0.3 xid 1 79\n", CUDA_VISIBLE_DEVICES="1")
        steps = "import time\nwhile True:\n    print('step', flush=True)\n    time.sleep(0.05)\n"
        p = subprocess.Popen([BIN, "run", "-q", "--log-dir", self.logs, "--", PY, "-c", steps],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                             start_new_session=True)
        run_dir = None

        def saw_xid():
            nonlocal run_dir
            run_dir = self.only_run_dir()
            path = os.path.join(run_dir or "", "gpus.jsonl")
            return os.path.exists(path) and '"type":"xid"' in open(path).read()
        try:
            self.assertTrue(wait_for(saw_xid, timeout=30))
        finally:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
        # The helper is told by the kernel that its parent is gone, and writes its summary.
        summary = os.path.join(run_dir, "gpus-summary.json")
        self.assertTrue(wait_for(lambda: os.path.exists(summary), timeout=30))
        r = subprocess.run([BIN, "sweep", "--no-flush", self.logs], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = self.report(run_dir)
        self.assertEqual(rep["state"], "reconstructed")
        self.assertEqual(rep["sources"]["gpu"], "read")
        self.assertEqual([x["xid"] for x in rep["gpus"][0]["xids"]], [79])
        self.assertEqual(rep["label"], "gpu_lost")

    def test_ecc_counters_that_rose(self):
        script = TWO_GPUS + (f"at 0 gpu 0 ecc_unc=2 ecc_corr=5\n"
                             f"at 1 gpu 0 used={9 * GIB} ecc_unc=3 ecc_corr=9\n")
        env = self.gpu_env(script, CUDA_VISIBLE_DEVICES="0")
        # Ends once the helper saw the readings that come with the new counters.
        want = json.dumps({"type": "sample", "memory_used": 9 * GIB})
        p, run_dir = self.run_wrapped([PY, "-c", WAIT_FOR, want], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        g = self.report(run_dir)["gpus"][0]
        self.assertEqual(g["ecc_start"]["volatile_uncorrected"], 2)
        self.assertEqual(g["ecc_end"]["volatile_uncorrected"], 3)
        self.assertEqual(g["ecc_delta"]["volatile_uncorrected"], 1)
        self.assertEqual(g["ecc_delta"]["aggregate_corrected"], 4)

    def test_nvml_that_fails_to_start_is_named_and_changes_nothing(self):
        env = self.gpu_env("init 9\n")
        p, run_dir = self.run_wrapped(["sh", "-c", "exit 7"], env=env)
        self.assertEqual(p.returncode, 7)
        rep = self.report(run_dir)
        self.assertEqual(rep["sources"]["gpu"], "unavailable: nvmlInit failed: Driver Not Loaded (9)")
        self.assertNotIn("gpus", rep)

    def test_missing_library_is_named(self):
        env = self.gpu_env(TWO_GPUS, GPUALERT_NVML_LIBRARY=os.path.join(self.tmp, "nope.so.1"))
        p, run_dir = self.run_wrapped(["true"], env=env)
        self.assertEqual(p.returncode, 0)
        src = self.report(run_dir)["sources"]["gpu"]
        self.assertTrue(src.startswith("unavailable: cannot load " + self.tmp), src)

    def test_no_driver_costs_a_stat_and_says_why(self):
        env = self.gpu_env(TWO_GPUS, GPUALERT_NVIDIA_DRIVER_FILE=os.path.join(self.tmp, "absent"))
        p, run_dir = self.run_wrapped(["true"], env=env)
        self.assertEqual(p.returncode, 0)
        rep = self.report(run_dir)
        self.assertEqual(rep["sources"]["gpu"],
                         f"no NVIDIA driver ({self.tmp}/absent: No such file or directory)")
        self.assertNotIn("gpus", rep)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "gpus.jsonl")))

    def test_sampling_off_by_setting(self):
        env = self.gpu_env(TWO_GPUS, GPUALERT_GPU_SAMPLE_SECONDS="0")
        p, run_dir = self.run_wrapped(["true"], env=env)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.report(run_dir)["sources"]["gpu"], "off (gpu_sample_seconds = 0)")

    def test_cuda_oom_notice_names_the_gpu_its_memory_and_the_request(self):
        script = TWO_GPUS + f"at 0 gpu 1 used={int(139.8 * GIB)} util=100\n"
        with SmtpSink() as smtp:
            env = self.gpu_env(script, CUDA_VISIBLE_DEVICES="1,0", GPUALERT_TO="me@example.org",
                               GPUALERT_FROM="gpualert@example.org",
                               GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}")
            p = subprocess.run([BIN, "run", "--log-dir", self.logs, "--", PY, "-c", OOM_JOB],
                               capture_output=True, env=env, cwd=self.tmp, timeout=120)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(len(smtp.messages), 1)
            raw = smtp.messages[0][2]
        rep = self.report(self.only_run_dir())
        self.assertEqual(rep["label"], "cuda_oom")
        self.assertEqual(rep["fields"]["requested"], "2.00 GiB")
        self.assertEqual(rep["gpus"][0]["uuid"], "GPU-1111bbbb", "CUDA device 0 is NVML's GPU 1")
        self.assertEqual(rep["gpus"][0]["memory_used_last"], int(139.8 * GIB))
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        text = msg.get_body(preferencelist=("plain",)).get_content().replace("\r\n", "\n")
        first_screen = text.split("\nEvidence\n")[0]
        self.assertNotEqual(first_screen, text)
        self.assertRegex(first_screen, r"\nGPU 0 \(NVIDIA H200, 141\.0 GiB, 00000000:3B:00\.0\): "
                         r"139\.8 GiB used \d+\.\d s before the end, peak 139\.8 GiB; "
                         r"the job asked for 2\.00 GiB more\n")
        self.assertIn("\nGPUs\n  GPU 0: NVIDIA H200 (00000000:3B:00.0), 141.0 GiB, peak 139.8 GiB", text)
        self.assertIn("\n  GPU 1: NVIDIA H200 (00000000:19:00.0), 141.0 GiB, peak 1.0 GiB", text)
        html = msg.get_body(preferencelist=("html",)).get_content()
        self.assertIn("139.8 GiB used", html)
        # The chart: a PNG beside the HTML, which shows it by its Content-ID.
        self.assertIn('<img src="cid:gpu-chart@gpualert"', html)
        pngs = [p for p in msg.walk() if p.get_content_type() == "image/png"]
        self.assertEqual(len(pngs), 1)
        self.assertEqual(pngs[0]["Content-ID"], "<gpu-chart@gpualert>")
        self.assertTrue(pngs[0].get_content().startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertIn("<th style=", html)
        self.assertIn("00000000:19:00.0", html)

    def test_stall_notice_gives_each_gpus_last_reading(self):
        # The job prints once it saw GPU 1 at 97 %, then is silent until the test has the
        # stall mail (bounded), so the notice is read while the helper still samples.
        flag = os.path.join(self.tmp, "stall-mail-arrived")
        want = json.dumps({"type": "sample", "utilization": 97})
        waiter = write_script(self.tmp, "wait_for.py", WAIT_FOR, 0o644)
        job = (f"{PY} {waiter} '{want}' && i=0; while [ ! -e {flag} ] && [ $i -lt 600 ]; "
               f"do sleep 0.1; i=$((i+1)); done")
        with SmtpSink() as smtp:
            env = self.gpu_env(TWO_GPUS, CUDA_VISIBLE_DEVICES="1", GPUALERT_TO="me@example.org",
                               GPUALERT_FROM="gpualert@example.org",
                               GPUALERT_SMTP_URL=f"smtp://127.0.0.1:{smtp.port}")

            def watch():
                if wait_for(lambda: len(smtp.messages) >= 1, timeout=60):
                    open(flag, "w").close()
            t = threading.Thread(target=watch)
            t.start()
            p = subprocess.run([BIN, "run", "--log-dir", self.logs, "--stall", "1s", "--",
                                "sh", "-c", job], capture_output=True, env=env, cwd=self.tmp,
                               timeout=120)
            t.join()
            messages = smtp.messages
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(messages), 2)
        msg = email.message_from_bytes(messages[0][2], policy=email.policy.default)
        self.assertIn("STALLED", msg["Subject"])
        text = msg.get_body(preferencelist=("plain",)).get_content().replace("\r\n", "\n")
        self.assertRegex(text, r"\nGPUs at the last reading\n  GPU 0 \(NVIDIA H200\): "
                         r"utilisation 97%, memory 7\.0 GiB of 141\.0 GiB \(read ")


if __name__ == "__main__":
    unittest.main()
