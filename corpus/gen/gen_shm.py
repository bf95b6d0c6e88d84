#!/usr/bin/python3
"""shm_exhausted: a tiny /dev/shm (tmpfs) mounted in a private mount namespace
(`unshare -m`; the host's /dev/shm is untouched) under real DataLoader
workers, torch.multiprocessing sharing, and POSIX shared memory."""
from capture import Case, job_env, workdir, neutral_dir, generator_main

G = "gen_shm.py"
L = "shm_exhausted"
C = []


def shm(name, size, argv, notes, files=("train.py",), shell_prog="python3", **kw):
    w = workdir(neutral_dir(L, name), files)
    cmd = ["unshare", "-m", "bash", "-c",
           'mount -t tmpfs -o size=%s tmpfs /dev/shm && exec "$@"' % size, "job",
           shell_prog] + argv
    kw.setdefault("expect_exit", 1)
    C.append(Case(name, L, cmd, notes + " /dev/shm was a %s tmpfs in a private mount namespace." % size,
                  G, cwd=w, env=job_env(), **kw))


BUS = r"insufficient shared memory \(shm\)"
shm("loader-bus-error-2workers", "1M", ["train.py", "--workers", "2", "--sample-mb", "4", "--batch-size", "1"],
    "train.py, 2 DataLoader workers returning 4 MiB samples: worker SIGBUS.", expect_re=BUS)
shm("loader-bus-error-4workers-batch", "2M", ["train.py", "--workers", "4", "--sample-mb", "1", "--batch-size", "4", "--log-every", "1"],
    "4 workers, batches of 4 x 1 MiB.", expect_re=BUS)
shm("loader-bus-error-hf", "8M", ["train.py", "--workers", "2", "--sample-mb", "2", "--batch-size", "8", "--style", "hf"],
    "HF-Trainer-style header, 2 workers, 16 MiB batches.", expect_re=BUS)
shm("loader-bus-error-lightning", "4M", ["train.py", "--workers", "3", "--sample-mb", "0.5", "--batch-size", "8", "--style", "lightning", "--log-every", "1"],
    "Lightning-style header/progress, 3 workers, 4 MiB batches.", expect_re=BUS)
shm("loader-bus-error-pin-memory", "1M", ["train.py", "--workers", "2", "--sample-mb", "0.3", "--batch-size", "1", "--pin-memory"],
    "pin_memory=True, 2 workers.", expect_re=BUS)
shm("loader-bus-error-logging", "3M", ["train.py", "--workers", "2", "--sample-mb", "1", "--batch-size", "2", "--style", "logging", "--prefetch", "4"],
    "python logging format, prefetch_factor=4.", expect_re=BUS)
shm("loader-enospc-torch-segment", "64K", ["train.py", "--workers", "2", "--sample-mb", "0.01", "--batch-size", "1"],
    "samples of 10 KiB: the worker fails to create a /torch_* segment: 'unable to write to file </torch_...>: No space left on device (28)'.",
    expect_re=r"unable to write to file </torch_")
shm("loader-enospc-torch-segment-bs", "128K", ["train.py", "--workers", "4", "--sample-mb", "0.005", "--batch-size", "4", "--style", "hf"],
    "4 workers, small samples, HF-style: ENOSPC creating a /torch_* segment.",
    expect_re=r"unable to write to file </torch_|insufficient shared memory")
shm("loader-file-system-strategy", "1M", ["train.py", "--workers", "2", "--sample-mb", "0.3", "--batch-size", "2", "--sharing", "file_system"],
    "torch.multiprocessing sharing strategy file_system.", expect_re=r"shared memory|</torch_|No space left")
shm("hogwild-share-memory", "2M", ["-c", "python3 hogwild.py 2048 2; rc=$?; echo \"hogwild exited with status $rc\"; exit $rc"],
    "bash runs hogwild.py: model.share_memory() of a 16 MB model into a 2 MB /dev/shm (torch.multiprocessing, Hogwild); the main process dies of SIGBUS and bash reports 'Bus error'.",
    files=("hogwild.py",), expect_exit=135, expect_re=r"Bus error", shell_prog="bash")
shm("posix-shared-memory-faulthandler", "4M", ["shm_cache.py", "16", "--faulthandler"],
    "multiprocessing.shared_memory segment of 16 MB filled in a 4 MB /dev/shm: SIGBUS in the main process with faulthandler enabled ('Fatal Python error: Bus error'); the only hint is shared_memory.py in the stack.",
    files=("shm_cache.py",), expect_exit=None, expect_signal="SIGBUS")

shm("mp-spawn-lock-enospc", "256K",
    ["-c", "head -c 262144 /dev/zero > /dev/shm/leftover-segment 2>/dev/null; exec python3 spawn_workers.py --nprocs 2"],
    "bash fills /dev/shm with a leftover file (as a crashed run's segments do), then spawn_workers.py starts its ranks with torch.multiprocessing.spawn: creating the error queue's lock (a POSIX semaphore, a file in /dev/shm) fails with a bare 'OSError: [Errno 28] No space left on device' under _multiprocessing.SemLock, before any rank runs.",
    files=("spawn_workers.py",), shell_prog="bash", expect_re=r"SemLock[\s\S]*No space left on device")

if __name__ == "__main__":
    generator_main(C, G)
