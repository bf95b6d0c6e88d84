#!/usr/bin/env python3
"""Added time per job of two gpualert builds, side by side.

usage: compare.py OLD_BINARY NEW_BINARY [ROUNDS] [-- JOB ARG...]

Runs `BIN run -q --notify never --log-dir DIR -- JOB` (default JOB: true) for both
binaries and bare JOB, in a random order each round, with the log on disk (a temporary
directory beside this script's caller) and on tmpfs (/dev/shm, when there is one).
Prints each median and, for NEW - OLD, the median of the paired differences of the
same rounds with a 95% bootstrap interval.

Both binaries are first copied, together, into a fresh directory and run from there:
on a shared VM two copies of the *same* binary, one hours old and run thousands of
times, one fresh, were measured 0.19-0.25 ms per job apart, which would swamp most
changes worth measuring. Timing never decides a test: this is for people.
"""
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.wait4(p.pid, 0)
    return time.perf_counter() - t0


def paired(a, b, resamples=1000):
    diffs = [y - x for x, y in zip(a, b)]
    rng = random.Random(1)
    boots = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(resamples))
    return statistics.median(diffs), boots[int(0.025 * resamples)], boots[int(0.975 * resamples) - 1]


def main():
    args = sys.argv[1:]
    job = ["true"]
    if "--" in args:
        cut = args.index("--")
        args, job = args[:cut], args[cut + 1:]
    if len(args) not in (2, 3) or not job:
        sys.exit(__doc__.strip().splitlines()[2])
    rounds = int(args[2]) if len(args) == 3 else 300
    job[0] = shutil.which(job[0]) or job[0]
    work = tempfile.mkdtemp(prefix="gpualert-compare-")
    shm = tempfile.mkdtemp(prefix="gpualert-compare-", dir="/dev/shm") if os.path.isdir("/dev/shm") else None
    try:
        bins = {}
        for name, src in (("old", args[0]), ("new", args[1])):
            bins[name] = os.path.join(work, name)
            shutil.copy2(src, bins[name])
        places = {"disk": os.path.join(work, "logs")}
        if shm:
            places["tmpfs"] = os.path.join(shm, "logs")
        variants = {"bare": job}
        for place, logs in places.items():
            for name, b in bins.items():
                variants[f"{name} {place}"] = [b, "run", "-q", "--notify", "never", "--log-dir", logs, "--"] + job
        times = {k: [] for k in variants}
        for _ in range(rounds):
            order = list(variants)
            random.shuffle(order)
            for k in order:
                times[k].append(timed(variants[k]))
        bare = statistics.median(times["bare"])
        print(f"bare {' '.join(job)}: {bare * 1e3:.3f} ms (median of {rounds})")
        for place in places:
            for name in bins:
                m = statistics.median(times[f"{name} {place}"])
                print(f"  {name} ({args[0] if name == 'old' else args[1]}), log on {place}: "
                      f"{m * 1e3:.3f} ms, added {(m - bare) * 1e3:.3f} ms")
            d, lo, hi = paired(times[f"old {place}"], times[f"new {place}"])
            print(f"  new - old, log on {place}: {d * 1e3:+.3f} ms (paired median, 95% CI "
                  f"{lo * 1e3:+.3f}..{hi * 1e3:+.3f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if shm:
            shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    main()
