#!/usr/bin/env python3
"""Writes a training-style log of about SIZE bytes for the classifier benchmark.

The mix is what a long multi-GPU run prints: progress bars redrawn with '\r',
per-step metric lines with rank prefixes and ANSI colour, NCCL INFO chatter,
library warnings, JSON metric dumps, and benign look-alikes ("0 errors",
"OVERFLOW! Skipping step"). It ends with a real failure (a CUDA OOM on one rank,
then watchdog timeouts on the others) so that the classifier has to read to the end.

usage: gen_training_log.py PATH SIZE_MB
"""
import random
import sys


def block(rng, start_step):
    out = []
    step = start_step
    for _ in range(2000):
        step += 1
        r = rng.randrange(8)
        kind = rng.randrange(100)
        if kind < 40:
            bar = "".join(
                f" {p:3d}%|{'#' * (p // 10):10s}| {p * 10}/1000 [00:{p % 60:02d}<01:{(99 - p) % 60:02d}, {rng.uniform(1, 9):.2f}it/s]\r"
                for p in range(0, 100, 7))
            out.append(bar + "\n")
        elif kind < 70:
            out.append(f"[rank{r}]: \x1b[32m2024-05-01 12:{step % 60:02d}:{step % 59:02d}\x1b[0m | "
                       f"epoch {step // 5000} step {step} | loss {rng.uniform(0.5, 3):.4f} | "
                       f"lr {rng.uniform(1e-5, 3e-4):.3e} | grad_norm {rng.uniform(0.1, 5):.3f} | "
                       f"tokens/s {rng.randrange(10000, 90000)}\n")
        elif kind < 80:
            out.append(f"node{r // 4}:{1000 + r}:{2000 + r} [{r}] NCCL INFO Channel {rng.randrange(32):02d}/0 : "
                       f"{r}[{r}] -> {(r + 1) % 8}[{(r + 1) % 8}] via P2P/IPC/read\n")
        elif kind < 86:
            out.append("/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:429: UserWarning: "
                       "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False "
                       "explicitly. The default value of use_reentrant will be updated to be False in the "
                       "future.\n")
        elif kind < 92:
            metrics = ", ".join(f'"metric_{i}": {rng.uniform(0, 1):.6f}' for i in range(40))
            out.append(f'{{"step": {step}, "eval_loss": {rng.uniform(0.5, 2):.4f}, {metrics}}}\n')
        elif kind < 95:
            out.append(f"[deepspeed] OVERFLOW! Rank {r} Skipping step. Attempted loss scale: 65536, reducing to 32768\n")
        elif kind < 98:
            out.append(f"Validation step {step}: 0 errors, 0 warnings, nan_count=0\n")
        else:
            out.append(f"[rank{r}]:[W501 12:00:00.000000000 ProcessGroupNCCL.cpp:4115] Warning: "
                       f"TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point collectives.\n")
    return "".join(out).encode(), step


def main():
    path, size_mb = sys.argv[1], int(sys.argv[2])
    target = size_mb * 1024 * 1024
    rng = random.Random(7)
    blocks = []
    step = 0
    for _ in range(16):
        data, step = block(rng, step)
        blocks.append(data)
    written = 0
    with open(path, "wb") as f:
        i = 0
        while written < target:
            data = blocks[i % len(blocks)]
            f.write(data)
            written += len(data)
            i += 1
        f.write(b"[rank3]: Traceback (most recent call last):\n"
                b"[rank3]:   File \"train.py\", line 212, in <module>\n"
                b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                b"GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n")
        for r in (0, 1, 2, 4, 5, 6, 7):
            f.write(f"[rank{r}]:[E501 12:30:00.000000000 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught "
                    f"collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 1800017 "
                    f"milliseconds before timing out.\n".encode())


if __name__ == "__main__":
    main()
