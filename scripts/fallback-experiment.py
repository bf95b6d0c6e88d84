#!/usr/bin/python3
"""An experiment: would a learned text model, consulted only when generic rules decide, help?

    scripts/fallback-experiment.py [--corpus DIR] [--lines N] BIN

Run by hand (needs python3-sklearn; neither the build nor `make test` does). BIN is a
built gpualert: every case's verdict and deciding rule come from `BIN classify --json`.

A case is *generic* when its verdict is `unknown`, or came from a rule that
default_rules.toml marks `yields = true` (any Python exception, a traceback, any error
line) or puts in the `fallback` tier. Only on generic cases may the model replace the
rules' label.

The model: logistic regression (one-vs-rest, fitted by SGD) on hashed, binary,
L2-normalised features of the last N non-empty lines of output.log (the ending is where a failed job
says why; further up is progress and warnings), plus the job's exit status as a token.
Features are word uni- and bigrams and character 3-5-grams within word boundaries, after
ANSI codes are removed, lowercased, digits folded to 0, hashed with CRC-32 into 2^18
buckets.

Measured:
  * external/, leave one batch out: for each batch b, train on reproduced/ + public/ +
    external/ minus b; a confidence threshold is chosen on the training cases alone
    (grouped 3-fold cross-validation, the threshold that gains the most on their generic
    cases); apply to b's generic cases. Rules alone vs rules + model over all external cases.
  * the same, trained only on the batches gathered before b (what a model shipped then
    would have scored);
  * reproduced/ and public/: the model is trained without the case's own corpus directory
    (stricter than leave-one-case-out); any case that goes from right to wrong.
The decision rule, set beforehand: keep the model only if external accuracy rises by at least
3 points and no reproduced/ or public/ case flips to wrong.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tomllib
import zlib

import numpy as np
from scipy import sparse
from sklearn.linear_model import SGDClassifier

DIM = 1 << 18
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WORD = re.compile(r"[a-z_][a-z0-9_]*|0")


def case_dirs(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "case.json" in filenames:
            yield dirpath


def last_lines(path, n):
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", "replace").replace("\r", "\n")
    lines = [ANSI.sub("", l).strip() for l in text.split("\n")]
    lines = [l for l in lines if l]
    return lines[-n:]


def features(lines, exit_token):
    feats = set()
    feats.add("x:" + exit_token)
    for line in lines:
        norm = re.sub(r"[0-9]+", "0", line.lower())
        words = WORD.findall(norm)
        for i, w in enumerate(words):
            feats.add("w:" + w)
            if i + 1 < len(words):
                feats.add("b:" + w + " " + words[i + 1])
        for w in norm.split():
            w = " " + w + " "
            for k in (3, 4, 5):
                for i in range(len(w) - k + 1):
                    feats.add("c:" + w[i:i + k])
    return sorted({zlib.crc32(f.encode()) % DIM for f in feats})


def load(binary, corpus, nlines):
    cases = []
    for name in ("reproduced", "public", "external"):
        for d in case_dirs(os.path.join(corpus, name)):
            with open(os.path.join(d, "case.json"), encoding="utf-8") as f:
                meta = json.load(f)
            p = subprocess.run([binary, "classify", "--json", os.path.join(d, "output.log")],
                               capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{binary} classify {d}: exit {p.returncode}: {p.stderr}")
            v = json.loads(p.stdout)
            exit_token = ("sig=" + str(meta["signal"])) if meta.get("signal") else \
                ("exit=" + str(meta.get("exit_code")))
            cases.append({
                "dir": os.path.relpath(d, corpus), "corpus": name, "gold": meta["label"],
                "batch": meta.get("batch"), "rules": v["label"], "rule": v.get("rule"),
                "feats": features(last_lines(os.path.join(d, "output.log"), nlines), exit_token),
            })
    return cases


def generic_rule_ids(corpus):
    path = os.path.join(corpus, "..", "src", "classify", "default_rules.toml")
    with open(path, "rb") as f:
        rules = tomllib.load(f).get("rule", [])
    return {r["id"] for r in rules if r.get("yields") or r.get("tier") == "fallback"}


_X = {}


def matrix(cases, idx):
    """Rows of the whole corpus's feature matrix (built once; only the hash buckets that
    occur are kept as columns, which changes nothing for a linear model)."""
    if id(cases) not in _X:
        rows, cols = [], []
        for r, c in enumerate(cases):
            rows += [r] * len(c["feats"])
            cols += c["feats"]
        m = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(cases), DIM))
        m = m[:, np.unique(cols)]
        norms = np.sqrt(np.asarray(m.sum(axis=1)).ravel())
        _X[id(cases)] = (sparse.diags(1.0 / np.maximum(norms, 1e-9)) @ m).tocsr()
    return _X[id(cases)][idx]


def fit(cases, idx, alpha):
    # Logistic loss by SGD (one-vs-rest): seconds per fit where L-BFGS takes minutes here.
    model = SGDClassifier(loss="log_loss", alpha=alpha, max_iter=20, tol=None, random_state=0)
    model.fit(matrix(cases, idx), [cases[i]["gold"] for i in idx])
    return model


def guess(model, cases, idx):
    """[(label, probability)] for each case of idx."""
    if not idx:
        return []
    p = model.predict_proba(matrix(cases, idx))
    best = p.argmax(axis=1)
    return [(model.classes_[b], float(p[r, b])) for r, b in enumerate(best)]


THRESHOLDS = [0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01]  # 1.01: never fire


def group_of(case):
    return f"batch{case['batch']}" if case["corpus"] == "external" else case["corpus"]


def choose_threshold(cases, train, generic, alpha, folds=3):
    """The threshold with the largest net gain on the training set's own generic cases,
    each predicted by a model trained without its group (grouped k-fold)."""
    groups = sorted({group_of(cases[i]) for i in train})
    fold_of = {g: k % folds for k, g in enumerate(groups)}
    scored = []  # (label, prob, gold, rules)
    for k in range(folds):
        inner_train = [i for i in train if fold_of[group_of(cases[i])] != k]
        inner_test = [i for i in train if fold_of[group_of(cases[i])] == k and generic(cases[i])]
        if not inner_test:
            continue
        model = fit(cases, inner_train, alpha)
        for i, (lab, prob) in zip(inner_test, guess(model, cases, inner_test)):
            scored.append((lab, prob, cases[i]["gold"], cases[i]["rules"]))
    best_t, best_gain = THRESHOLDS[-1], 0
    for t in THRESHOLDS:
        gain = sum((lab == g) - (r == g) for lab, p, g, r in scored if p >= t)
        if gain > best_gain:  # strictly better: ties keep the higher (safer) threshold
            best_t, best_gain = t, gain
    return best_t


def apply(cases, model, test, t, generic, log, fold):
    """Records, for each generic case of `test`, the rules' label and the model's."""
    gen = [i for i in test if generic(cases[i])]
    for i, (lab, prob) in zip(gen, guess(model, cases, gen)):
        c = cases[i]
        log.append({"case": c["dir"], "fold": fold, "gold": c["gold"], "rules": c["rules"],
                    "rule": c["rule"], "model": lab, "prob": round(prob, 3), "threshold": t,
                    "fires": prob >= t and lab != c["rules"]})


def summarise(title, cases, test, log, quick=False):
    by_case = {r["case"]: r for r in log}
    before = sum(cases[i]["rules"] == cases[i]["gold"] for i in test)
    after = 0
    for i in test:
        r = by_case.get(cases[i]["dir"])
        after += (r["model"] if r and r["fires"] else cases[i]["rules"]) == cases[i]["gold"]
    n = len(test)
    fired = [r for r in log if r["fires"]]
    fixed = sum(r["model"] == r["gold"] for r in fired)
    broke = sum(r["rules"] == r["gold"] for r in fired)
    print(f"\n## {title}")
    right_before = sum(r["rules"] == r["gold"] for r in log)
    print(f"cases {n}; generic verdicts {len(log)} ({right_before} right);"
          f" the model fires on {len(fired)}: {fixed} fixed, {broke} broken, "
          f"{len(fired) - fixed - broke} still wrong")
    print(f"rules alone {before}/{n} = {100 * before / n:.2f}%; rules + model {after}/{n} = "
          f"{100 * after / n:.2f}%; change {100 * (after - before) / n:+.2f} points")
    per = collections.defaultdict(lambda: [0, 0])
    for r in fired:
        per[r["model"]][0] += 1
        per[r["model"]][1] += r["model"] == r["gold"]
    if per:
        print("when it fires, by the label it proposes (right/fired): " +
              ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in sorted(per.items())))
    ts = collections.Counter(r["threshold"] for r in log)
    if not quick:  # --quick chooses none
        print("thresholds chosen (per fold, counted per generic case): " +
              ", ".join(f"{'never fire' if t > 1 else t}: {k}" for t, k in sorted(ts.items())))
    right = sum(r["model"] == r["gold"] for r in log)
    print(f"on the generic verdicts the model's guess is right {right}/{len(log)}, "
          f"the rules' label {sum(r['rules'] == r['gold'] for r in log)}/{len(log)}")
    per = collections.defaultdict(lambda: [0, 0])
    for r in log:
        if r["model"] != r["rules"]:
            per[r["model"]][0] += 1
            per[r["model"]][1] += r["model"] == r["gold"]
    if per:
        print("where it disagrees with the rules, by the label it proposes (right/proposed): " +
              ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in sorted(per.items())))
    # The same model at fixed thresholds, to show the threshold is not what decides.
    for t in (0.0, 0.5, 0.8):
        f = [r for r in log if r["prob"] >= t and r["model"] != r["rules"]]
        net = sum((r["model"] == r["gold"]) - (r["rules"] == r["gold"]) for r in f)
        print(f"  at a fixed threshold {t}: fires on {len(f)}, net {net:+d} cases "
              f"({100 * net / n:+.2f} points)")
    return before, after, fired


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--corpus", default=os.path.normpath(os.path.join(here, "..", "corpus")))
    ap.add_argument("--lines", type=int, default=40, help="last N non-empty lines (default 40)")
    ap.add_argument("--alpha", type=float, default=1e-4, help="L2 strength (default 1e-4)")
    ap.add_argument("--narrow", action="store_true",
                    help="generic = unknown and fallback-tier rules only (not python-exception)")
    ap.add_argument("--json", help="write every generic case's record here")
    ap.add_argument("--quick", action="store_true",
                    help="external/ leave-one-batch-out at fixed thresholds only (no threshold "
                    "choice), to see how the figures move with --lines, --alpha, --narrow")
    args = ap.parse_args()

    cases = load(args.binary, args.corpus, args.lines)
    ids = generic_rule_ids(args.corpus)
    if args.narrow:
        ids = {i for i in ids if i != "python-exception"}
    generic = lambda c: c["rules"] == "unknown" or c["rule"] in ids
    print(f"# learned fallback experiment: last {args.lines} lines, alpha={args.alpha}, "
          f"generic rules {sorted(ids)} and every `unknown` verdict")

    ext = [i for i, c in enumerate(cases) if c["corpus"] == "external"]
    gen_ext = [i for i in ext if generic(cases[i])]
    wrong = sum(cases[i]["rules"] != cases[i]["gold"] for i in gen_ext)
    print(f"external: {len(ext)} cases, {len(gen_ext)} generic verdicts of which {wrong} wrong: "
          f"the most any fallback can add is {100 * wrong / len(ext):.2f} points")

    batches = sorted({cases[i]["batch"] for i in ext})
    out = {}
    for mode in ("leave one batch out", "trained only on earlier batches"):
        log = []
        for b in batches:
            test = [i for i in ext if cases[i]["batch"] == b]
            if not any(generic(cases[i]) for i in test):
                continue
            if mode == "leave one batch out":
                train = [i for i, c in enumerate(cases)
                         if not (c["corpus"] == "external" and c["batch"] == b)]
            else:
                train = [i for i, c in enumerate(cases)
                         if c["corpus"] != "external" or c["batch"] < b]
            t = 1.01 if args.quick else choose_threshold(cases, train, generic, args.alpha)
            apply(cases, fit(cases, train, args.alpha), test, t, generic, log, f"batch {b}")
        out[mode] = log
        summarise(f"external/, {mode}", cases, ext, log, args.quick)
        if args.quick:
            return 0

    for name in ("reproduced", "public"):
        test = [i for i, c in enumerate(cases) if c["corpus"] == name]
        train = [i for i, c in enumerate(cases) if c["corpus"] != name]
        log = []
        t = choose_threshold(cases, train, generic, args.alpha)
        apply(cases, fit(cases, train, args.alpha), test, t, generic, log, f"without {name}/")
        out[f"{name}, without its directory"] = log
        _, _, fired = summarise(f"{name}/, trained without {name}/", cases, test, log)
        for r in fired:
            if r["rules"] == r["gold"]:
                print(f"  flips to wrong: {r['case']}: {r['rules']} -> {r['model']} "
                      f"(p={r['prob']})")


    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
