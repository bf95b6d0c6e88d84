#!/usr/bin/env python3
"""Regenerates the tables of corpus/external/SOURCES.md from the cases' case.json.

usage: sources_table.py [CORPUS_DIR]   (default: corpus/external beside this script)

Everything above the line "N cases from M projects." is kept as written (the prose
and the per-batch measurements); the count, the per-label table and one table per
label with each case's source, exit status, batch and notes are rebuilt.
"""
import glob
import json
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "external")
path = os.path.join(root, "SOURCES.md")
text = open(path, encoding="utf-8").read()
head = re.split(r"^\d+ cases from \d+ projects\.$", text, maxsplit=1, flags=re.M)[0]

cases = []
for p in sorted(glob.glob(os.path.join(root, "*", "*", "case.json"))):
    j = json.load(open(p, encoding="utf-8"))
    rel = os.path.relpath(os.path.dirname(p), root)
    cases.append((j["label"], rel, j))
cases.sort(key=lambda c: (c[0], c[1]))


def project(url):
    m = re.match(r"https://github\.com/([^/]+/[^/]+)", url or "")
    return m.group(1) if m else (url or "?")


def status(j):
    return j["signal"] if j.get("signal") else f"exit {j['exit_code']}"


def why(notes):
    notes = notes.replace("|", "\\|").replace("\n", " ")
    return notes if len(notes) <= 257 else notes[:257] + "..."


labels = sorted({c[0] for c in cases})
out = [head.rstrip("\n"), "",
       f"{len(cases)} cases from {len({project(c[2].get('url')) for c in cases})} projects.", "",
       "| label | cases |", "|---|---|"]
out += [f"| {l} | {sum(1 for c in cases if c[0] == l)} |" for l in labels]
out.append("")
for l in labels:
    out += ["", f"## {l}", "", "| case | source | exit | batch | why this label |",
            "|---|---|---|---|---|"]
    for _, rel, j in (c for c in cases if c[0] == l):
        out.append(f"| `{rel}` | [{project(j.get('url'))}]({j.get('url')}) | {status(j)} | "
                   f"{j.get('batch', '-')} | {why(j.get('notes', ''))} |")
open(path, "w", encoding="utf-8").write("\n".join(out) + "\n")
