#!/usr/bin/python3
"""cuda_setup: a GPU job started where the CUDA stack is unusable from the
start.  Here: the CPU-only torch build ('Torch not compiled with CUDA
enabled'), no NCCL, missing libcudart/libcuda shared libraries."""
import os
import shutil
import subprocess
import tempfile
from capture import Case, pycase, shcase, job_env, workdir, neutral_dir, generator_main, JOBS

G = "gen_cuda_setup.py"
L = "cuda_setup"
C = []
NOCUDA = r"Torch not compiled with CUDA enabled"


def py(name, mode, notes, rx=NOCUDA, extra=(), **kw):
    kw.setdefault("expect_exit", 1)
    C.append(pycase(name, L, ["cudajob.py", mode] + list(extra), notes, G, files=("cudajob.py",), expect_re=rx, **kw))


py("model-cuda", "model_cuda", "model.cuda() with the CPU-only torch build.")
py("to-device-cuda", "to_device", "model.to(torch.device('cuda')) with the CPU-only build.")
py("tensor-device-cuda0", "tensor_device", "torch.randn(..., device='cuda:0').")
py("set-device-local-rank", "set_device", "torch.cuda.set_device(LOCAL_RANK) on the CPU-only torch 1.13 build: it fails with \"AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'\" (no CUDA wording).",
   rx=r"_cuda_setDevice", env_extra={"LOCAL_RANK": "0"})
py("current-device-name", "current_device", "torch.cuda.current_device() / get_device_name.")
py("amp-gradscaler", "amp", "torch.cuda.amp.GradScaler() warns that CUDA is not available, then .cuda() fails.")
py("pin-memory-to-cuda", "pin", "DataLoader(pin_memory=True) then batch.to('cuda').", rx=NOCUDA + r"|CUDA|cuda")
py("nccl-backend", "nccl", "init_process_group('nccl') on a torch without NCCL: 'Distributed package doesn't have NCCL built in'.",
   rx=r"NCCL built in|NCCL")
py("cuda-stream", "stream", "torch.cuda.Stream() on the CPU-only torch 1.13 build: 'TypeError: object.__new__() takes exactly one argument' raised from torch/cuda/streams.py.",
   rx=r"object\.__new__\(\) takes exactly one argument")
py("libcudart-missing", "libcudart", "ctypes.CDLL('libcudart.so.12'): cannot open shared object file.", rx=r"libcudart\.so\.12: cannot open shared object file")
py("libcuda-missing", "cupy_like", "ctypes.CDLL('libcuda.so.1'): no NVIDIA driver library.", rx=r"libcuda\.so\.1: cannot open shared object file")
C.append(shcase("load-cuda-checkpoint", L,
    "#!/bin/bash\npython3 mkckpt.py model_gpu.pt\necho 'resuming from model_gpu.pt'\nexec python3 cudajob.py load_cuda_ckpt model_gpu.pt\n",
    "torch.load of a checkpoint whose tensors were saved on cuda:0, without map_location: 'Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False'.",
    G, files=("cudajob.py", "mkckpt.py"), expect_exit=1, expect_re=r"deserialize object on a CUDA device"))

# A native binary linked against libcudart, started where the library is missing.
w = workdir(neutral_dir(L, "native-libcudart-not-found"), ("stub.c", "needscuda.c"))
script = ("set -e\nmkdir -p build && cc -shared -fPIC -Wl,-soname,libcudart.so.12 -o build/libcudart.so.12 stub.c\n"
          "cc -o build/infer needscuda.c build/libcudart.so.12\nrm -f build/libcudart.so.12 stub.c needscuda.c\nclear_log=1\n")
r = subprocess.run(["bash", "-c", script], cwd=w, capture_output=True, text=True)
if r.returncode == 0:
    C.append(Case("native-libcudart-not-found", L, ["bash", "-c", "echo 'starting inference server'; ./build/infer --model ./model.plan"],
                  "a native inference binary linked against libcudart.so.12 (built here against a stub, then the stub removed): the dynamic loader cannot find it, exit 127.",
                  G, cwd=w, env=job_env(), expect_exit=127, expect_re=r"error while loading shared libraries: libcudart\.so\.12"))
else:
    print("build failed", r.stderr)

if __name__ == "__main__":
    generator_main(C, G)
