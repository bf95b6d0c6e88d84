"""A training loop whose failure handler logs the error and returns normally (exit 0).

usage: caught.py save-full DIR | alloc | save-retry DIR
  save-full:  checkpoints into DIR until a write fails; the handler logs the OSError.
  alloc:      an evaluation buffer too large for the address-space limit; MemoryError logged.
  save-retry: a checkpoint write fails, the oldest checkpoint is deleted and the save is
              retried, and training goes on to its end (a real success).
"""
import logging
import os
import sys

import numpy as np

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("trainer")
mode = sys.argv[1]
rng = np.random.default_rng(0)
w = rng.standard_normal((256, 1024)).astype(np.float32)  # 1 MiB of weights


def save(path):
    with open(path, "wb") as f:
        f.write(w.tobytes())  # a plain write: ENOSPC comes back as [Errno 28]


def main():
    if mode == "save-full":
        out = sys.argv[2]
        for step in range(1, 1000):
            log.info("step %d loss %.4f", step, 1.0 / step)
            if step % 5 == 0:
                save(os.path.join(out, "step_%05d.bin" % step))
    elif mode == "alloc":
        for step in range(1, 21):
            log.info("step %d loss %.4f", step, 1.0 / step)
        log.info("evaluating")
        buf = np.empty((1 << 20, 1 << 12), dtype=np.float32)  # 16 GiB
        buf[:] = 0
    elif mode == "save-retry":
        out = sys.argv[2]
        kept = []
        for step in range(1, 41):
            log.info("step %d loss %.4f", step, 1.0 / step)
            if step % 5 == 0:
                path = os.path.join(out, "step_%05d.bin" % step)
                try:
                    save(path)
                except OSError as e:
                    log.error("checkpoint %s failed: %s; deleting the oldest and retrying", path, e)
                    os.unlink(kept.pop(0))
                    save(path)
                kept.append(path)
        log.info("training done, last checkpoint %s", kept[-1])


try:
    main()
except Exception as e:  # the script's own handler: logs and returns, so the status is 0
    log.error("Failed to execute the training process: %s", e)
