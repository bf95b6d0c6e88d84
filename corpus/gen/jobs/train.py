"""A small but real PyTorch training job (CPU) used to reproduce failures.

Every failure it shows comes from really doing the thing: NaNs are computed,
memory is really allocated, files are really written, data loader workers
really pass tensors through /dev/shm.
"""
import argparse
import math
import os
import signal
import sys
import time
import warnings

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser(description="toy trainer")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--optim", default="adam", choices=["adam", "sgd"])
p.add_argument("--dim", type=int, default=64)
p.add_argument("--hidden", type=int, default=128)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--sample-mb", type=float, default=0.0, help="extra payload per sample (tensor)")
p.add_argument("--worker-leak-mb", type=float, default=0.0, help="each __getitem__ in a worker keeps this much")
p.add_argument("--cache-mb-per-step", type=float, default=0.0, help="main process keeps this much per step")
p.add_argument("--numpy-cache", action="store_true")
p.add_argument("--style", default="plain", choices=["plain", "bar", "lightning", "hf", "json", "logging"])
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--nan-at", type=int, default=-1, help="step at which the data turns bad")
p.add_argument("--nan-kind", default="log", choices=["log", "div0", "sqrt", "overflow", "lr"])
p.add_argument("--nan-check", default="isfinite",
               choices=["none", "isfinite", "anomaly", "clip", "lightning", "detectron", "fairseq", "assert", "hf", "yolo"])
p.add_argument("--save-dir", default=None)
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--save-kind", default="torch", choices=["torch", "numpy", "text", "pickle"])
p.add_argument("--data", default=None, help="dataset file to load (npz/pt)")
p.add_argument("--config", default=None, help="yaml config")
p.add_argument("--benign-noise", action="store_true", help="print warnings that look scary")
p.add_argument("--fp16-sim", action="store_true", help="simulate dynamic loss scaling messages")
p.add_argument("--handle-signals", action="store_true", help="install SIGTERM handler that checkpoints")
p.add_argument("--seed", type=int, default=0)
p.add_argument("--sharing", default=None, choices=["file_descriptor", "file_system"])
p.add_argument("--pin-memory", action="store_true")
p.add_argument("--prefetch", type=int, default=2)
args = p.parse_args()

torch.manual_seed(args.seed)
if args.sharing:
    torch.multiprocessing.set_sharing_strategy(args.sharing)
if args.benign_noise:
    warnings.simplefilter("default")

cfg = {"model": {"dim": args.dim, "hidden": args.hidden}, "optim": {"lr": args.lr}}
if args.config:
    import yaml
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    dim = cfg["model"]["dim"]
    hidden = cfg["model"]["hidden_size"]
    lr = cfg["optimizer"]["lr"]
else:
    dim, hidden, lr = args.dim, args.hidden, args.lr


class Synthetic(Dataset):
    def __init__(self, n, dim, payload_mb, leak_mb):
        self.n, self.dim = n, dim
        self.payload = int(payload_mb * (1 << 20) / 4)
        self.leak = int(leak_mb * (1 << 20))
        self.kept = []
        g = torch.Generator().manual_seed(1)
        self.w = torch.randn(dim, 1, generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(self.dim, generator=g)
        y = (x @ self.w).squeeze() + 0.1 * torch.randn((), generator=g)
        if self.leak:
            # a per-worker decoded-sample cache that never evicts
            b = bytearray(self.leak)
            for k in range(0, self.leak, 4096):
                b[k] = 1
            self.kept.append(b)
        if self.payload:
            return x, y, torch.ones(self.payload)
        return x, y


if args.data:
    if args.data.endswith(".npz"):
        import numpy as np
        d = np.load(args.data)
        X, Y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    else:
        X, Y = torch.load(args.data)
    ds = torch.utils.data.TensorDataset(X, Y)
else:
    ds = Synthetic(args.steps * args.batch_size * args.epochs + 64, dim, args.sample_mb, args.worker_leak_mb)

loader = DataLoader(ds, batch_size=args.batch_size, shuffle=False, num_workers=args.workers,
                    drop_last=True, pin_memory=args.pin_memory,
                    **({"prefetch_factor": args.prefetch} if args.workers else {}))

model = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                      nn.Linear(hidden, 1))
if args.optim == "adam":
    opt = torch.optim.Adam(model.parameters(), lr=lr)
