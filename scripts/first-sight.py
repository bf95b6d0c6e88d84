#!/usr/bin/env python3
"""Record what the rules said of external cases when they were first seen.

`first_verdict` in case.json is the label the rules gave a case when its batch was
added, before any rule was changed for it; `first_seen_with` is the commit whose rule
table gave it. `gpualert eval` scores these beside the current verdicts ("first
sight"), the honest estimate for failures the rules were not written from. A recorded
first verdict is never revised: cases that have one are left alone.

  scripts/first-sight.py build/gpualert corpus/external/*/new-case ...
      when adding a batch, before changing any rule for it: the rules of the
      checkout (HEAD; refused while src/classify/default_rules.toml has uncommitted
      changes, so that the commit recorded is the table that gave the verdicts)

  scripts/first-sight.py --backfill build/gpualert corpus/external
      for cases that lack one, from git history: the rules as they stood in the
      commit before the one that added each case, read by this binary (the table
      format still parses); a case whose origin or old table cannot be found keeps
      no first verdict and counts as unknown at first sight

--dry-run prints what would be written, one line per case, and writes nothing.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

RULES = "src/classify/default_rules.toml"


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def case_dirs(paths):
    out = []
    for p in paths:
        if os.path.isfile(os.path.join(p, "case.json")):
            out.append(os.path.normpath(p))
            continue
        if not os.path.isdir(p):
            sys.exit(f"first-sight: error: {p}: not a directory")
        for root, dirs, files in os.walk(p):
            dirs.sort()
            if "case.json" in files:
                out.append(os.path.normpath(root))
    return sorted(set(out))


def read_case(d):
    path = os.path.join(d, "case.json")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text), text
    except json.JSONDecodeError as e:
        sys.exit(f"first-sight: error: {path}: {e}")


def write_case(d, case, old_text):
    # Keep the file's own style: raw UTF-8 or \u escapes, final newline or not.
    ascii_only = old_text.isascii() and "\\u" in old_text
    text = json.dumps(case, indent=2, ensure_ascii=ascii_only)
    if old_text.endswith("\n"):
        text += "\n"
    path = os.path.join(d, "case.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def verdicts(binary, rules_file, dirs):
    """Each case's label under the rules of `rules_file` alone (the built-in table
    left out), from `gpualert eval --json`: a case not among its mistakes got its
    gold label."""
    proc = subprocess.run(
        [binary, "eval", "--json", "--no-default-rules", "--rules", rules_file, *dirs],
        capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    result = json.loads(proc.stdout)
    wrong = {os.path.normpath(m["case"]): m["predicted"] for m in result["mistakes"]}
    skipped = {os.path.normpath(s.split(": ", 1)[0]) for s in result.get("skipped", [])}
    out = {}
    for d in dirs:
        if d in skipped:
            continue
        out[d] = wrong.get(d) or read_case(d)[0]["label"]
    return out, None


def origins(repo, dirs):
    """The commit that added each case directory, following moves (a case relabelled
    is moved to its new label's directory): from one pass over the history of the
    directories' parents, oldest first."""
    rel = {d: os.path.relpath(os.path.realpath(d), repo) for d in dirs}
    # A move (old and new path) shows as one only when both lie under the pathspec.
    top = os.path.commonpath([os.path.dirname(r) or "." for r in rel.values()]) or "."
    log = git("log", "--reverse", "-M", "--name-status", "--diff-filter=AR", "--format=C %H",
              "--", top, cwd=repo)
    origin = {}
    commit = None
    for line in log.splitlines():
        if line.startswith("C "):
            commit = line[2:]
            continue
        fields = line.split("\t")
        if not fields[0]:
            continue
        if fields[0].startswith("R") and len(fields) == 3:
            old, new = os.path.dirname(fields[1]), os.path.dirname(fields[2])
            if new not in origin:
                origin[new] = origin.get(old, commit)
        elif fields[0] == "A" and len(fields) == 2:
            origin.setdefault(os.path.dirname(fields[1]), commit)
    return {d: origin.get(rel[d]) for d in dirs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backfill", action="store_true",
                    help="from git history: the rules of the commit before each case's")
    ap.add_argument("--dry-run", action="store_true", help="print, write nothing")
    ap.add_argument("binary", help="the gpualert binary (build/gpualert)")
    ap.add_argument("cases", nargs="+", help="case directories or corpus roots")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    dirs = case_dirs(args.cases)
    if not dirs:
        sys.exit("first-sight: error: no case directory (holding case.json) in the arguments")
    try:  # the repository that holds the cases, and whose history says when they came
        repo = git("rev-parse", "--show-toplevel", cwd=dirs[0]).strip()
    except subprocess.CalledProcessError as e:
        sys.exit(f"first-sight: error: {dirs[0]}: not in a git checkout: {e.stderr.strip()}")

    todo = []
    for d in dirs:
        case, _ = read_case(d)
        if "first_verdict" not in case:
            todo.append(d)
    if not todo:
        print("first-sight: every case has a first verdict already")
        return 0

    # rev -> the cases to evaluate with the rules of that revision
    groups = defaultdict(list)
    unknown = []
    if args.backfill:
        for d, added in origins(repo, todo).items():
            if added is None:
                unknown.append((d, "no commit adds it"))
            else:
                parents = git("rev-list", "--parents", "-n", "1", added, cwd=repo).split()
                if len(parents) < 2:
                    unknown.append((d, f"{added[:12]} has no parent"))
                else:
                    groups[parents[1]].append(d)
    else:
        if git("status", "--porcelain", "--", RULES, cwd=repo).strip():
            sys.exit(f"first-sight: error: {RULES} has uncommitted changes; a first verdict "
                     "must come from a committed table (commit or stash them first)")
        groups[git("rev-parse", "HEAD", cwd=repo).strip()] = todo

    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for rev, dirs in sorted(groups.items(), key=lambda kv: kv[1][0]):
            rules_file = os.path.join(tmp, rev + ".toml")
            try:
                text = git("show", f"{rev}:{RULES}", cwd=repo)
            except subprocess.CalledProcessError:
                unknown += [(d, f"no {RULES} at {rev[:12]}") for d in dirs]
                continue
            with open(rules_file, "w", encoding="utf-8") as f:
                f.write(text)
            got, error = verdicts(binary, rules_file, dirs)
            if got is None:
                why = f"the table of {rev[:12]} does not load: {error.splitlines()[0]}"
                unknown += [(d, why) for d in dirs]
                continue
            for d in dirs:
                if d not in got:
                    unknown.append((d, "gpualert eval skipped it"))
                    continue
                case, old_text = read_case(d)
                case["first_verdict"] = got[d]
                case["first_seen_with"] = rev
                print(f"{d}\t{got[d]}\t{rev[:12]}")
                if not args.dry_run:
                    write_case(d, case, old_text)
                written += 1
    for d, why in unknown:
        print(f"first-sight: {d}: no first verdict: {why}", file=sys.stderr)
    print(f"first-sight: {written} first verdicts {'found' if args.dry_run else 'written'}, "
          f"{len(unknown)} unknown", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
