#!/usr/bin/python3
"""cancelled: a person or a controller stops the job (not for time).
SIGINT (Ctrl-C) -> KeyboardInterrupt, SIGTERM / SIGHUP / SIGKILL-after-TERM,
a job script that traps the signal; plus coreutils `timeout` kills that leave
no time-limit message in the log (see README: labelled cancelled, honestly)."""
import signal as S
from capture import pycase, shcase, generator_main

G = "gen_cancelled.py"
L = "cancelled"
C = []
LONG = ["train.py", "--steps", "100000", "--step-sleep", "0.02", "--log-every", "25"]


def sig(name, signum, target, notes, argv=LONG, when=r"step 100 loss", **kw):
    C.append(pycase(name, L, argv, notes, G, send=[(signum, when, target)], **kw))


sig("sigint-keyboardinterrupt", S.SIGINT, "group", "Ctrl-C in the terminal: SIGINT to the process group; Python prints the KeyboardInterrupt traceback and dies of SIGINT.",
    expect_signal="SIGINT", expect_re=r"KeyboardInterrupt", unbuffered=True)
sig("sigint-with-workers", S.SIGINT, "group", "Ctrl-C with 2 DataLoader workers: KeyboardInterrupt tracebacks from the main process and the workers.",
    argv=LONG + ["--workers", "2"], expect_signal="SIGINT", expect_re=r"KeyboardInterrupt", unbuffered=True)
sig("sigint-hf-style", S.SIGINT, "group", "Ctrl-C during an HF-style run.", argv=LONG + ["--style", "hf"], when=4.0,
    expect_signal="SIGINT", expect_re=r"KeyboardInterrupt")
sig("sigint-progress-bar", S.SIGINT, "group", "Ctrl-C during a \\r progress bar.", argv=LONG + ["--style", "bar", "--log-every", "5"],
    when=r"\| 1\d\d/", expect_signal="SIGINT", expect_re=r"KeyboardInterrupt")
sig("sigterm-silent", S.SIGTERM, "pid", "kill <pid> (SIGTERM): Python dies silently by the signal.", expect_signal="SIGTERM", unbuffered=True)
sig("sigterm-buffered-empty", S.SIGTERM, "pid", "SIGTERM to a job whose stdout is block-buffered: nothing reached the log.",
    when=3.5, expect_signal="SIGTERM")
sig("sigterm-handler-checkpoint", S.SIGTERM, "pid", "the script traps SIGTERM, prints that it saves a checkpoint, exits 143.",
    argv=LONG + ["--handle-signals"], expect_exit=143, expect_re=r"Received SIGTERM", unbuffered=True)
sig("sighup-terminal-closed", S.SIGHUP, "group", "the terminal/ssh session closed: SIGHUP.", expect_signal="SIGHUP", unbuffered=True)
sig("sigterm-then-sigkill", S.SIGTERM, "pid", "SIGTERM ignored by the job's handler loop, then SIGKILL 2 s later (like a KillWait).",
    argv=["-c", "import signal, time, sys\nsignal.signal(signal.SIGTERM, lambda s, f: print('caught SIGTERM, finishing current epoch first', flush=True))\n"
          "for i in range(10**6):\n    time.sleep(0.02)\n    print('step', i, flush=True) if i % 50 == 0 else None\n"],
    when=r"step 100", expect_signal="SIGKILL", files=())
C[-1].send.append((S.SIGKILL, r"caught SIGTERM", "pid"))
C.append(shcase("bash-script-sigterm-trap", L,
                "#!/bin/bash\ncleanup() { echo \"job script: caught SIGTERM, stopping trainer (pid $child)\"; kill -TERM $child; wait $child; echo \"trainer stopped with $?\"; exit 143; }\n"
                "trap cleanup TERM\npython3 -u train.py --steps 100000 --step-sleep 0.02 --log-every 25 &\nchild=$!\nwait $child\n",
                "a job script that traps SIGTERM and forwards it to the trainer; the script was sent SIGTERM.", G,
                send=[(S.SIGTERM, r"step 100 loss", "pid")], expect_exit=143, expect_re=r"caught SIGTERM"))
C.append(shcase("bash-script-interrupt", L,
                "#!/bin/bash\necho \"run $(date -u +%Y%m%d-%H%M%S)\"\npython3 train.py --steps 100000 --step-sleep 0.02 --log-every 25 --style logging\necho \"after python: $?\"\n",
                "Ctrl-C (SIGINT to the process group) while bash runs python in the foreground.", G, unbuffered=True,
                send=[(S.SIGINT, r"step 100 loss", "group")], expect_signal="SIGINT", expect_re=r"KeyboardInterrupt"))
C.append(shcase("coreutils-timeout-no-message", L,
                "#!/bin/bash\ntimeout 4 python3 -u train.py --steps 100000 --step-sleep 0.02 --log-every 25\n",
                "the trainer was run under coreutils `timeout 4`, which SIGTERMed it; exit 124 but the log shows no time-limit message, so by the brief this is cancelled (not our wrapper's timeout).",
                G, expect_exit=124, timeout=30))
C.append(shcase("coreutils-timeout-kill-after", L,
                "#!/bin/bash\nset -o pipefail\ntimeout -s INT -k 2 4 python3 -u train.py --steps 100000 --step-sleep 0.02 --log-every 25 --style hf\n",
                "`timeout -s INT -k 2 4`: SIGINT after 4 s gives a KeyboardInterrupt traceback; no time-limit text in the log.",
                G, expect_exit=124, expect_re=r"KeyboardInterrupt", timeout=30))

if __name__ == "__main__":
    generator_main(C, G)
