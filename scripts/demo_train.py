#!/usr/bin/env python3
"""The demo job: a small training loop that really fails when it saves its checkpoint.

It trains a tiny linear model with plain Python for a few steps, printing the
kind of lines a real job prints, then writes its checkpoint to the path given
(the demo passes /dev/full, a device on which every write fails for lack of space).
"""
import json
import random
import sys
import time

ckpt = sys.argv[1] if len(sys.argv) > 1 else "/dev/full"
random.seed(0)
w, b, lr = 0.0, 0.0, 0.05
data = [(x / 10, 3 * x / 10 + 1 + random.gauss(0, 0.1)) for x in range(50)]
print("config:", json.dumps({"lr": lr, "steps": 60, "checkpoint": ckpt}))
for step in range(1, 61):
    gw = gb = 0.0
    for x, y in data:
        err = w * x + b - y
        gw += 2 * err * x / len(data)
        gb += 2 * err / len(data)
    w, b = w - lr * gw, b - lr * gb
    if step % 10 == 0:
        loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
        print(f"step {step:3d} | loss {loss:.4f} | w {w:.3f} b {b:.3f}")
        time.sleep(0.05)
print(f"saving checkpoint to {ckpt}")
with open(ckpt, "w") as f:
    f.write(json.dumps({"w": w, "b": b}) * 1000)
print("done")
