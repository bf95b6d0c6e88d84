#!/bin/sh
# Classifier throughput on a 1 GiB training-style log, beside GNU grep -E -c with the
# same patterns (exported by the benchmark's ere_patterns, built beside gpualert).
#
# usage: bench/classify_bench.sh [GPUALERT_BINARY]   (default: build/gpualert)
# Environment: BENCH_DIR (where the generated log goes; default a temporary dir,
# removed afterwards), BENCH_MB (log size, default 1024).
# Both tools run on one core on a file already in the page cache; the bar is
# 300 MB/s for gpualert.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/gpualert}
size_mb=${BENCH_MB:-1024}
python=/usr/bin/python3
[ -x "$python" ] || python=python3

if [ -n "${BENCH_DIR:-}" ]; then
  dir=$BENCH_DIR
  mkdir -p "$dir"
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/gpualert-bench.XXXXXX")
  trap 'rm -rf "$dir"' EXIT INT TERM
fi
log=$dir/train.log
patterns=$dir/patterns.ere

if [ ! -s "$log" ] || [ "$(($(wc -c <"$log") / 1048576))" -lt "$size_mb" ]; then
  echo "generating a ${size_mb} MiB training log in $dir ..."
  "$python" "$root/bench/gen_training_log.py" "$log" "$size_mb"
fi
"$(dirname "$bin")/bench/ere_patterns" >"$patterns"
bytes=$(wc -c <"$log")
cat "$log" >/dev/null  # warm the page cache for both tools

now() { date +%s.%N; }
# Best of three runs, pinned to one core when taskset exists.
pin=""
command -v taskset >/dev/null 2>&1 && pin="taskset -c 0"
best() {
  b=""
  for _ in 1 2 3; do
    t0=$(now)
    "$@" >/dev/null
    t1=$(now)
    b=$(echo "$t0 $t1 ${b:-999999}" | awk '{d = $2 - $1; print (d < $3 ? d : $3)}')
  done
  echo "$b"
}

t_ours=$(best $pin "$bin" classify --exit-code 1 "$log")
t_grep=$(best $pin env LC_ALL=C grep -E -c -f "$patterns" "$log" || true)
verdict=$("$bin" classify --exit-code 1 "$log" | head -1)

echo "log: $bytes bytes, $(wc -l <"$patterns") patterns"
echo "$bytes $t_ours $t_grep" | awk '{
  mb = $1 / 1e6
  printf "gpualert classify   %8.1f MB/s  (%.2f s)\n", mb / $2, $2
  printf "grep -E -c -f       %8.1f MB/s  (%.2f s)\n", mb / $3, $3
  printf "ratio gpualert/grep %8.2f x\n", $3 / $2
  printf "bar: >= 300 MB/s on one core: %s\n", (mb / $2 >= 300 ? "met" : "NOT met")
}'
echo "verdict: $verdict"
