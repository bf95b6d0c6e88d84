#!/usr/bin/python3
"""success: real short trainings that exit 0, many printing scary-but-benign
things (warnings containing 'error', caught exceptions, retries, metric
names containing 'nan', dynamic loss-scale overflow messages, '0 errors')."""
from capture import pycase, shcase, generator_main

G = "gen_success.py"
L = "success"
C = []


def b(name, mode, notes, **kw):
    C.append(pycase(name, L, ["benign.py", mode], notes, G, files=("benign.py",), expect_exit=0, **kw))


def t(name, argv, notes, **kw):
    C.append(pycase(name, L, ["train.py"] + argv, notes, G, expect_exit=0, **kw))


t("plain-train", ["--steps", "30"], "plain short training, exit 0.")
t("hf-style", ["--steps", "20", "--style", "hf", "--log-every", "2"], "HF-Trainer-style output ending in 'Training completed'.")
t("lightning-bar", ["--steps", "25", "--style", "lightning", "--log-every", "1", "--epochs", "2"], "Lightning-style progress bars with \\r.")
t("workers-4-logging", ["--steps", "20", "--workers", "4", "--style", "logging"], "4 DataLoader workers, python logging format.")
t("benign-noise-warnings", ["--steps", "20", "--benign-noise"], "UserWarning 'no error is raised' + '0 errors so far' line.")
t("fp16-overflow-skips", ["--steps", "20", "--fp16-sim", "--log-every", "1"], "dynamic loss scaling prints '[deepspeed] OVERFLOW! ... Skipping step' a few times, then trains.")
t("json-metrics-nan-fields", ["--steps", "15", "--style", "json", "--log-every", "1"], "JSON metric lines with fields loss_is_nan/grad_nan_count.")
t("checkpoints-saved", ["--steps", "30", "--save-dir", "ckpt", "--save-every", "10"], "saves checkpoints successfully.")
t("bar-unbuffered", ["--steps", "30", "--style", "bar", "--log-every", "1"], "\\r progress bar, python unbuffered.", unbuffered=True)
b("retry-then-ok", "retry", "shard fetch fails twice with a printed WARNING/error, third try succeeds.")
b("caught-importerror-traceback", "caught_exception", "optional apex import fails; the traceback is printed (ModuleNotFoundError) and the run falls back and finishes.")
b("batch-size-finder-alloc-fail", "oom_probe", "batch-size finder catches 'DefaultCPUAllocator: can't allocate memory' and halves; run completes.")
b("deprecation-warnings-error-word", "warnings", "FutureWarning 'will raise an error', UserWarning about lr_scheduler order, NCCL_ASYNC_ERROR_HANDLING deprecation line.")
b("metric-names-nan", "nan_metrics", "metric names containing 'nan' (nan_count, val_nanmean).")
b("errors-zero", "errors_zero", "'errors: 0', 'error_rate', '0 errors, 0 warnings' lines.")
b("fp16-apex-overflow", "fp16", "apex/deepspeed-style overflow messages each 10 steps.")
C.append(shcase("bash-job-set-x", L,
                "#!/bin/bash\nset -x\nexport OMP_NUM_THREADS=1\npython3 train.py --steps 10 --log-every 2\necho \"exit code $?\"\n",
                "bash job script with set -x tracing, python exits 0.", G, expect_exit=0))
C.append(shcase("checkpoint-enospc-retried", L,
                 "mkdir -p ckpt && exec unshare -m bash -c 'mount -t tmpfs -o size=6M tmpfs ckpt && exec python3 caught.py save-retry ckpt'",
                 "a checkpoint write fails with ENOSPC on a 6 MB tmpfs (logged as ERROR with [Errno 28]); the script deletes "
                 "the oldest checkpoint, retries and trains to the end: a success whose middle has a full-disk error.",
                 G, files=("caught.py",), expect_exit=0, expect_re=r"training done"))

if __name__ == "__main__":
    generator_main(C, G)
