"""Ordinary bugs in training scripts."""
import sys
mode = sys.argv[1]
if mode == "import_missing":
    import torch
    from transformers import AutoModelForCausalLM  # not installed
elif mode == "import_name":
    from torch.optim import AdamWScheduleFree  # no such name
elif mode == "resume_missing_exit0":
    # A launcher's resume step that catches the error, prints it and exits 0 (as
    # Megatron-LM's checkpoint loading once did): the job did nothing and says so
    # only in its last line.
    import sys as _sys
    import torch
    print("loading checkpoint from checkpoints at iteration 200", flush=True)
    try:
        torch.load("checkpoints/iter_0000200/mp_rank_00/model_optim_rng.pt")
    except OSError as e:
        print("could not load the checkpoint", flush=True)
        print(e, flush=True)
        _sys.exit(0)
elif mode == "shape":
    import torch, torch.nn as nn
    model = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    x = torch.randn(64, 784)
    print("batch", tuple(x.shape))
    model(x)
elif mode == "dtype":
    import torch, torch.nn as nn
    emb = nn.Embedding(1000, 64)
    ids = torch.rand(8, 16) * 1000
    emb(ids)
elif mode == "ce_target":
    import torch, torch.nn.functional as F
    logits = torch.randn(16, 10)
    target = torch.randint(0, 10, (16,)).float()
    F.cross_entropy(logits, target.unsqueeze(1))
elif mode == "index":
    import torch, torch.nn as nn
    emb = nn.Embedding(100, 16)
    print("vocab 100, max id in batch", 250)
    emb(torch.tensor([[1, 5, 250]]))
elif mode == "state_dict":
    import torch, torch.nn as nn
    a = nn.Sequential(nn.Linear(16, 32), nn.Linear(32, 4))
    b = nn.Sequential(nn.Linear(16, 64), nn.Linear(64, 4))
    torch.save(a.state_dict(), "ckpt.pt")
    print("loading checkpoint ckpt.pt")
    b.load_state_dict(torch.load("ckpt.pt"))
elif mode == "keyerror_batch":
    import torch
    batch = {"input_ids": torch.zeros(2, 8), "attention_mask": torch.ones(2, 8)}
    labels = batch["labels"]
elif mode == "attr":
    import torch
    model = torch.nn.Linear(4, 4)
    model.module.state_dict()
elif mode == "none":
    cfg = {"scheduler": None}
    warmup = cfg["scheduler"].get("warmup_steps", 0)
elif mode == "zero_div":
    n_batches = 0
    print("epoch loss", 3.2 / n_batches)
elif mode == "recursion":
    def get(cfg, key):
        return get(cfg, key)
    get({}, "lr")
elif mode == "json":
    import json
    with open("config.json", "w") as f:
        f.write('{"lr": 0.001, "epochs": 10,}')
    json.load(open("config.json"))
elif mode == "unpack":
    for x, y in [(1, 2, 3)]:
        pass
elif mode == "assert_user":
    import torch
    x = torch.randn(32, 3, 224, 224)
    assert x.shape[1] == 1, f"expected grayscale input, got {x.shape[1]} channels"
elif mode == "custom_exit":
    import sys
    print("ERROR: --data-dir must point to an existing directory", file=sys.stderr)
    sys.exit(2)
elif mode == "backward_twice":
    import torch
    w = torch.randn(3, requires_grad=True)
    loss = (w * 2).sum().exp()
    loss.backward()
    loss.backward()
elif mode == "inplace":
    import torch
    a = torch.randn(4, requires_grad=True)
    b = a.sigmoid()
    b.mul_(2)
    b.sum().backward() if False else None
    c = a.exp(); c += 1; c.sum().backward()
    d = torch.randn(4, requires_grad=True); e = d.sigmoid(); e.add_(1); e.sum().backward()
    x = torch.randn(4, requires_grad=True); y = x.exp(); y[0] = 0; (y * y).sum().backward()
    z = torch.randn(4, requires_grad=True); s = z.sigmoid(); s.mul_(3); (s).sum().backward()
    t = torch.randn(4, requires_grad=True); u = t.tanh(); u.zero_(); u.sum().backward()
    v = torch.randn(4, requires_grad=True); q = torch.sigmoid(v); q.add_(1.0); q.backward(torch.ones(4))
    raise SystemExit(0)
elif mode == "leaf_inplace":
    import torch
    w = torch.zeros(3, requires_grad=True)
    w += 1
elif mode == "type":
    import torch
    steps = "1000"
    for i in range(steps):
        pass
elif mode == "pickle_lambda":
    import torch
    from torch.utils.data import DataLoader, Dataset
    import multiprocessing as mp
    mp.set_start_method("spawn", force=True)
    class DS(Dataset):
        def __init__(self):
            self.tf = lambda x: x * 2
        def __len__(self):
            return 8
        def __getitem__(self, i):
            return self.tf(torch.tensor(float(i)))
    for b in DataLoader(DS(), batch_size=2, num_workers=2):
        print(b)
