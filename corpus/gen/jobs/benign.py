"""Short trainings that finish fine but print alarming-looking things."""
import sys
import time
import warnings
import torch
import torch.nn as nn

mode = sys.argv[1]
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
if mode == "retry":
    attempts = 0
    def fetch_shard():
        global attempts
        attempts += 1
        if attempts < 3:
            raise ConnectionError("Temporary failure in name resolution (shard server)")
        return torch.randn(256, 16)
    for i in range(5):
        try:
            data = fetch_shard()
            break
        except ConnectionError as e:
            print("WARNING: error fetching shard (attempt %d/5): %s; retrying in 0.2s" % (i + 1, e))
            time.sleep(0.2)
elif mode == "caught_exception":
    import traceback
    try:
        import apex  # optional fused optimizer
    except ImportError:
        traceback.print_exc()
        print("apex not available, falling back to torch.optim.Adam")
    data = torch.randn(256, 16)
elif mode == "oom_probe":
    # batch size finder style: probe a size that cannot be allocated, catch, halve
    bs = 1 << 40
    while True:
        try:
            x = torch.empty(bs, 16)
            break
        except RuntimeError as e:
            print("Batch size %d failed: %s" % (bs, str(e).split("\n")[0][:120]))
            bs //= 1024
    print("Finished batch size finder, will continue with full run using batch size %d" % min(bs, 256))
    data = torch.randn(256, 16)
else:
    data = torch.randn(256, 16)
y = data.sum(1, keepdim=True)

if mode == "warnings":
    warnings.warn("torch.distributed.reduce_op is deprecated, please use torch.distributed.ReduceOp instead; this will raise an error in a future release", FutureWarning)
    warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order", UserWarning)
    print("Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead")
for step in range(40):
    loss = nn.functional.mse_loss(model(data), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 10 == 0:
        if mode == "nan_metrics":
            print("step %d loss %.4f nan_count 0 grad_norm_nan False val_nanmean %.4f" % (step, loss.item(), loss.item()))
        elif mode == "errors_zero":
            print("step %d loss %.4f | errors: 0 | error_rate 0.000 | failed_batches 0" % (step, loss.item()))
        elif mode == "fp16":
            scale = 65536 / (2 ** (step // 10))
            print("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: %d, reducing to %d" % (scale, scale / 2))
            print("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to %.1f" % (scale / 2))
            print("step %d loss %.4f" % (step, loss.item()))
        elif mode == "nan_early_stop":
            pass
        else:
            print("step %d loss %.4f" % (step, loss.item()))
if mode == "nan_early_stop":
    print("Monitored metric val_loss = nan is not finite. Previous best value was 0.123. Signaling Trainer to stop.")
if mode == "errors_zero":
    print("validation finished: 0 errors, 0 warnings")
print("done: final loss %.4f" % loss.item())
