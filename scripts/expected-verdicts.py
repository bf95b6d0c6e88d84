#!/usr/bin/python3
"""The corpus regression gate: every case's verdict, compared with a checked-in file.

    expected-verdicts.py [--corpus DIR] [--expected FILE] [--rules FILE] BIN   check (1 on a flip)
    expected-verdicts.py [--corpus DIR] [--expected FILE] --update BIN          rewrite FILE

Each subdirectory of the corpus root that holds cases (reproduced/, public/,
external/) is scored with `BIN eval --json`; a case's verdict is its gold label
unless eval lists it among the mistakes. The file has one line per case:
`case<TAB>verdict<TAB>gold`. A rule change that flips any case fails the check
until the file is rewritten in the same commit, so every flip shows in review.
"""
import argparse
import json
import os
import subprocess
import sys

HEADER = ("# Verdict of every corpus case under the current rules (case, verdict, gold label).\n"
          "# Checked by `make test`; after a deliberate change: `make expected-verdicts`,\n"
          "# then review the diff and commit it with the change.\n")


def case_dirs(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "case.json" in filenames:
            yield dirpath


def gold_label(case_dir):
    with open(os.path.join(case_dir, "case.json"), encoding="utf-8") as f:
        return json.load(f).get("label")


def verdicts(binary, corpus_root, rules=()):
    """{case path relative to the corpus root: (verdict, gold)} for every case."""
    out = {}
    corpora = sorted(d for d in os.listdir(corpus_root)
                     if os.path.isdir(os.path.join(corpus_root, d))
                     and any(True for _ in case_dirs(os.path.join(corpus_root, d))))
    if not corpora:
        sys.exit(f"expected-verdicts: no cases under {corpus_root}")
    for name in corpora:
        root = os.path.join(corpus_root, name)
        extra = [a for r in rules for a in ("--rules", r)]
        p = subprocess.run([binary, "eval", "--json", *extra, root], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"expected-verdicts: {binary} eval {root} exited {p.returncode}:\n{p.stderr}")
        result = json.loads(p.stdout)
        rel = lambda path: os.path.relpath(path, corpus_root)
        wrong = {rel(m["case"]): m["predicted"] for m in result["mistakes"]}
        skipped = {rel(s.split(": ", 1)[0]) for s in result.get("skipped", [])}
        for case in case_dirs(root):
            key = rel(case)
            gold = gold_label(case) or "-"
            verdict = "(skipped)" if key in skipped else wrong.get(key, gold)
            out[key] = (verdict, gold)
        if len(out) - len(skipped) < result["cases"]:
            sys.exit(f"expected-verdicts: eval scored cases this script did not find under {root}")
    return out


def read_expected(path):
    expected = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3:
                sys.exit(f"{path}:{n}: expected 3 tab-separated fields, got {len(fields)}")
            expected[fields[0]] = (fields[1], fields[2])
    return expected


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", help="the gpualert binary to score")
    ap.add_argument("--corpus", default=os.path.normpath(os.path.join(here, "..", "corpus")))
    ap.add_argument("--expected", help="default: CORPUS/expected-verdicts.tsv")
    ap.add_argument("--rules", action="append", default=[], help="extra rules file for eval")
    ap.add_argument("--update", action="store_true", help="rewrite the file instead of checking")
    args = ap.parse_args()
    expected_path = args.expected or os.path.join(args.corpus, "expected-verdicts.tsv")
    now = verdicts(args.binary, args.corpus, args.rules)

    if args.update:
        with open(expected_path + ".tmp", "w", encoding="utf-8") as f:
            f.write(HEADER)
            for case in sorted(now):
                f.write("%s\t%s\t%s\n" % (case, *now[case]))
        os.replace(expected_path + ".tmp", expected_path)
        right = sum(1 for v, g in now.values() if v == g)
        print(f"expected-verdicts: wrote {len(now)} cases ({right} right) to {expected_path}")
        return 0

    if not os.path.exists(expected_path):
        sys.exit(f"expected-verdicts: {expected_path} is missing (make expected-verdicts)")
    expected = read_expected(expected_path)
    problems = []
    for case in sorted(set(now) | set(expected)):
        if case not in expected:
            problems.append(f"{case}: new case, verdict {now[case][0]} (gold {now[case][1]})")
        elif case not in now:
            problems.append(f"{case}: listed but no longer in the corpus")
        elif now[case] != expected[case]:
            (v, g), (ev, eg) = now[case], expected[case]
            change = f"verdict {ev} -> {v}" if v != ev else f"verdict {v}"
            if g != eg:
                change += f", gold {eg} -> {g}"
            problems.append(f"{case}: {change} (gold {g})")
    if problems:
        print(f"expected-verdicts: {len(problems)} case(s) differ from {expected_path}:")
        for p in problems:
            print("  " + p)
        print("If the change is intended: make expected-verdicts, and commit the file with it.")
        return 1
    print(f"expected-verdicts: all {len(now)} cases as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
