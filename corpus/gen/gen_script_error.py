#!/usr/bin/python3
"""script_error: ordinary bugs in real training scripts, really raised."""
from capture import pycase, shcase, generator_main

G = "gen_script_error.py"
L = "script_error"
C = []


def e(name, mode, notes, rx, **kw):
    kw.setdefault("expect_exit", 1)
    C.append(pycase(name, L, ["errs.py", mode], notes, G, files=("errs.py",), expect_re=rx, **kw))


e("modulenotfound-transformers", "import_missing", "imports transformers, which is not installed.", r"ModuleNotFoundError: No module named 'transformers'")
e("importerror-name", "import_name", "imports a name torch.optim does not have.", r"ImportError: cannot import name")
e("shape-mismatch-linear", "shape", "784-wide input into a 512-wide Linear.", r"mat1 and mat2 shapes cannot be multiplied")
e("embedding-float-indices", "dtype", "float tensor passed to nn.Embedding.", r"Expected tensor for argument|scalar type Long|Long")
e("cross-entropy-target-shape", "ce_target", "cross_entropy with a float target of the wrong shape.", r"Error")
e("embedding-index-out-of-range", "index", "token id 250 into a 100-row embedding on CPU: IndexError: index out of range in self.", r"index out of range in self")
e("state-dict-size-mismatch", "state_dict", "load_state_dict with different layer sizes.", r"Error\(s\) in loading state_dict")
e("keyerror-batch-labels", "keyerror_batch", "batch dict has no 'labels'.", r"KeyError: 'labels'")
e("attributeerror-module", "attr", "model.module on a model that is not wrapped in DDP.", r"AttributeError")
e("nonetype-config", "none", "scheduler config is None.", r"'NoneType' object has no attribute")
e("zerodivision", "zero_div", "empty loader: division by zero in the epoch average.", r"ZeroDivisionError")
e("recursionerror", "recursion", "a config getter calls itself.", r"RecursionError")
e("json-config-trailing-comma", "json", "config.json has a trailing comma.", r"JSONDecodeError")
e("unpack-valueerror", "unpack", "tuple unpacking mismatch.", r"ValueError: too many values to unpack")
e("assert-user-channels", "assert_user", "user assert on input channels.", r"AssertionError: expected grayscale")
e("resume-missing-checkpoint-caught-exit0", "resume_missing_exit0",
  "resume from a checkpoint that is not there: the script catches the FileNotFoundError, prints "
  "it ([Errno 2] ...) and exits 0.", r"\[Errno 2\] No such file or directory", expect_exit=0)
e("usage-exit2-custom", "custom_exit", "script validates its arguments and exits 2 with an ERROR line.", r"ERROR: --data-dir", expect_exit=2)
e("backward-twice", "backward_twice", "backward through the graph a second time.", r"Trying to backward through the graph a second time")
e("inplace-autograd", "inplace", "in-place op on a tensor needed for gradient computation.", r"modified by an inplace operation")
e("leaf-inplace", "leaf_inplace", "in-place update of a leaf that requires grad.", r"a leaf Variable that requires grad")
e("typeerror-range-str", "type", "range() over a str from a config.", r"TypeError")
e("spawn-pickle-lambda", "pickle_lambda", "DataLoader workers with spawn cannot pickle a lambda in the dataset.", r"pickle|Pickl")
C.append(pycase("argparse-unknown-arg", L, ["train.py", "--lr", "0.01", "--warmup-steps", "100"],
                "argparse rejects an unknown argument: usage + 'error: unrecognized arguments', exit 2.", G,
                expect_exit=2, expect_re=r"error: unrecognized arguments"))
C.append(pycase("argparse-bad-type", L, ["train.py", "--batch-size", "32x"],
                "argparse type error: invalid int value, exit 2.", G, expect_exit=2, expect_re=r"invalid int value"))
C.append(pycase("filenotfound-dataset", L, ["train.py", "--data", "data/train_shards.npz"],
                "dataset path does not exist: FileNotFoundError from numpy.load.", G, expect_exit=1,
                expect_re=r"FileNotFoundError|No such file or directory"))
C.append(pycase("filenotfound-torch-load", L, ["train.py", "--data", "/datasets/imagenet/train.pt", "--style", "hf"],
                "torch.load of a missing file.", G, expect_exit=1, expect_re=r"No such file or directory"))
C.append(shcase("keyerror-yaml-config", L,
                "#!/bin/bash\ncat > config.yaml <<'Y'\nmodel:\n  dim: 64\n  hidden: 128\noptimizer:\n  lr: 0.001\nY\nexec python3 train.py --config config.yaml\n",
                "yaml config uses 'hidden' but the script reads 'hidden_size': KeyError.", G,
                expect_exit=1, expect_re=r"KeyError: 'hidden_size'"))
C.append(shcase("bash-command-not-found", L,
                "#!/bin/bash\nset -e\nmodule load cuda/12.1 2>/dev/null || echo 'module: command not found, continuing'\naccelerate launch train.py --mixed_precision bf16\n",
                "job script calls 'accelerate', which is not installed: bash 'command not found', exit 127.", G,
                expect_exit=127, expect_re=r"command not found"))
C.append(shcase("job-script-hid-the-status", L,
                "#!/bin/bash\npython3 train.py --data data/train_shards.npz\n"
                "cp -r checkpoints \"$HOME/results/\" 2>/dev/null || true\n",
                "job script without set -e: training fails on a missing dataset, the copy of the results "
                "after it fails silently and the script exits 0; the output ends in the traceback.", G,
                expect_exit=0, expect_re=r"FileNotFoundError|No such file or directory"))
C.append(shcase("worker-process-died-parent-exit0", L,
                "#!/bin/bash\nexec python3 - <<'PY'\n"
                "import multiprocessing as mp, time\n"
                "def worker(rank):\n"
                "    print(f'[rank {rank}] loading shard', flush=True)\n"
                "    if rank == 1:\n"
                "        time.sleep(0.5)\n"
                "        shard = {'tokens': [1, 2, 3]}\n"
                "        print(len(shard['input_ids']))\n"
                "if __name__ == '__main__':\n"
                "    procs = [mp.Process(target=worker, args=(r,)) for r in range(2)]\n"
                "    for p in procs:\n"
                "        p.start()\n"
                "    for p in procs:\n"
                "        p.join()\n"
                "PY\n",
                "a launcher that starts worker processes and never checks their exit codes: worker 1 dies of a "
                "KeyError, the launcher exits 0; the output ends in the worker's traceback.", G,
                expect_exit=0, expect_re=r"KeyError: 'input_ids'"))

if __name__ == "__main__":
    generator_main(C, G)
