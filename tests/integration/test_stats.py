"""`gpualert stats`: the endings of many run directories, from their report.json only.

Run directories are written by the test (report.json as `run` writes it, a few made by
really running `gpualert run`); the counts expected are computed from what was written.
"""
import base64
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest
from collections import Counter

from harness import BIN, PY, RunTestCase, write_script

UTC = datetime.timezone.utc

CASCADE = """
import sys
print("step 100 | loss 2.1", flush=True)
print("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 3 has a total capacity of 79.15 GiB", flush=True)
sys.exit(1)
"""


def iso(t, offset_minutes=0):
    tz = datetime.timezone(datetime.timedelta(minutes=offset_minutes))
    return datetime.datetime.fromtimestamp(t, tz).isoformat(timespec="seconds")


def report(label, rule, host, ended, env=None, fields=None, state="final", name="train"):
    """A report.json as `run` writes it (keys of report/run_report.cpp)."""
    r = {
        "name": name, "command": "python3 train.py", "argv": ["python3", "train.py"],
        "cwd": "/home/u/project", "user": "u", "host": host,
        "started": ended, "ended": ended, "duration_s": 12.5,
        "exit_code": 0 if label == "success" else 1, "signal": None,
        "core_dumped": False, "wrapper_timeout": False, "log_bytes": 1234,
        "log_fallback": None, "env": env or {}, "sources": {"kernel": "read"},
        "kernel_log_read": True, "warnings": [], "state": state,
        "run_dir": "/elsewhere/" + name, "log": "/elsewhere/" + name + "/output.log",
    }
    if label is not None:
        r.update({"label": label, "rule": rule, "group": "x", "action": "y",
                  "evidence": [{"line": 3, "source": "log", "text": "evidence"}],
                  "fields": fields or {}})
    return r


