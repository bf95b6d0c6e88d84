#!/usr/bin/python3
"""unknown: the job fails with no explanatory output at all."""
import os
import subprocess
import signal as S
from capture import Case, pycase, shcase, job_env, workdir, neutral_dir, generator_main

G = "gen_unknown.py"
L = "unknown"
C = []
C.append(shcase("bash-exit-3-silent", L, "#!/bin/bash\necho 'preparing run'\nexit 3\n", "job script prints one line and exits 3.", G, expect_exit=3))
C.append(shcase("bash-false-set-e", L, "#!/bin/bash\nset -e\necho 'stage 1 done'\ngrep -q needle /dev/null\necho 'stage 2 done'\n",
                "set -e and a grep that matches nothing: exit 1 with no message.", G, expect_exit=1))
C.append(pycase("python-sys-exit-1", L, ["-c", "import sys; print('epoch 0 done'); sys.exit(1)"], "python exits 1 silently after one line.", G, files=(), expect_exit=1))
C.append(pycase("python-os-exit-7", L, ["-c", "import os, torch; print('model ready', flush=True); os._exit(7)"], "os._exit(7) after importing torch.", G, files=(), expect_exit=7))
C.append(pycase("python-train-then-exit-255", L, ["-c", "import runpy, sys; sys.argv=['train.py','--steps','10']; runpy.run_path('train.py', run_name='__main__'); sys.exit(255)"],
                "a full short training, then exit 255 without a word.", G, expect_exit=255))
C.append(pycase("python-silent-empty", L, ["-c", "raise SystemExit(4)"], "no output at all, exit 4.", G, files=(), expect_exit=4))
w = workdir(neutral_dir(L, "c-return-1"))
open(os.path.join(w, "tool.c"), "w").write("int main(void) { return 1; }\n")
if subprocess.run(["cc", "-o", os.path.join(w, "tool"), os.path.join(w, "tool.c")]).returncode == 0:
    os.unlink(os.path.join(w, "tool.c"))
    C.append(Case("c-return-1", L, ["./tool"], "a C program returning 1 with no output.", G, cwd=w, env=job_env(), expect_exit=1))
    C.append(Case("c-return-1-in-script", L, ["bash", "-c", "echo '== step 1: index'; ./tool && echo indexed"],
                  "bash runs the C tool, which returns 1 silently; the script's exit is 1.", G, cwd=w, env=job_env(), expect_exit=1))
C.append(pycase("sigkill-no-evidence", L, ["train.py", "--steps", "2000", "--step-sleep", "0.01", "--log-every", "20"],
                "the job was SIGKILLed by a controller (kill -9) with no OOM, scheduler or other evidence.", G,
                send=[(S.SIGKILL, 3.0, "pid")], expect_signal="SIGKILL", kmsg=True, unbuffered=True))
C.append(pycase("sigusr1-default", L, ["train.py", "--steps", "2000", "--step-sleep", "0.01", "--log-every", "50"],
                "SIGUSR1 (default action: terminate) sent by a controller; nothing printed about it.", G,
                send=[(S.SIGUSR1, 3.0, "pid")], expect_signal="SIGUSR1", unbuffered=True))

if __name__ == "__main__":
    generator_main(C, G)
