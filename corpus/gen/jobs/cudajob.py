"""A job written for a GPU machine, run where torch has no CUDA."""
import os
import sys
import torch
import torch.nn as nn

mode = sys.argv[1]
print("torch %s, cuda available: %s" % (torch.__version__, torch.cuda.is_available()), flush=True)
model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
if mode == "model_cuda":
    model = model.cuda()
elif mode == "to_device":
    device = torch.device("cuda")
    model.to(device)
elif mode == "tensor_device":
    x = torch.randn(64, 128, device="cuda:0")
elif mode == "set_device":
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
elif mode == "current_device":
    print("using GPU", torch.cuda.get_device_name(torch.cuda.current_device()))
elif mode == "amp":
    scaler = torch.cuda.amp.GradScaler()
    x = torch.randn(8, 128).cuda(non_blocking=True)
elif mode == "pin":
    from torch.utils.data import DataLoader, TensorDataset
    dl = DataLoader(TensorDataset(torch.randn(64, 128)), batch_size=8, pin_memory=True)
    for (b,) in dl:
        b = b.to("cuda", non_blocking=True)
elif mode == "nccl":
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", sys.argv[2] if len(sys.argv) > 2 else "29999")
    dist.init_process_group("nccl", rank=0, world_size=1)
elif mode == "load_cuda_ckpt":
    # checkpoint whose tensors were saved on cuda:0 (storage location tag)
    import io, pickle
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    data = buf.getvalue().replace(b"cpu", b"cuda:0".ljust(3)[:3]) if False else None
    torch.load(sys.argv[2])
elif mode == "memory_stats":
    print("reserved: %d" % torch.cuda.memory_reserved())
    torch.cuda.reset_peak_memory_stats()
elif mode == "libcudart":
    import ctypes
    ctypes.CDLL("libcudart.so.12")
elif mode == "cupy_like":
    import ctypes
    for lib in ("libcuda.so.1",):
        ctypes.CDLL(lib)
elif mode == "stream":
    s = torch.cuda.Stream()
print("moved model to GPU")
