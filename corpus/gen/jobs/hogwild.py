"""Hogwild-style training: the model lives in shared memory, N processes train it."""
import sys
import torch
import torch.multiprocessing as mp
import torch.nn as nn

def train(rank, model, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for s in range(steps):
        x = torch.randn(16, model[0].in_features)
        loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if s % 10 == 0:
            print("proc %d step %d loss %.4f" % (rank, s, loss.item()), flush=True)

if __name__ == "__main__":
    width = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
    nproc = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))
    print("sharing model with %.1f MB of parameters" % (sum(p.numel() for p in model.parameters()) * 4 / 2**20), flush=True)
    model.share_memory()
    procs = []
    for r in range(nproc):
        p = mp.Process(target=train, args=(r, model, 30))
        p.start(); procs.append(p)
    for p in procs:
        p.join()
    print("all done")
