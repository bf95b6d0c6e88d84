#!/usr/bin/python3
"""host_oom: real memory exhaustion.

* a job in a cgroup-v1 memory cgroup with a limit grows until the kernel's
  OOM killer SIGKILLs it (kernel.log holds the OOM-killer lines read from
  /dev/kmsg during the run);
* a DataLoader worker that leaks memory is the one the OOM killer picks, and
  the main process reports "DataLoader worker (pid N) is killed by signal: Killed.";
* an allocation bigger than the machine is refused: MemoryError, numpy's
  _ArrayMemoryError, torch's DefaultCPUAllocator error.
"""
from capture import job_env, neutral_dir, workdir, Case, pycase, shcase, generator_main

G = "gen_host_oom.py"
L = "host_oom"
C = []

def cg(name, argv, notes, limit, files=("train.py",), **kw):
    kw.setdefault("expect_signal", "SIGKILL")
    C.append(pycase(name, L, argv, notes, G, files=files, kmsg=True, mem_limit=limit, **kw))

cg("cgroup-main-grows-plain", ["train.py", "--steps", "400", "--cache-mb-per-step", "16", "--log-every", "2"],
   "train.py keeps a 16 MB tensor per step in a list; the job's memory cgroup limit is reached and the OOM killer SIGKILLs the only process.", "400M")
cg("cgroup-main-grows-hf", ["train.py", "--steps", "400", "--cache-mb-per-step", "24", "--style", "hf", "--log-every", "1"],
   "HF-Trainer-style log; main process caches 24 MB per step until the cgroup OOM killer SIGKILLs it.", "500M")
cg("cgroup-main-grows-logging", ["train.py", "--steps", "400", "--cache-mb-per-step", "8", "--numpy-cache", "--style", "logging", "--log-every", "3"],
   "python logging format; numpy arrays cached per step until the cgroup OOM kill.", "350M")
cg("cgroup-main-grows-bar", ["train.py", "--steps", "400", "--cache-mb-per-step", "12", "--style", "bar", "--log-every", "1"],
   "\\r progress bar, main process killed mid-bar by the cgroup OOM killer (no final newline).", "450M")
cg("cgroup-load-dataset-numpy", ["load_all.py", "64", "32", "numpy"],
   "load_all.py reads 64 x 32 MB shards into RAM; SIGKILLed by the cgroup OOM killer while loading.", "600M", files=("load_all.py",))
cg("cgroup-load-dataset-lists", ["load_all.py", "64", "16", "list"],
   "load_all.py builds Python float lists (high overhead per element) until the cgroup OOM kill.", "300M", files=("load_all.py",))
cg("cgroup-load-dataset-torch-unbuf", ["-u", "load_all.py", "64", "48", "torch"],
   "python3 -u, torch tensors held in RAM; cgroup OOM kill while loading shards.", "500M", files=("load_all.py",))
cg("worker-oom-2workers", ["train.py", "--workers", "2", "--worker-leak-mb", "8", "--steps", "400", "--batch-size", "4"],
   "2 DataLoader workers each keep 8 MB per sample; the OOM killer SIGKILLs a worker and the main process raises 'DataLoader worker (pid N) is killed by signal: Killed.'",
   "700M", expect_signal=None, expect_exit=1, expect_re=r"is killed by signal: Killed")
cg("worker-oom-4workers-lightning", ["train.py", "--workers", "4", "--worker-leak-mb", "4", "--steps", "400", "--batch-size", "4", "--style", "lightning", "--log-every", "1"],
   "Lightning-style progress bar, 4 leaking DataLoader workers; one is OOM-killed in the cgroup.",
   "1000M", expect_signal=None, expect_exit=1, expect_re=r"is killed by signal: Killed")
