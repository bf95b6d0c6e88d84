#!/usr/bin/python3
"""Removes reproduced cases whose variant no longer exists in its generator.

usage: prune.py CORPUS_ROOT GENERATOR...   (generators that answered --list)"""
import json
import os
import shutil
import subprocess
import sys

root = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
known = {}
for g in sys.argv[2:]:
    r = subprocess.run(["/usr/bin/python3", os.path.join(here, g), "--list"], capture_output=True, text=True, cwd=here)
    if r.returncode == 0:
        known[g] = set(r.stdout.split())
for label in sorted(os.listdir(root)):
    d = os.path.join(root, label)
    if not os.path.isdir(d):
        continue
    for name in sorted(os.listdir(d)):
        cj = os.path.join(d, name, "case.json")
        if ".tmp-" in name:
            shutil.rmtree(os.path.join(d, name), ignore_errors=True)
            continue
        try:
            gen = json.load(open(cj)).get("generator")
        except (OSError, ValueError):
            continue
        if gen in known and "%s/%s" % (label, name) not in known[gen]:
            print("  pruned stale case %s/%s (no longer in %s)" % (label, name, gen))
            shutil.rmtree(os.path.join(d, name))
