"""Run directories made by the tests themselves (report.json + output.log), so that
notification tests do not depend on `gpualert run`. Keys follow report/run_report.hpp."""
import json
import os

MARK = "#gpualert# "


def make_run(root, name="llama-ft", lines=None, exit_code=1, signal=None, label="cuda_oom",
             evidence=None, fields=None, cwd=None, host="gpu-node17", duration_s=7980.0,
             raw_log=None, env=None):
    """Creates root/run (the run dir) and root/cwd (the job's working directory).
    lines: the job's output lines; evidence: list of (line_number_in_output_log, text)."""
    run_dir = os.path.join(root, "run")
    cwd = cwd or os.path.join(root, "cwd")
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(cwd, exist_ok=True)
    header = [MARK + "command: python train.py", MARK + "cwd: " + cwd, MARK + "---- job output begins ----"]
    log_path = os.path.join(run_dir, "output.log")
    with open(log_path, "wb") as f:
        if raw_log is not None:
            f.write(raw_log)
        else:
            body = header + (lines or []) + [MARK + "---- job output ends ----"]
            f.write(("\n".join(body) + "\n").encode())
    report = {
        "name": name, "argv": ["python", "train.py"], "command": "python train.py",
        "cwd": cwd, "host": host, "user": "alice",
        "started": "2026-11-29T10:00:00+00:00", "ended": "2026-11-29T12:13:00+00:00",
        "duration_s": duration_s, "exit_code": exit_code, "signal": signal,
        "core_dumped": False, "wrapper_timeout": False,
        "run_dir": run_dir, "log": log_path, "log_bytes": os.path.getsize(log_path),
        "log_fallback": None, "env": env or {"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_ID": "4242"},
        "sources": {}, "warnings": [],
    }
    if label:
        report.update({
            "label": label, "rule": label + "-rule", "group": "gpu software" if label != "success" else "-",
            "action": "smaller batch, activation checkpointing" if label != "success" else "none",
            "evidence": [{"line": n, "text": t, "source": "log"} for n, t in (evidence or [])],
            "fields": fields or {},
        })
    with open(os.path.join(run_dir, "report.json"), "w") as f:
        json.dump(report, f)
    return run_dir, cwd


OOM_LINES = [
    "loading model",
    "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123",
    "password: hunter2",
    "Authorization: Bearer sekretbearertoken123",
    "step 1 loss 2.1",
    "\x1b[32mprogress\x1b[0m 10%\r 50%\r100%",
    "Traceback (most recent call last):",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB",
    "done",
]
# Header is 3 lines, so job line i (0-based) is output.log line i + 4.
OOM_EVIDENCE = [(11, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB")]
