"""Python training jobs that crash in native code."""
import ctypes
import os
import sys

import torch

mode = sys.argv[1]
model = torch.nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    loss = model(torch.randn(8, 32)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print("step %d loss %.4f" % (step, loss.item()))
sys.stdout.flush()

if mode == "ctypes_null":
    # a custom op binding reading through a NULL pointer
    ctypes.string_at(0)
elif mode == "ctypes_memset":
    ctypes.memset(ctypes.c_void_p(16), 0, 64)
elif mode == "abort":
    os.abort()
elif mode == "fatal":
    ctypes.pythonapi.Py_FatalError(b"custom_ops: inconsistent interpreter state in extension")
elif mode == "recursion":
    sys.setrecursionlimit(10 ** 7)
    tree = []
    for _ in range(10 ** 6):
        tree = [tree]
    print(str(tree)[:20])
elif mode == "kill_self_segv":
    # a native library's signal handler re-raising SIGSEGV
    import signal
    os.kill(os.getpid(), signal.SIGSEGV)
elif mode == "free_bad":
    libc = ctypes.CDLL(None)
    buf = ctypes.create_string_buffer(64)
    libc.free(ctypes.addressof(buf) + 16)
elif mode == "loader_worker_segv":
    from torch.utils.data import DataLoader, Dataset
    class DS(Dataset):
        def __len__(self):
            return 64
        def __getitem__(self, i):
            if i == 20:
                ctypes.string_at(0)  # decoder extension crashes on a bad record
            return torch.randn(32)
    for i, b in enumerate(DataLoader(DS(), batch_size=4, num_workers=2)):
        print("batch", i, b.shape)
