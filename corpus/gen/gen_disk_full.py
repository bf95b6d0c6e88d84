#!/usr/bin/python3
"""disk_full: real ENOSPC.

A tiny tmpfs is mounted over the job's output directory inside a private mount
namespace (`unshare -m`), and real writers fill it: torch.save checkpoints,
numpy, pickle, text, logging, sqlite, cp/tar/dd, a C program.  Also writes to
/dev/full, which always fails with ENOSPC."""
import os
import subprocess
from capture import Case, job_env, workdir, neutral_dir, generator_main, JOBS

G = "gen_disk_full.py"
L = "disk_full"
C = []
ENOSPC = r"No space left on device|Errno 28|file write failed|disk is full|out of space"
# torch 1.13's torch.save on a full filesystem: "PytorchStreamWriter failed writing
# file data/N: file write failed", then the zip writer's destructor throws
# ("unexpected pos") -> terminate -> SIGABRT.  No errno text at all.
TSAVE = dict(expect_exit=None, expect_signal=None, expect_re=r"file write failed",
             post=lambda r: r.exit_code != 0)


def small_fs(name, size, mnt, script, notes, files=("train.py",), **kw):
    """bash `script` runs with a `size` tmpfs mounted at ./<mnt> (private namespace)."""
    w = workdir(neutral_dir(L, name), files)
    os.makedirs(os.path.join(w, mnt), exist_ok=True)
    cmd = ["unshare", "-m", "bash", "-c",
           'mount -t tmpfs -o size=%s tmpfs "%s" && exec bash -c "$1"' % (size, mnt), "job", script]
    kw.setdefault("expect_exit", "nonzero")
    kw.setdefault("expect_re", ENOSPC)
    C.append(Case(name, L, cmd, notes + " ./%s was a %s tmpfs in a private mount namespace." % (mnt, size),
                  G, cwd=w, env=job_env(), **kw))


def plain(name, script, notes, files=("train.py",), **kw):
    w = workdir(neutral_dir(L, name), files)
    kw.setdefault("expect_exit", "nonzero")
    kw.setdefault("expect_re", ENOSPC)
    C.append(Case(name, L, ["bash", "-c", script], notes, G, cwd=w, env=job_env(), **kw))


small_fs("torch-save-checkpoints", "6M", "checkpoints",
         "exec python3 train.py --steps 40 --save-dir checkpoints --save-every 5",
         "train.py saves a ~2 MB torch checkpoint every 5 steps until the filesystem is full.", **TSAVE)
small_fs("torch-save-hf", "3M", "output",
         "exec python3 train.py --steps 40 --style hf --log-every 2 --save-dir output/checkpoint --save-every 4",
         "HF-style log; torch.save of checkpoints into a nearly full output dir.", **TSAVE)
small_fs("torch-save-lightning", "5M", "lightning_logs",
         "exec python3 train.py --steps 60 --style lightning --log-every 1 --save-dir lightning_logs/version_0/checkpoints --save-every 6",
         "Lightning-style progress bar, checkpoints every 6 steps into a full dir.", **TSAVE)
small_fs("numpy-save", "2M", "ckpt",
         "exec python3 train.py --steps 60 --save-dir ckpt --save-every 3 --save-kind numpy --dim 256 --hidden 512",
         "np.save of flattened weights every 3 steps; numpy's tofile reports only 'OSError: N requested and M written' (no errno text).",
         expect_re=r"requested and \d+ written|No space left")
small_fs("pickle-save", "5M", "ckpt",
         "exec python3 train.py --steps 60 --save-dir ckpt --save-every 4 --save-kind pickle --style logging",
         "pickle.dump checkpoints with python logging format.")
small_fs("text-dump", "1M", "dumps",
         "exec python3 train.py --steps 200 --save-dir dumps --save-every 2 --save-kind text --dim 128 --hidden 256 --log-every 10",
         "weights written as text every 2 steps.")
small_fs("logging-filehandler", "1M", "logs",
         "exec python3 write_logs.py logging logs",
         "logging.FileHandler metrics log grows until the filesystem is full (logging prints '--- Logging error ---' then the job fails on its own write).",
         files=("write_logs.py",))
small_fs("numpy-memmap-flush", "2M", "features",
         "exec python3 write_logs.py memmap features",
         "np.lib.format.open_memmap of 16 MB on a 2 MB filesystem.", files=("write_logs.py",),
         expect_exit=None, expect_signal=None, expect_re=None,
         post=lambda r: (r.exit_code not in (None, 0) or r.signal is not None) and
                        ("SIGBUS" if r.signal == "SIGBUS" else ""))
