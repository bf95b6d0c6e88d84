#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: three real failing CUDA jobs under `gpualert run`
# (an out-of-memory allocation, an illegal memory access, a device-side assert), each
# report.json, gpus.jsonl and queued notice kept in OUT_DIR, and whether each was
# labelled right with GPU facts present; each run also as a corpus case (source
# reproduced-gpu) under OUT_DIR/corpus/, to be added to corpus/reproduced/. Made to finish
# in one call of under 10 minutes.
#
#   scripts/gpu-check.sh [BUILD_DIR] [OUT_DIR]
#
# Uses BUILD_DIR's gpualert and gpualert-gpu when built (carry them to the machine),
# else builds them there (needs the build dependencies). The jobs are CUDA C built with
# nvcc (PATH or /usr/local/cuda/bin); without nvcc, PyTorch if python3 can import it.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build}")
out=$(realpath -m "${2:-$root/gpu-check-out}")
mkdir -p "$out"
exec > >(tee "$out/gpu-check.log") 2>&1

driver=${GPUALERT_NVIDIA_DRIVER_FILE:-/proc/driver/nvidia/version}
if [ ! -e "$driver" ]; then
  echo "no NVIDIA driver here ($driver absent)"; exit 1
fi
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,memory.total,memory.used,driver_version \
  --format=csv 2>&1 | tee "$out/nvidia-smi.csv"

if [ ! -x "$build/gpualert" ] || [ ! -x "$build/gpualert-gpu" ]; then
  echo "building gpualert into $build"
  timeout 300 bash -c "cmake -S '$root' -B '$build' -G Ninja -DCMAKE_BUILD_TYPE=Release &&
    cmake --build '$build' -j$(nproc) --target gpualert gpualert-notify gpualert-gpu" \
    > "$out/build.log" 2>&1 || { echo "build failed: see $out/build.log"; exit 1; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -n "$nvcc" ]; then
  cat > "$work/oom.cu" <<'CU'
// Fills the GPU to within ~1 GiB of its limit, holds it while gpualert-gpu samples,
// then asks for 4 GiB more and reports the failure as PyTorch would word it.
#include <cstdio>
#include <unistd.h>
#include <cuda_runtime.h>
int main() {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  const size_t gib = size_t(1) << 30;
  void* p = nullptr;
  while (free_b > 2 * gib && cudaMalloc(&p, gib) == cudaSuccess) {
    cudaMemset(p, 1, gib);
    cudaMemGetInfo(&free_b, &total_b);
  }
  std::printf("holding %.2f GiB of %.2f GiB\n", (total_b - free_b) / double(gib), total_b / double(gib));
  std::fflush(stdout);
  sleep(4);
  cudaError_t e = cudaMalloc(&p, 4 * gib);
  std::fprintf(stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. "
               "GPU 0 has a total capacity of %.2f GiB of which %.2f GiB is free. (%s)\n",
               total_b / double(gib), free_b / double(gib), cudaGetErrorString(e));
  return 1;
}
CU
  cat > "$work/illegal.cu" <<'CU'
// A kernel that writes through a wild pointer: "an illegal memory access was encountered".
#include <cstdio>
#include <unistd.h>
#include <cuda_runtime.h>
__global__ void wild(int* p) { p[threadIdx.x * 1048576] = 1; }
int main() {
  int* q = nullptr;
  cudaMalloc(&q, 1 << 20);
  sleep(2);
  wild<<<1, 256>>>(reinterpret_cast<int*>(0x10));
  cudaError_t e = cudaDeviceSynchronize();
  std::fprintf(stderr, "RuntimeError: CUDA error: %s\n", cudaGetErrorString(e));
  return 1;
}
CU
  cat > "$work/assert.cu" <<'CU'
// A kernel assert that fails: "device-side assert triggered".
#include <cassert>
#include <cstdio>
#include <unistd.h>
#include <cuda_runtime.h>
__global__ void check(int n) { assert(n < 0); }
int main() {
  sleep(2);
  check<<<1, 1>>>(1);
  cudaError_t e = cudaDeviceSynchronize();
  std::fprintf(stderr, "RuntimeError: CUDA error: %s\n", cudaGetErrorString(e));
  return 1;
}
CU
  for j in oom illegal assert; do
    timeout 120 "$nvcc" -O1 -o "$work/$j" "$work/$j.cu" > "$out/nvcc-$j.log" 2>&1 ||
      { echo "nvcc $j failed: see $out/nvcc-$j.log"; exit 1; }
  done
  cmd_oom=("$work/oom"); cmd_illegal=("$work/illegal"); cmd_assert=("$work/assert")
