"""DistributedDataParallel training on CPU with the gloo backend.

--fault picks what goes wrong on --bad-rank at --at-step:
  none | late | stuck | barrier | exit | sigkill | nan | grow | error | mismatch
"""
import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--timeout", type=float, default=5.0)
p.add_argument("--delay", type=float, default=12.0)
p.add_argument("--grow-mb", type=int, default=32)
p.add_argument("--spawn", type=int, default=0, help="use mp.spawn with N processes instead of a launcher")
p.add_argument("--port", type=int, default=0)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--no-ddp", action="store_true", help="plain all_reduce loop instead of DDP")
args = p.parse_args()


def run(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    ddp = model if args.no_ddp else DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    keep = []
    if rank == 0:
        print("world size %d, backend %s, timeout %.0fs" % (world, dist.get_backend(), args.timeout), flush=True)
    for step in range(args.steps):
        bad = rank == args.bad_rank and step == args.at_step
        x = torch.randn(16, 32)
        y = x.sum(1, keepdim=True)
        if bad and args.fault == "late":
            print("rank %d: slow data shard, sleeping %.0fs" % (rank, args.delay), flush=True)
            time.sleep(args.delay)
        elif bad and args.fault == "stuck":
            print("rank %d: waiting on data queue" % rank, flush=True)
            while True:
                time.sleep(1)
        elif bad and args.fault == "barrier":
            time.sleep(args.delay)
        elif bad and args.fault == "exit":
            os._exit(1)
        elif bad and args.fault == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif bad and args.fault == "error":
            cfg = {"lr": 0.01}
            print("rank %d: scheduler warmup %d" % (rank, cfg["warmup"]))
        if args.fault == "grow" and rank == args.bad_rank and step >= args.at_step:
            keep.append(torch.ones(args.grow_mb << 18))
        if args.fault == "barrier" and step == args.at_step:
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=args.timeout))
        out = ddp(x)
        loss = nn.functional.mse_loss(out, y)
        if args.fault == "nan" and rank == args.bad_rank and step >= args.at_step:
            loss = loss * torch.log(torch.tensor(-1.0))
        if not torch.isfinite(loss):
            raise RuntimeError("rank %d: loss is %s at step %d" % (rank, loss.item(), step))
        opt.zero_grad()
        loss.backward()
        if args.no_ddp or args.fault == "mismatch":
            n = 10 if rank == 0 else (20 if args.fault == "mismatch" and step == args.at_step else 10)
            t = torch.ones(n)
            dist.all_reduce(t)
        opt.step()
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if step % 5 == 0:
            print("rank %d step %d loss %.4f" % (rank, step, loss.item()), flush=True)
    dist.barrier()
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        mp.spawn(run, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