cg("worker-oom-1worker-hf", ["train.py", "--workers", "1", "--worker-leak-mb", "16", "--steps", "400", "--batch-size", "2", "--style", "hf", "--log-every", "2"],
   "one leaking DataLoader worker, HF-style log; worker OOM-killed in the cgroup.",
   "600M", expect_signal=None, expect_exit=1, expect_re=r"is killed by signal: Killed")
C.append(shcase("sbatch-script-bash-killed", L,
    "#!/bin/bash\n# job script as a user would submit it\nset -x\necho \"start $(date +%s) on $(hostname)\"\npython3 train.py --steps 400 --cache-mb-per-step 20 --log-every 4\necho \"train exited with $?\"\nexit 1\n",
    "bash job script runs train.py; the cgroup OOM killer SIGKILLs python; bash reports 'Killed' and the script exits 1.",
    G, kmsg=True, mem_limit="450M", expect_exit=1, expect_re=r"Killed"))
C.append(shcase("sbatch-script-exit137", L,
    "#!/bin/bash\nset -euo pipefail\necho \"== preprocessing ==\"\npython3 load_all.py 40 32 numpy\necho done\n",
    "bash job script with set -e: python load is OOM-killed in the cgroup; bash prints the Killed line and exits 137.",
    G, files=("load_all.py",), kmsg=True, mem_limit="500M", expect_exit=137))
for kind, note, rx in [
        ("bytes", "bytearray(2**44) refused by the kernel (overcommit heuristic): MemoryError.", r"MemoryError"),
        ("numpy", "np.zeros((200000, 200000)) = 298 GiB refused: numpy _ArrayMemoryError (Unable to allocate ...).", r"Unable to allocate"),
        ("torch", "nn.Embedding with a huge table: torch DefaultCPUAllocator refuses the allocation.", r"DefaultCPUAllocator"),
        ("torch_cat", "torch.empty((2**20, 2**20)) = 4 TiB: DefaultCPUAllocator error.", r"DefaultCPUAllocator"),
        ("list", "[0] * 2**42: Python MemoryError.", r"MemoryError")]:
    C.append(pycase("memoryerror-" + kind.replace("_", "-"), L, ["bigalloc.py", kind], note, G,
                    files=("bigalloc.py",), expect_exit=1, expect_re=rx))
C.append(pycase("memoryerror-numpy-ulimit", L, ["-c", "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); import runpy, sys; sys.argv=['bigalloc.py','numpy','30000']; runpy.run_path('bigalloc.py', run_name='__main__')"],
                "address space limited to 3 GiB (like ulimit -v on a login node); a 6.7 GiB numpy array is refused: _ArrayMemoryError.",
                G, files=("bigalloc.py",), expect_exit=1, expect_re=r"Unable to allocate"))
C.append(pycase("caught-memoryerror-exit0", L, ["-c", "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); import runpy, sys; sys.argv=['caught.py','alloc']; runpy.run_path('caught.py', run_name='__main__')"],
                "address space limited to 3 GiB; a 16 GiB evaluation buffer is refused and the script's handler logs "
                "the MemoryError ('Failed to execute the training process: Unable to allocate ...') and returns: exit 0, the run failed.",
                G, files=("caught.py",), expect_exit=0, expect_re=r"Failed to execute the training process: Unable to allocate"))

_w = workdir(neutral_dir(L, "cpp-bad-alloc-address-limit"), ("cache_grow.cpp",))
C.append(Case("cpp-bad-alloc-address-limit", L,
              ["bash", "-c", "c++ -O1 -o cache_grow cache_grow.cpp && ulimit -v 1048576 && exec ./cache_grow"],
              "a C++ feature cache keeps 64 MiB shards in memory under a 1 GiB address-space limit "
              "(ulimit -v, as on a login node or under a scheduler's RLIMIT_AS): operator new throws "
              "std::bad_alloc, nobody catches it, terminate aborts (SIGABRT).",
              G, cwd=_w, env=job_env(), expect_signal="SIGABRT", expect_re=r"std::bad_alloc"))

if __name__ == "__main__":
    generator_main(C, G)
