#!/usr/bin/env bash
# Regenerates corpus/reproduced/ by really running every failure on this machine.
#   usage: corpus/make-corpus.sh [PATH_TO_GPUALERT_BINARY] [GENERATOR ...]
# Most cases are captured by gen/capture.py; gen_wrapper.py records cases with
# the gpualert binary itself (its run directory is the case).
# Each generator is independent: one that fails does not stop the others.
# Needs root (memory cgroups, /dev/kmsg, private mounts, Slurm daemons).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
gen="$here/gen"
out="$here/reproduced"
py=/usr/bin/python3
[ -x "$py" ] || py=python3

is_gen() { [ -e "$gen/$1" ] || [ -e "$gen/gen_$1.py" ] || [ -e "$gen/gen_$1.sh" ]; }
if [ $# -gt 0 ] && ! is_gen "$1"; then
  GPUALERT_BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
  export GPUALERT_BIN
  shift
fi

all_gens=(gen_host_oom.py gen_shm.py gen_disk_full.py gen_native_crash.py gen_numerical.py
          gen_cuda_setup.py gen_script_error.py gen_success.py gen_unknown.py gen_cancelled.py
          gen_distributed.py gen_slurm.py gen_slurm_endings.py gen_wrapper.py)
if [ $# -gt 0 ]; then
  gens=()
  for g in "$@"; do
    for cand in "$g" "gen_$g.py" "gen_$g.sh"; do
      if [ -e "$gen/$cand" ]; then gens+=("$cand"); break; fi
    done
  done
else
  gens=("${all_gens[@]}")
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "make-corpus: needs root (cgroups, /dev/kmsg, mounts, slurm)" >&2
  exit 1
fi

start=$(date +%s)
logdir="$(mktemp -d "${TMPDIR:-/tmp}/gpualert-corpus-logs.XXXXXX")"
declare -A status
pids=()

run_gen() {  # name
  local g="$1" rc
  case "$g" in
    *.py) (cd "$gen" && timeout 900 "$py" "$g") ;;
    *.sh) (cd "$gen" && timeout 900 bash "$g") ;;
  esac
  rc=$?
  echo "make-corpus: $g finished with status $rc"
  return $rc
}

# The Slurm generator mostly waits (time limits are whole minutes): start it
# first, in the background, and run the others meanwhile.
for g in "${gens[@]}"; do
  if [ "$g" = gen_slurm.py ]; then
    run_gen "$g" >"$logdir/$g.log" 2>&1 &
    pids+=("$!:$g")
  fi
done
for g in "${gens[@]}"; do
  [ "$g" = gen_slurm.py ] && continue
  echo "== $g"
  run_gen "$g" 2>&1 | tee "$logdir/$g.log"
  status[$g]=${PIPESTATUS[0]}
done
for pg in "${pids[@]}"; do
  pid="${pg%%:*}"; g="${pg#*:}"
  wait "$pid"; status[$g]=$?
  echo "== $g (ran in the background)"
  cat "$logdir/$g.log"
done

# variants that a generator no longer defines are removed
echo "== pruning"
(cd "$gen" && "$py" prune.py "$out" "${gens[@]}")
# clean-up of anything a generator left behind (job dirs; Slurm, cgroups and
# mounts are cleaned by the generators themselves)
rm -rf "${TMPDIR:-/tmp}/gpualert-jobs"

echo
echo "== generators"
for g in "${gens[@]}"; do
  printf '  %-24s %s\n' "$g" "$([ "${status[$g]:-1}" -eq 0 ] && echo ok || echo "FAILED (${status[$g]:-?})")"
done
grep -h '^MISS' "$logdir"/*.log 2>/dev/null | sed 's/^/  /'
echo
echo "== reproduced cases per label"
"$py" "$gen/summary.py" "$out"
echo "regeneration took $(( $(date +%s) - start ))s"
rm -rf "$logdir"
exit 0
