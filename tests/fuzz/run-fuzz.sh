#!/bin/sh
# Builds the libFuzzer targets (classifier, rules, report bytes) with clang in their own build directory
# and runs each one briefly. Used by `make test`; run by hand for longer sessions:
#   FUZZ_SECONDS=600 tests/fuzz/run-fuzz.sh
# Environment: BUILD_FUZZ (build dir, default build-fuzz), FUZZ_SECONDS (per target,
# default 20; the report target gets a fifth of it, at least 2 s), JOBS (parallel build jobs, default 2), CC/CXX (default clang/clang++).
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_FUZZ:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-20}
jobs=${JOBS:-2}

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address" \
    -DGPUALERT_FUZZ=ON >/dev/null
fi
cmake --build "$build" --target classify_fuzz rules_fuzz report_fuzz -j "$jobs"

work="$build/fuzz-work"
# Rule sets the fuzzers compile are cached like a user's: here, not in the user's cache.
export GPUALERT_CACHE_DIR="$work/cache"
mkdir -p "$work/classify" "$work/rules" "$work/report" "$work/seeds-classify" "$work/seeds-rules" \
  "$work/seeds-report"

# Seeds: the starts of real logs from the corpus (two leading bytes choose the chunking
# and the exit status) and the default rules file itself.
i=0
for log in $(find "$root/corpus" -name output.log 2>/dev/null | sort | head -200); do
  i=$((i + 1))
  { printf '\007\001'; head -c 8192 "$log"; } >"$work/seeds-classify/log-$i"
done
printf '\003\002CUDA out of memory\r\nKeyError\n' >"$work/seeds-classify/tiny"
cp "$root/src/classify/default_rules.toml" "$work/seeds-rules/default.toml"
# cwd, name, user, argv..., '', env...: a Latin-1 path, a secret flag, a URL with a password.
printf '/home/j\366rg/run\000job\000j\366rg\000python\000train.py\000--password\000hunter2\000--url=https://a:b@h/x\000\000MASTER_ADDR=h\377\000CUDA_VISIBLE_DEVICES=0' \
  >"$work/seeds-report/latin1"

status=0
ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/classify_fuzz" -max_total_time="$seconds" \
  -max_len=16384 -print_final_stats=1 "$work/classify" "$work/seeds-classify" || status=1
ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/rules_fuzz" -max_total_time="$seconds" \
  -max_len=16384 -print_final_stats=1 "$work/rules" "$work/seeds-rules" || status=1
report_seconds=$((seconds / 5 > 2 ? seconds / 5 : 2))
ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/report_fuzz" -max_total_time="$report_seconds" \
  -max_len=4096 -print_final_stats=1 "$work/report" "$work/seeds-report" || status=1
exit $status