else:
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
nparams = sum(p.numel() for p in model.parameters())

if args.style == "lightning":
    print("GPU available: False, used: False")
    print("TPU available: False, using: 0 TPU cores")
    print("IPU available: False, using: 0 IPUs")
    print("HPU available: False, using: 0 HPUs")
    print("")
    print("  | Name  | Type       | Params")
    print("-------------------------------------")
    print("0 | model | Sequential | %d" % nparams)
    print("-------------------------------------")
    print("%d     Trainable params" % nparams)
    print("0         Non-trainable params")
elif args.style == "hf":
    print("***** Running training *****")
    print("  Num examples = %d" % len(ds))
    print("  Num Epochs = %d" % args.epochs)
    print("  Instantaneous batch size per device = %d" % args.batch_size)
    print("  Total optimization steps = %d" % (args.steps * args.epochs))
    print("  Number of trainable parameters = %d" % nparams)
elif args.style == "logging":
    import logging
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    log = logging.getLogger("train")
    log.info("model has %d parameters, %d workers", nparams, args.workers)
else:
    print("model: %d parameters; batch %d; workers %d" % (nparams, args.batch_size, args.workers))

if args.benign_noise:
    warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable "
                  "tensors. This means writing to this tensor will result in undefined behavior "
                  "(no error is raised).", UserWarning)
    print("[W init] error_handler: registered (0 errors so far)")

if args.nan_check == "anomaly":
    torch.autograd.set_detect_anomaly(True)

stop = {"sig": None}
if args.handle_signals:
    def on_term(signum, frame):
        stop["sig"] = signum
        print("Received %s, saving checkpoint and exiting" % signal.Signals(signum).name, flush=True)
    signal.signal(signal.SIGTERM, on_term)

scale = 65536.0
cache = []
step = 0
t0 = time.time()
loss_fn = nn.MSELoss()


def emit(msg):
    if args.style == "logging":
        log.info(msg)
    elif args.style == "json":
        print(msg)
    else:
        print(msg)


