"""Loads a 'dataset' fully into RAM before training (a classic host OOM)."""
import sys
import numpy as np
import torch

shards = int(sys.argv[1]) if len(sys.argv) > 1 else 64
mb = int(sys.argv[2]) if len(sys.argv) > 2 else 32
mode = sys.argv[3] if len(sys.argv) > 3 else "numpy"
print("loading %d shards of %d MB into memory" % (shards, mb))
data = []
for i in range(shards):
    if mode == "numpy":
        a = np.random.default_rng(i).standard_normal(mb * (1 << 20) // 8)
    elif mode == "torch":
        a = torch.randn(mb * (1 << 20) // 4)
    else:
        a = [float(j) for j in range(mb * (1 << 20) // 32)]
    data.append(a)
    if i % 4 == 0:
        print("  shard %d/%d loaded" % (i, shards))
x = np.concatenate(data) if mode == "numpy" else None
print("dataset ready")
