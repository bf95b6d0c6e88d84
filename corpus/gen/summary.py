#!/usr/bin/python3
"""Counts of corpus cases per label and source under a corpus root."""
import collections
import json
import os
import sys

LABELS = ["success", "gpu_lost", "gpu_ecc", "comm_timeout", "comm_error", "cuda_oom",
          "cuda_illegal_access", "cuda_device_assert", "cuda_setup", "host_oom",
          "shm_exhausted", "disk_full", "native_crash", "numerical_divergence",
          "time_limit", "cancelled", "script_error", "unknown"]

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reproduced")
cnt = collections.Counter()
src = collections.Counter()
bad = []
for d, _, files in os.walk(root):
    if "case.json" not in files:
        continue
    try:
        m = json.load(open(os.path.join(d, "case.json")))
    except ValueError:
        bad.append(d)
        continue
    ok = (m.get("label") in LABELS and "output.log" in files and
          (m.get("exit_code") is None) != (m.get("signal") is None))
    if not ok:
        bad.append(d)
    cnt[m.get("label")] += 1
    src[m.get("source")] += 1
md = "--markdown" in sys.argv
if md:
    print("| label | cases |\n|---|---|")
for lab in LABELS + sorted(k for k in cnt if k not in LABELS):
    if md:
        print("| `%s` | %d |" % (lab, cnt[lab]))
    else:
        print("  %-22s %4d" % (lab, cnt[lab]))
total = sum(cnt.values())
if md:
    print("| **total** | **%d** |" % total)
else:
    print("  %-22s %4d" % ("TOTAL", total))
    print("  sources: " + ", ".join("%s=%d" % kv for kv in sorted(src.items())))
for b in bad:
    print("  INVALID case: %s" % b)
sys.exit(1 if bad else 0)
