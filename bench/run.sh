#!/bin/sh
# make bench: every figure printed beside a baseline measured in the same run.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
echo "== gpualert run: overhead, capture throughput, memory =="
/usr/bin/python3 "$root/bench/run_bench.py" "$build/gpualert"
echo
echo "== gpualert classify: throughput beside grep -E =="
"$root/bench/classify_bench.sh" "$build/gpualert"