small_fs("sqlite-metrics-db", "1M", "runs",
         "exec python3 write_logs.py sqlite runs",
         "sqlite3 metrics database: 'database or disk is full'.", files=("write_logs.py",))
small_fs("savez-predictions", "4M", "preds",
         "exec python3 write_logs.py npsavez preds",
         "np.savez_compressed of prediction arrays each epoch.", files=("write_logs.py",))
small_fs("bash-cp-dataset", "4M", "scratch",
         "set -e\necho \"staging data to scratch\"\nfor i in 1 2 3 4 5 6; do head -c 1000000 /dev/urandom > /tmp/shard_$$_$i.bin; done\n"
         "trap 'rm -f /tmp/shard_$$_*' EXIT\ncp -v /tmp/shard_$$_*.bin scratch/\necho staged",
         "job script stages shards with cp into scratch: 'cp: error writing ...: No space left on device'.")
small_fs("bash-tar-extract", "2M", "data",
         "set -e\nmkdir -p /tmp/ds_$$/train && trap 'rm -rf /tmp/ds_$$ /tmp/ds_$$.tar' EXIT\n"
         "for i in $(seq -w 1 8); do head -c 600000 /dev/urandom > /tmp/ds_$$/train/img_$i.bin; done\n"
         "tar -C /tmp/ds_$$ -cf /tmp/ds_$$.tar train\necho \"extracting dataset archive\"\ntar -xvf /tmp/ds_$$.tar -C data\necho extracted",
         "tar extraction of a dataset archive into a full filesystem.")
small_fs("dd-preallocate", "8M", "cache",
         "echo 'preallocating cache file'\ndd if=/dev/zero of=cache/cache.bin bs=1M count=32\nrc=$?\necho \"dd exit $rc\"\nexit $rc",
         "dd preallocates a 32 MB cache on an 8 MB filesystem.")
small_fs("c-shardwriter", "1M", "out",
         "cc -O0 -o /tmp/shardwriter_$$ fullwrite.c && trap 'rm -f /tmp/shardwriter_$$' EXIT && /tmp/shardwriter_$$ out/shard-00000.bin",
         "a C shard writer (compiled at generation time) hits ENOSPC; it prints strerror.", files=("fullwrite.c",))
small_fs("torch-save-python-u-bash", "3M", "work",
         "echo \"job started: $(date -u +%FT%TZ)\"\npython3 -u train.py --steps 50 --save-dir work/ckpt --save-every 5\nrc=$?\necho \"python exited with $rc\"\nexit $rc",
         "job script around python -u; checkpoints fill the work dir.")
plain("dev-full-torch-save",
      "exec python3 -c \"import torch; print('saving model to /dev/full'); torch.save({'w': torch.randn(1024, 1024)}, '/dev/full')\"",
      "torch.save to /dev/full: 'file write failed', then terminate/SIGABRT from the zip writer.", **TSAVE)
plain("dev-full-numpy",
      "exec python3 -c \"import numpy as np; a=np.ones((512,512)); print('writing embeddings'); np.save(open('/dev/full','wb'), a)\"",
      "np.save into /dev/full.")
plain("dev-full-stdout-redirect",
      "python3 write_logs.py stdout-redirect x > /dev/full\nrc=$?\necho \"exit status $rc\" >&2\nexit $rc",
      "the training script's stdout was redirected to /dev/full: Python fails to flush stdout at exit ('Exception ignored ... [Errno 28]', exit 120).",
      files=("write_logs.py",))
plain("dev-full-echo",
      "echo 'writing run metadata'\necho '{\"run\": 1}' > /dev/full\nrc=$?\nexit $rc",
      "bash builtin echo into /dev/full: 'write error: No space left on device'.")

small_fs("caught-checkpoint-enospc-exit0", "6M", "ckpt",
         "exec python3 caught.py save-full ckpt",
         "the script's handler logs the failed checkpoint write ('ERROR - trainer - Failed to execute the "
         "training process: [Errno 28] No space left on device') and returns: exit 0, the run failed.",
         files=("caught.py",), expect_exit=0, expect_re=r"Failed to execute the training process: \[Errno 28\]")

if __name__ == "__main__":
    generator_main(C, G)