class Stats(RunTestCase):
    def setUp(self):
        super().setUp()
        os.makedirs(self.logs)
        self.now = int(time.time())
        self.n = 0

    def put(self, rep, raw=None, dirname=None):
        """A run directory holding output.log and report.json (rep as JSON, or raw bytes)."""
        self.n += 1
        d = os.path.join(self.logs.encode(), dirname or b"run-%05d" % self.n)
        os.makedirs(d)
        with open(os.path.join(d, b"output.log"), "wb") as f:
            f.write(b"#gpualert# header\n")
        with open(os.path.join(d, b"report.json"), "wb") as f:
            f.write(raw if raw is not None else json.dumps(rep, indent=2).encode())
        return d

    def stats(self, *args, expect=0, env=None, cwd=None):
        p = subprocess.run([BIN, "stats", *args], capture_output=True, env=env or self.env,
                           cwd=cwd or self.tmp, timeout=120)
        self.assertEqual(p.returncode, expect, p.stderr)
        return p

    def stats_json(self, *args, **kw):
        return json.loads(self.stats("--json", *args, **kw).stdout)

    def test_labels_nodes_gpus_drain_candidates_and_top_causes(self):
        t = self.now - 3600
        written = []

        def put(label, rule, host, age, **kw):
            rep = report(label, rule, host, iso(t - age), **kw)
            written.append((rep, self.put(rep).decode()))

        # gpu-a: three hardware endings, one naming the GPU by its PCI address.
        put("gpu_lost", "xid-79", "gpu-a", 500, env={"CUDA_VISIBLE_DEVICES": "0"})
        put("gpu_lost", "xid-79", "gpu-a", 100, env={"SLURM_JOB_GPUS": "2,3"},
            fields={"pci": "0000:3b:00", "xid": "79"})
        put("gpu_ecc", "xid-48", "gpu-a", 300, env={"CUDA_VISIBLE_DEVICES": "1"})
        # gpu-b: one hardware ending only (not a candidate); CUDA OOMs on CUDA device 1 of
        # a job Slurm gave GPUs 4 and 5 (device-confined: CUDA renumbers them 0 and 1).
        put("gpu_lost", "xid-79", "gpu-b", 50)
        for age in (10, 20, 30, 40):
            put("cuda_oom", "cuda-oom-torch", "gpu-b", age,
                env={"SLURM_JOB_GPUS": "4,5", "CUDA_VISIBLE_DEVICES": "0,1"}, fields={"gpu": "1"})
        # gpu-c: two node failures; successes over two GPUs each.
        put("node_failure", "slurm-node-fail", "gpu-c", 900)
        put("node_failure", "slurm-node-fail", "gpu-c", 800)
        for age in (1, 2, 3):
            put("success", "success", "gpu-c", age, env={"CUDA_VISIBLE_DEVICES": "0,1"})
        put("script_error", "python-traceback", "gpu-c", 5)

        j = self.stats_json(self.logs)
        self.assertEqual(j["runs"], len(written))
        self.assertEqual(j["labels"], dict(Counter(r["label"] for r, _ in written)))
        self.assertEqual(j["log_dirs"], [self.logs])
        self.assertEqual(j["skipped"], {"malformed": 0, "no_report": 0, "outside_window": 0,
                                        "undated": 0})
        for host in ("gpu-a", "gpu-b", "gpu-c"):
            mine = [r for r, _ in written if r["host"] == host]
            self.assertEqual(j["nodes"][host]["runs"], len(mine))
            self.assertEqual(j["nodes"][host]["failed"],
                             sum(r["label"] != "success" for r in mine))
            self.assertEqual(j["nodes"][host]["labels"], dict(Counter(r["label"] for r in mine)))

        gpus = {(g["host"], g["gpu"]): g for g in j["gpus"]}
        self.assertEqual(gpus[("gpu-b", "gpu 5")]["labels"], {"cuda_oom": 4})
        self.assertNotIn(("gpu-b", "gpu 1"), gpus)  # the CUDA index mapped to Slurm's number
        self.assertEqual(gpus[("gpu-a", "pci 0000:3b:00")]["labels"], {"gpu_lost": 1})
        self.assertNotIn(("gpu-a", "gpu 2"), gpus)  # the Xid named the GPU: not both of the job's
        self.assertEqual(gpus[("gpu-a", "gpu 0")]["labels"], {"gpu_lost": 1})
        self.assertEqual(gpus[("gpu-c", "gpu 0")]["labels"], {"success": 3})
        self.assertEqual(gpus[("gpu-c", "gpu 1")]["labels"], {"success": 3})
        # Runs with no GPU in their report: gpu-b's gpu_lost, gpu-c's failures.
        self.assertEqual(j["runs_without_gpu"], 4)

        drain = {d["host"]: d for d in j["drain_candidates"]}
        self.assertEqual(set(drain), {"gpu-a", "gpu-c"})
        self.assertEqual(j["drain_candidates"][0]["host"], "gpu-a")  # most endings first
        self.assertEqual(drain["gpu-a"]["count"], 3)
        self.assertEqual(drain["gpu-a"]["labels"], {"gpu_lost": 2, "gpu_ecc": 1})
        self.assertEqual(drain["gpu-a"]["last"], iso(t - 100))
        self.assertEqual(drain["gpu-a"]["last_run"], written[1][1])
        self.assertEqual(set(drain["gpu-a"]["gpus"]), {"gpu 0", "gpu 1", "pci 0000:3b:00"})
        self.assertEqual(drain["gpu-c"]["labels"], {"node_failure": 2})

        top = j["top_causes"]
        self.assertEqual([(c["label"], c["rule"], c["count"]) for c in top[:3]],
                         [("cuda_oom", "cuda-oom-torch", 4), ("gpu_lost", "xid-79", 3),
                          ("node_failure", "slurm-node-fail", 2)])
        newest_oom = [d for r, d in written if r["label"] == "cuda_oom" and r["ended"] == iso(t - 10)]
        self.assertEqual(top[0]["example"], newest_oom[0])
        self.assertNotIn("success", [c["label"] for c in top])

        text = self.stats(self.logs).stdout.decode()
        self.assertTrue(text.startswith("%d runs in %s\n" % (len(written), self.logs)), text)
        drain_block = text.split("\nDrain candidates")[1].split("\n\n")[0]
        self.assertRegex(drain_block, r"\n  gpu-a +3  gpu_lost 2, gpu_ecc 1; last " + re.escape(iso(t - 100)))
        self.assertIn(written[1][1], drain_block)
        self.assertRegex(drain_block, r"\n  gpu-c +2  node_failure 2")
        self.assertNotIn("gpu-b", drain_block)
        causes = text.split("\nTop causes")[1].split("\n\n")[0].splitlines()[1:]
        self.assertRegex(causes[0], r"^ +4  cuda_oom, cuda-oom-torch  " + re.escape(newest_oom[0]) + "$")
        gpu_block = text.split("\nPer GPU with failures")[1]
        self.assertRegex(gpu_block, r"\n  gpu-b gpu 5 +4 +4  cuda_oom 4\n")
        self.assertRegex(gpu_block, r"\n  gpu-a pci 0000:3b:00 +1 +1  gpu_lost 1\n")
        self.assertNotIn("gpu-c", gpu_block)  # only successes there: counted, not listed
        self.assertTrue(gpu_block.endswith("\n  2 GPUs had no failure\n  4 runs named no GPU\n"),
                        gpu_block)

    def test_since_keeps_runs_that_ended_in_the_window_whatever_their_offset(self):
        recent = [self.put(report("cuda_oom", "r", "n1", iso(self.now - 86400, 330))),
                  self.put(report("success", "success", "n1", iso(self.now - 3600, -480)))]
        self.put(report("gpu_lost", "x", "n1", iso(self.now - 10 * 86400, 60)))
        self.put(report("gpu_lost", "x", "n1", iso(self.now - 8 * 86400)))
        undated = report("unknown", "exit-status", "n1", "")
        undated["started"] = undated["ended"] = "sometime"
        self.put(undated)

        j = self.stats_json("--since", "7d", self.logs)
        self.assertEqual(j["runs"], len(recent))
        self.assertEqual(j["labels"], {"cuda_oom": 1, "success": 1})
        self.assertEqual(j["skipped"]["outside_window"], 2)
        self.assertEqual(j["skipped"]["undated"], 1)
        self.assertEqual(j["drain_candidates"], [])
        since = datetime.datetime.fromisoformat(j["since"]).timestamp()
        self.assertAlmostEqual(since, self.now - 7 * 86400, delta=60)
        # Without --since, every run counts, an undated one too.
        everything = self.stats_json(self.logs)
        self.assertEqual(everything["runs"], 5)
        self.assertEqual([d["host"] for d in everything["drain_candidates"]], ["n1"])
        text = self.stats("--since", "7d", self.logs).stdout.decode()
        self.assertIn("2 runs in %s ended since " % self.logs, text)
        self.assertIn("2 runs ended earlier, 1 with no readable time", text)
        self.assertEqual(self.stats("--since", "a week", self.logs, expect=2).stdout, b"")

    def test_bad_reports_are_skipped_and_counted_and_states_are_counted(self):
        good = report("success", "success", "n1", iso(self.now))
        self.put(good)
        self.put(report("node_failure", "slurm-node-fail", "n1", iso(self.now),
                        state="reconstructed"))
        self.put(report(None, None, "n1", iso(self.now), state="provisional"))
        bad = {
            b"invalid": b"{\"label\": ",
            b"empty": b"",
            b"latin1": json.dumps(good).encode().replace(b'"n1"', b'"n\xe9"'),
            b"array": b"[1, 2]",
            b"wrong-type": json.dumps(dict(good, exit_code="one")).encode(),
            b"nul": b"\x00" * 10,
        }
        for name, raw in bad.items():
            self.put(None, raw=raw, dirname=b"bad-" + name)
        # A report.json that can't be read at all (a directory).
        os.makedirs(os.path.join(self.logs, "bad-unreadable", "report.json"))
        # Text from a report is shown on one line, without its control characters.
        self.put(report("\x1b[2Jcuda_oom\nforged", "r\rule", "n3", iso(self.now)))
        # A job's name and its run directory's name that are not UTF-8: kept as bytes.
        odd = report("cuda_oom", "cuda-oom-torch", "n2", iso(self.now), name="caf\ufffd")
        odd["name_b64"] = base64.b64encode(b"caf\xe9").decode()
        odd_dir = self.put(odd, dirname=b"caf\xe9-run")
        # Neither a run nor counted: a stray file and a directory with nothing of ours.
        open(os.path.join(self.logs, "notes.txt"), "w").close()
        os.makedirs(os.path.join(self.logs, "lost+found"))
        # A run still going: output.log but no report.json yet. Its log is a FIFO that
        # nobody writes: reading it would hang the command.
        os.makedirs(os.path.join(self.logs, "running"))
        os.mkfifo(os.path.join(self.logs, "running", "output.log"))

        p = self.stats("--json", self.logs)
        self.assertEqual(p.stderr, b"")
        j = json.loads(p.stdout)
        self.assertEqual(j["runs"], 5)
        self.assertEqual(j["skipped"]["malformed"], len(bad) + 1)
        self.assertEqual(j["skipped"]["no_report"], 1)
        self.assertEqual(len(j["malformed"]), 5)  # the first few, with why
        for m in j["malformed"]:
            self.assertTrue(m["path"].startswith(os.path.join(self.logs, "bad-")), m)
            self.assertIn(m["path"].split("/")[-2], m["error"])
        self.assertEqual(j["states"], {"final": 3, "reconstructed": 1, "provisional": 1})
        self.assertEqual(j["no_verdict"], 1)
        self.assertEqual(j["labels"], {"success": 1, "node_failure": 1, "cuda_oom": 1,
                                       "\x1b[2Jcuda_oom\nforged": 1})
        example = j["top_causes"][[c["label"] for c in j["top_causes"]].index("cuda_oom")]
        self.assertEqual(base64.b64decode(example["example_b64"]), odd_dir)
        self.assertEqual(example["example"], os.path.join(self.logs, "caf\ufffd-run"))

        text = self.stats(self.logs).stdout.decode()
        self.assertIn("\n  skipped %d report.json that could not be read or parsed" % (len(bad) + 1),
                      text)
        self.assertIn("\n  1 runs without report.json", text)
        self.assertIn("\n  1 reconstructed reports", text)
        self.assertIn("\n  1 provisional reports", text)
        self.assertIn("caf\ufffd-run", text)
        self.assertNotIn("\x1b", text)
        self.assertNotIn("\nforged", text)
        self.assertNotIn("\r", text)

    def test_runs_made_by_gpualert_run(self):
        job = write_script(self.tmp, "cascade.py", CASCADE)
        env = dict(self.env, CUDA_VISIBLE_DEVICES="4,5,6,7")
        self.run_wrapped([PY, job], env=env, opts=["--name", "oom"])
        self.run_wrapped(["true"], opts=["--name", "ok"])
        self.run_wrapped(["sh", "-c", "exit 3"], opts=["--name", "three"])
        reports = [self.report(os.path.join(self.logs, d)) for d in os.listdir(self.logs)]
        self.assertEqual(len(reports), 3)
        oom = [r for r in reports if r["name"] == "oom"][0]
        self.assertEqual(oom["label"], "cuda_oom")
        j = self.stats_json(self.logs)
        self.assertEqual(j["runs"], 3)
        self.assertEqual(j["labels"], dict(Counter(r["label"] for r in reports)))
        self.assertEqual(list(j["nodes"]), [oom["host"]])
        # "GPU 3" in the error is the job's fourth visible device.
        self.assertIn({"host": oom["host"], "gpu": "gpu 7", "runs": 1, "failed": 1,
                       "labels": {"cuda_oom": 1}}, j["gpus"])
        self.assertEqual(sorted(c["example"] for c in j["top_causes"]),
                         sorted(r["run_dir"] for r in reports if r["label"] != "success"))

    def test_default_log_dir_as_run_finds_it(self):
        self.put(report("success", "success", "n1", iso(self.now)))
        # $GPUALERT_LOG_DIR first.
        j = self.stats_json(env=dict(self.env, GPUALERT_LOG_DIR=self.logs))
        self.assertEqual((j["log_dirs"], j["runs"]), ([self.logs], 1))
        # Then the configuration's log_dir.
        cfg = os.path.join(self.tmp, "cfg", "gpualert")
        os.makedirs(cfg)
        with open(os.path.join(cfg, "config.toml"), "w") as f:
            f.write('log_dir = "%s"\n' % self.logs)
        self.assertEqual(self.stats_json()["log_dirs"], [self.logs])
        os.remove(os.path.join(cfg, "config.toml"))
        # Else ./gpualert-logs, which here does not exist: an error, with what was counted.
        p = self.stats(expect=1)
        self.assertIn(b"gpualert: stats: cannot read " + os.path.join(self.tmp, "gpualert-logs").encode(),
                      p.stderr)
        self.assertTrue(p.stdout.startswith(b"0 runs in "), p.stdout)
        shutil.move(self.logs, os.path.join(self.tmp, "gpualert-logs"))
        self.assertEqual(self.stats_json()["runs"], 1)
        # A broken configuration file is a usage error, as for every command.
        with open(os.path.join(cfg, "config.toml"), "w") as f:
            f.write("log_dir = \n")
        self.assertIn(b"gpualert: error:", self.stats(expect=2).stderr)

    def test_several_log_dirs_each_read_once(self):
        self.put(report("gpu_ecc", "xid-48", "n1", iso(self.now)))
        other = os.path.join(self.tmp, "other-logs")
        os.makedirs(os.path.join(other, "r1"))
        with open(os.path.join(other, "r1", "report.json"), "w") as f:
            json.dump(report("gpu_ecc", "xid-48", "n1", iso(self.now - 60)), f)
        j = self.stats_json(self.logs, other, self.logs + "/", os.path.relpath(other, self.tmp))
        self.assertEqual(j["log_dirs"], [self.logs, other])
        self.assertEqual(j["runs"], 2)
        self.assertEqual(j["drain_candidates"][0]["labels"], {"gpu_ecc": 2})
        self.assertEqual(j["drain_candidates"][0]["last_run"], os.path.join(self.logs, "run-00001"))

    def test_help(self):
        p = self.stats("--help")
        self.assertIn(b"Usage: gpualert stats", p.stdout)
        self.assertIn(b"--since DURATION", p.stdout)
        listing = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
        self.assertRegex(listing, r"\n  stats +labels per node")

    def test_timing_over_10000_run_dirs(self):
        """Prints how long 10,000 run directories take; asserts only the counts."""
        self.run_wrapped(["sh", "-c", "echo 'OSError: [Errno 28] No space left on device'; exit 1"])
        template = self.report(self.only_run_dir())
        # A report the size of a Slurm job's: its variables and a few evidence lines.
        slurm_env = {"SLURM_JOB_%s" % k: "value-%d" % n for n, k in enumerate(
            ["ID", "NAME", "PARTITION", "NODELIST", "NUM_NODES", "CPUS_PER_NODE", "ACCOUNT",
             "QOS", "USER", "UID", "GID", "END_TIME", "START_TIME", "GPUS", "RESERVATION"])}
        slurm_env.update({"NCCL_%d" % n: "x" * 40 for n in range(10)})
        evidence = [{"line": 1000 + n, "source": "log", "text": "E" * 160} for n in range(4)]
        labels = [("success", "success")] * 8 + [("cuda_oom", "cuda-oom-torch"),
                                                  ("gpu_lost", "xid-79")]
        big = os.path.join(self.tmp, "big")
        os.makedirs(big)
        expected = Counter()
        hardware = Counter()
        for i in range(10000):
            label, rule = labels[i % len(labels)]
            host = "node%03d" % (i % 250)
            r = dict(template, host=host, label=label, rule=rule, evidence=evidence,
                     ended=iso(self.now - i * 60),
                     env=dict(slurm_env, CUDA_VISIBLE_DEVICES=str(i % 8)))
            expected[label] += 1
            hardware[host] += label == "gpu_lost"
            d = os.path.join(big, "job-%05d" % i)
            os.mkdir(d)
            with open(os.path.join(d, "report.json"), "w") as f:
                json.dump(r, f, indent=2)
        size = os.path.getsize(os.path.join(big, "job-00000", "report.json"))
        for attempt in ("first", "second"):
            start = time.monotonic()
            p = self.stats("--json", big)
            elapsed = time.monotonic() - start
            print("\nstats over 10000 run dirs (report.json %d bytes each): %.2f s (%s)"
                  % (size, elapsed, attempt), file=sys.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j["runs"], 10000)
        self.assertEqual(j["labels"], dict(expected))
        self.assertEqual(len(j["nodes"]), 250)
        self.assertEqual(sorted(d["host"] for d in j["drain_candidates"]),
                         sorted(h for h, n in hardware.items() if n >= 2))
        start = time.monotonic()
        self.stats(big)
        print("stats over 10000 run dirs, text: %.2f s" % (time.monotonic() - start), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
