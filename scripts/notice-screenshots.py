#!/usr/bin/python3
"""Regenerates docs/img/notice-*.png: the HTML part of real notices at a phone's width.

Each ending is a real `gpualert run` of a small job (most replay the output of a corpus
case, then end the way that case ended); no channel is configured, so the notice lands in
a private outbox, and its HTML part is rendered by headless Chromium (Debian's `chromium`
package) at 390 x 844 CSS px, the first screen of a phone, then reduced to 64 colours
with pngquant when it is installed. Not run by `make test`.

    scripts/notice-screenshots.py [--gpualert build/gpualert] [--out docs/img]
"""
import argparse
import email
import email.policy
import glob
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIDTH, HEIGHT = 390, 844


def replay(case, end):
    """A job that prints a corpus case's output (copied into the job's directory as
    NAME.log), then ends as `end` says."""
    return ("replay", case, end)


NAN_JOB = r"""
for i in 1 2 3 4 5 6; do echo "{'loss': 0.$((90 - i * 7)), 'learning_rate': 4.9e-05, 'epoch': 0.$i}"; done
echo "{'loss': nan, 'learning_rate': 4.9e-05, 'epoch': 0.7}"
echo "{'loss': nan, 'learning_rate': 4.9e-05, 'epoch': 0.8}"
echo "{'train_runtime': 412.3, 'train_loss': nan, 'epoch': 1.0}"
echo "Saving model checkpoint to out/checkpoint-500"
"""

STEPS_THEN_HANG = "for i in 1 2 3; do echo \"epoch 4 step $((i * 100))/2000 | loss 1.9$i\"; done; sleep 30"

# name, command, options of `run`, extra environment of the job
ENDINGS = [
    ("cuda_oom", replay("external/cuda_oom/princeton-tigergpu-slurm-cuda-oom-demo", "exit 1"),
     ["--name", "mem-demo"], {}),
    # The --mem the job asked for, as Slurm puts it in the job's environment. No job id:
    # outside a Slurm job the memory cgroup gpualert would read is not the job's own.
    ("host_oom", replay("reproduced/host_oom/sbatch-mem-cgroup-oom", "kill -9 $$"),
     ["--name", "grow"], {"SLURM_MEM_PER_NODE": "200"}),
    ("time_limit", ("script", "train.sh", STEPS_THEN_HANG), ["--name", "llama-ft", "--timeout", "2s",
                                                    "--kill-after", "1s"], {}),
    ("success_warnings", ("script", "finetune.sh", NAN_JOB), ["--name", "bert-ft"], {}),
    ("unknown", replay("reproduced/unknown/python-train-then-exit-255", "exit 255"),
     ["--name", "train"], {}),
    # The --stall notice of a job that stopped printing (sent while it still runs).
    ("stalled", ("script", "train.sh", STEPS_THEN_HANG.replace("sleep 30", "sleep 4")),
     ["--name", "llama-ft", "--stall", "2s"], {}),
]


def html_parts(eml_path):
    with open(eml_path, "rb") as f:
        msg = email.message_from_bytes(f.read(), policy=email.policy.default)
    return msg["Subject"], msg.get_body(preferencelist=("html",)).get_content()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpualert", default=os.path.join(ROOT, "build", "gpualert"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "img"))
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = ap.parse_args()
    if not shutil.which(args.chromium):
        sys.exit("notice-screenshots: chromium not found (apt-get install chromium)")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="shots-")
    try:
        project = os.path.join(work, "project")
        os.makedirs(project)
        for name, command, opts, extra in ENDINGS:
            state = os.path.join(work, "state-" + name)
            if command[0] == "replay":
                _, case, end = command
                log = os.path.basename(case) + ".log"
                shutil.copy(os.path.join(ROOT, "corpus", case, "output.log"),
                            os.path.join(project, log))
                command = ["sh", "-c", f"cat {log}; {end}"]
            elif command[0] == "script":  # the job's script in its directory
                _, script, text = command
                with open(os.path.join(project, script), "w") as f:
                    f.write(text.lstrip("\n"))
                command = ["sh", script]
            env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUALERT_", "SLURM_"))}
            env.update(GPUALERT_STATE_DIR=state, GPUALERT_FROM="gpualert@example.org",
                       GPUALERT_TO="me@example.org", **extra)
            subprocess.run([args.gpualert, "run", "--quiet", "--log-dir",
                            os.path.join(project, "gpualert-logs"), *opts, "--", *command],
                           cwd=project, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
            mails = sorted(glob.glob(os.path.join(state, "outbox", "new", "*.eml")))
            if not mails:
                sys.exit(f"notice-screenshots: {name}: no notice in {state}")
            subject, html = html_parts(mails[0])  # the stall notice comes before the final one
            page = os.path.join(work, name + ".html")
            with open(page, "w") as f:
                f.write(html)
            png = os.path.join(args.out, f"notice-{name.replace('_', '-')}.png")
            subprocess.run([args.chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", "--force-device-scale-factor=1",
                            f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={png}",
                            "file://" + page], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
            if shutil.which("pngquant"):  # a palette of 64 colours: a third of the size
                subprocess.run(["pngquant", "--force", "--ext", ".png", "--speed", "1", "64", png],
                               check=True)
            print(f"{os.path.relpath(png, ROOT)} ({os.path.getsize(png) // 1024} KiB): {subject}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
