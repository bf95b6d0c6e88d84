"""Training loop that writes a verbose metrics log and per-step embeddings dumps."""
import logging
import os
import sys
import numpy as np

mode = sys.argv[1]
out = sys.argv[2]
os.makedirs(out, exist_ok=True)
if mode == "logging":
    h = logging.FileHandler(os.path.join(out, "train.log"))
    logging.basicConfig(level=logging.INFO, handlers=[h, logging.StreamHandler()],
                        format="%(asctime)s %(levelname)s %(message)s")
    for step in range(100000):
        logging.getLogger("metrics").log(logging.INFO if step % 500 == 0 else logging.DEBUG - 1,
                                         "step %d loss %.4f", step, 1.0 / (step + 1))
        logging.getLogger("metrics").handlers  # noqa
        h.stream.write("step %d " % step + "x" * 2000 + "\n")
        h.flush()
elif mode == "memmap":
    print("writing features to %s/features.npy" % out, flush=True)
    a = np.lib.format.open_memmap(os.path.join(out, "features.npy"), mode="w+", dtype=np.float32, shape=(4096, 1024))
    a[:] = 1.0
    a.flush()
    del a
    print("features written")
elif mode == "sqlite":
    import sqlite3
    db = sqlite3.connect(os.path.join(out, "metrics.db"))
    db.execute("create table m (step int, name text, blob blob)")
    for step in range(100000):
        db.execute("insert into m values (?, ?, ?)", (step, "loss", os.urandom(4096)))
        if step % 100 == 0:
            db.commit()
            print("step %d committed" % step, flush=True)
elif mode == "npsavez":
    for epoch in range(100):
        path = os.path.join(out, "preds_epoch%d.npz" % epoch)
        np.savez_compressed(path, preds=np.random.default_rng(epoch).standard_normal((256, 1024)))
        print("saved predictions to", path)
elif mode == "stdout-redirect":
    # prints metrics to stdout, which the user redirected to a full device
    for step in range(20):
        print("step %d loss %.4f" % (step, 1.0 / (step + 1)))
    sys.stderr.write("training done\n")