for epoch in range(args.epochs):
    it = iter(loader)
    for bi in range(args.steps):
        batch = next(it)
        x, y = batch[0], batch[1]
        if args.cache_mb_per_step:
            if args.numpy_cache:
                import numpy as np
                a = np.ones(int(args.cache_mb_per_step * (1 << 20) / 8))
            else:
                a = torch.ones(int(args.cache_mb_per_step * (1 << 20) / 4))
            cache.append(a)
        if step == args.nan_at:
            if args.nan_kind == "lr":
                for gparam in opt.param_groups:
                    gparam["lr"] = 1e12
            elif args.nan_kind == "overflow":
                x = x * 1e30
        out = model(x).squeeze(-1)
        if step >= args.nan_at >= 0 and args.nan_kind in ("log", "div0", "sqrt"):
            if args.nan_kind == "log":
                loss = loss_fn(out, torch.log(y - y.abs().max() - 1.0))
            elif args.nan_kind == "div0":
                loss = loss_fn(out, y) / (y.sum() - y.sum())
            else:
                loss = torch.sqrt(out - 1e6).mean()
        else:
            loss = loss_fn(out, y)
            if args.nan_kind == "overflow" and step >= args.nan_at >= 0:
                loss = loss * 1e30
        if args.fp16_sim:
            # dynamic loss scaling as apex / deepspeed do it, on CPU floats
            scaled = loss * scale
            if not torch.isfinite(scaled) or scale > 60000:
                print("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: %d, reducing to %d"
                      % (scale, scale / 2))
                scale /= 2
                step += 1
                continue
        lv = loss.item()
        if args.nan_check == "isfinite" and not torch.isfinite(loss):
            raise RuntimeError("Loss is %s at step %d, stopping training" % (lv, step))
        if args.nan_check == "assert":
            assert not math.isnan(lv), "loss is nan"
        if args.nan_check == "lightning" and not torch.isfinite(loss):
            raise ValueError("The loss returned in `training_step` is %s." % lv)
        if args.nan_check == "detectron" and not math.isfinite(lv):
            raise FloatingPointError("Loss became infinite or NaN at iteration=%d!\nloss_dict = {'loss_reg': %s}" % (step, lv))
        if args.nan_check == "fairseq" and not math.isfinite(lv):
            raise FloatingPointError("Minimum loss scale reached (0.0001). Your loss is probably exploding. Try lowering the learning rate, using gradient clipping or increasing the batch size.")
        if args.nan_check == "yolo" and not torch.isfinite(loss):
            # ultralytics' guard (copied into many training scripts): print, end training
            # and return normally, so the script exits 0.
            print("WARNING: non-finite loss, ending training ", loss.detach().reshape(1), flush=True)
            sys.exit(0)
        if args.nan_check == "hf" and not math.isfinite(lv):
            print("{'loss': %s, 'learning_rate': %g, 'epoch': %.2f}" % (lv, lr, step / args.steps))
            raise RuntimeError("Loss is nan, stopping training")
        opt.zero_grad()
        loss.backward()
        if args.nan_check == "clip":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        opt.step()
        if step % args.log_every == 0:
            if args.style == "bar":
                n = bi + 1
                bar = "#" * (20 * n // args.steps)
                sys.stdout.write("\rEpoch %d: %3d%%|%-20s| %d/%d [%.1fs, loss=%.4f]" %
                                 (epoch, 100 * n // args.steps, bar, n, args.steps, time.time() - t0, lv))
                sys.stdout.flush()
            elif args.style == "lightning":
                sys.stdout.write("\rEpoch %d:  %d%%|%s| %d/%d [00:0%d<00:00, %.2fit/s, loss=%.3g, v_num=0]" %
                                 (epoch, 100 * (bi + 1) // args.steps, "█" * (10 * (bi + 1) // args.steps),
                                  bi + 1, args.steps, int(time.time() - t0), (bi + 1) / (time.time() - t0 + 1e-3), lv))
                sys.stdout.flush()
            elif args.style == "hf":
                emit("{'loss': %.4f, 'learning_rate': %g, 'epoch': %.2f}" % (lv, lr, epoch + bi / args.steps))
            elif args.style == "json":
                emit('{"step": %d, "loss": %.5f, "grad_nan_count": 0, "loss_is_nan": false}' % (step, lv))
            else:
                emit("epoch %d step %d loss %.5f" % (epoch, step, lv))
        if args.save_every and step % args.save_every == 0 and step > 0:
            os.makedirs(args.save_dir, exist_ok=True)
            path = os.path.join(args.save_dir, "step_%05d" % step)
            if args.save_kind == "torch":
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                            "pad": torch.zeros(1 << 19)}, path + ".pt")
            elif args.save_kind == "numpy":
                import numpy as np
                np.save(path + ".npy", torch.cat([q.detach().flatten() for q in model.parameters()]).repeat(8).numpy())
            elif args.save_kind == "pickle":
                import pickle
                with open(path + ".pkl", "wb") as f:
                    pickle.dump({k: v.numpy() for k, v in model.state_dict().items()} | {"pad": bytes(2 << 20)}, f)
            else:
                with open(path + ".txt", "w") as f:
                    for q in model.parameters():
                        f.write(" ".join("%.6f" % v for v in q.detach().flatten().tolist()))
                        f.write("\n")
            emit("saved checkpoint %s" % path)
        if args.step_sleep:
            time.sleep(args.step_sleep)
        step += 1
        if stop["sig"]:
            sys.exit(128 + stop["sig"])
    if args.style in ("bar", "lightning"):
        sys.stdout.write("\n")
    emit("epoch %d done" % epoch)

if args.style == "hf":
    print("\n\nTraining completed. Do not forget to share your model on huggingface.co/models =)\n\n")
    print("{'train_runtime': %.2f, 'train_loss': %.4f, 'epoch': %.1f}" % (time.time() - t0, lv, float(args.epochs)))
elif args.style == "lightning":
    print("`Trainer.fit` stopped: `max_epochs=%d` reached." % args.epochs)
else:
    print("training finished in %.1fs, final loss %.4f" % (time.time() - t0, lv))
