#!/usr/bin/env bash
# Writes src/gpualert.order, the functions that a short `gpualert run` executes, which the
# linker places side by side at the start of the program's code (CMakeLists.txt).
#
# usage: scripts/link-order.sh BUILD_DIR
#
# Why: every job starts the wrapper anew, and each 64 KiB of code it touches for the first
# time is a page fault at start and more pages to unmap at exit (docs/performance.md). In
# link order, the few hundred functions a run needs are spread over ~3 MiB of a 12 MiB
# program; placed together they fit in a fraction of that. The list is taken with
# valgrind's callgrind from a silent job, a job that prints, and a failing Python job,
# each on the default rules; rerun this after larger changes of what `run` calls. Names
# the linker does not find (another compiler's clones) are skipped, so a stale list
# costs speed only, never correctness.
set -euo pipefail
build=${1:?usage: scripts/link-order.sh BUILD_DIR}
bin=$build/gpualert
command -v valgrind >/dev/null || { echo "link-order.sh: needs valgrind" >&2; exit 2; }
[ -x "$bin" ] || { echo "link-order.sh: $bin: not built" >&2; exit 2; }
out=$(cd "$(dirname "$0")/.." && pwd)/src/gpualert.order
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Hyperscan's compiled rules are cached per CPU; valgrind's emulated CPU gets its own cache,
# filled by a first run that is not profiled (compiling is not what a job pays).
export GPUALERT_CACHE_DIR=$work/cache
profile() {
  local name=$1
  shift
  valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.cg" \
    "$bin" run -q --notify never --log-dir "$work/logs" -- "$@" >/dev/null 2>&1 || true
}
fail_job=(sh -c 'echo "epoch 1 step 10 loss 2.3"; echo "warning: slow" >&2
  python3 -c "raise KeyError(\"labels\")"')
profile warm "${fail_job[@]}"
profile silent true
profile prints echo "training complete"
profile fails "${fail_job[@]}"

{
  echo "# The functions a short \`gpualert run\` executes, placed together by the linker."
  echo "# Written by scripts/link-order.sh; see there."
  for f in silent prints fails; do
    # a name, once per file; callgrind marks recursion levels with 'N
    sed -n -E "s/^c?fn=\\([0-9]+\\) ([^' ]+)('[0-9]+)?$/\\1/p" "$work/$f.cg"
  done | grep -v '^0x' | awk '!seen[$0]++'
} >"$out"
echo "link-order.sh: $(($(wc -l <"$out") - 2)) functions in $out"