elif python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  cat > "$work/jobs.py" <<'PY'
import sys, time, torch
kind = sys.argv[1]
if kind == "oom":
    free, total = torch.cuda.mem_get_info()
    held = [torch.empty(1 << 30, dtype=torch.uint8, device="cuda") for _ in range(max(0, free // (1 << 30) - 2))]
    time.sleep(4)
    torch.empty(free, dtype=torch.uint8, device="cuda")
else:
    x = torch.zeros(4, device="cuda")
    time.sleep(2)
    x[torch.tensor([10], device="cuda")] = 1  # index out of bounds: device-side assert
    torch.cuda.synchronize()
PY
  # PyTorch checks its own indexing: an illegal access needs CUDA C (nvcc).
  cmd_oom=(python3 "$work/jobs.py" oom); cmd_illegal=()
  cmd_assert=(python3 "$work/jobs.py" assert)
else
  echo "neither nvcc nor PyTorch with CUDA here: nothing to run"; exit 1
fi

export GPUALERT_GPU_SAMPLE_SECONDS=1 GPUALERT_STATE_DIR="$out/state"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
status=0
for j in oom illegal assert; do
  case $j in
    oom) want=cuda_oom; cmd=("${cmd_oom[@]}") ;;
    illegal) want=cuda_illegal_access; cmd=("${cmd_illegal[@]}") ;;
    assert) want=cuda_device_assert; cmd=("${cmd_assert[@]}") ;;
  esac
  if [ ${#cmd[@]} -eq 0 ]; then
    echo "SKIP $j: needs nvcc"; continue
  fi
  rm -rf "$out/$j"; mkdir -p "$out/$j"
  start=$(date +%s%N)
  timeout 150 "$build/gpualert" run --log-dir "$out/$j/logs" --name "gpu-check-$j" -- "${cmd[@]}"
  echo "$j: exit $? after $(( ($(date +%s%N) - start) / 1000000 )) ms"
  run_dir=$(ls -d "$out/$j"/logs/*/ 2>/dev/null | head -1)
  [ -n "$run_dir" ] && cp "$run_dir"/report.json "$run_dir"/gpus.jsonl "$out/$j/" 2>/dev/null
  python3 - "$out/$j/report.json" "$want" <<'PY' || status=1
import json, sys
rep = json.load(open(sys.argv[1]))
gpus = rep.get("gpus") or []
ok = rep.get("label") == sys.argv[2] and rep["sources"].get("gpu") == "read" and gpus
print(("PASS" if ok else "FAIL"), "label", rep.get("label"), "want", sys.argv[2],
      "| sources.gpu:", rep["sources"].get("gpu"), "| fields:", rep.get("fields"))
for g in gpus:
    gib = 1 << 30
    print("   GPU %s %s %s: peak %.2f GiB, last %.2f GiB (%.1f s before the end) of %.2f GiB, util %s%%, xids %s"
          % (g.get("job_index"), g.get("name"), g.get("pci"), g.get("memory_used_peak", 0) / gib,
             g.get("memory_used_last", 0) / gib, g.get("last_reading_s_before_end", -1),
             g.get("memory_total", 0) / gib, g.get("utilization_last"), g.get("xids")))
sys.exit(0 if ok else 1)
PY
  # The same run as a corpus case (docs/spec/corpus-format.md), source reproduced-gpu:
  # the job's own output without the wrapper's lines, labelled by what was run.
  [ -n "$run_dir" ] && python3 - "$run_dir" "$out/corpus/$want/gpu-check-$j-$(basename "${cmd[0]}")" \
      "$want" "${cmd[*]}" <<'PY'
import json, os, sys
run_dir, case, label, command = sys.argv[1:5]
rep = json.load(open(os.path.join(run_dir, "report.json")))
os.makedirs(case, exist_ok=True)
with open(os.path.join(run_dir, "output.log"), "rb") as f, \
        open(os.path.join(case, "output.log"), "wb") as o:
    o.writelines(l for l in f if not l.startswith(b"#gpualert# "))
if os.path.exists(os.path.join(run_dir, "kernel.log")):
    with open(os.path.join(run_dir, "kernel.log"), "rb") as f, \
            open(os.path.join(case, "kernel.log"), "wb") as o:
        o.write(f.read())
gpus = ", ".join("%s %s" % (g.get("name"), g.get("pci")) for g in rep.get("gpus") or [])
json.dump({"label": label, "exit_code": None if rep.get("signal") else rep.get("exit_code"),
           "signal": rep.get("signal"), "source": "reproduced-gpu",
           "notes": "scripts/gpu-check.sh on %s: `%s` run under gpualert; labelled by what the "
                    "program does, before any scoring" % (gpus or "an NVIDIA GPU", command)},
          open(os.path.join(case, "case.json"), "w"), indent=2)
PY
done
echo "kept in $out (reports, timelines, the outbox with the notices under state/; corpus"
echo "cases for corpus/reproduced/ under corpus/)"
exit $status
