"""Starts its ranks with torch.multiprocessing.spawn, as many research train.py
scripts do, then trains a tiny model over gloo on the loopback interface.

usage: spawn_workers.py [--nprocs N] [--steps N]
"""
import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world, port, steps):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        x = torch.randn(32, 16)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    print(f"spawning {args.nprocs} ranks (gloo, 127.0.0.1:{port})", flush=True)
    mp.spawn(worker, args=(args.nprocs, port, args.steps), nprocs=args.nprocs)
    print("training done", flush=True)


if __name__ == "__main__":
    main()
