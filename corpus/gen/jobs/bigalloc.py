"""Asks for more memory than the machine has; the allocation is refused."""
import sys
kind = sys.argv[1]
if kind == "bytes":
    print("building vocabulary index ...")
    buf = bytearray(1 << 44)
elif kind == "numpy":
    import numpy as np
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    print("computing pairwise distance matrix for %d samples" % n)
    d = np.zeros((n, n))
elif kind == "torch":
    import torch
    print("allocating embedding table")
    emb = torch.nn.Embedding(50_000_000_000 // 1024, 4096)
elif kind == "torch_cat":
    import torch
    feats = [torch.zeros(1024, 1024) for _ in range(4)]
    print("stacking features")
    big = torch.empty((1 << 20, 1 << 20))
elif kind == "list":
    print("materialising index")
    idx = [0] * (1 << 42)
