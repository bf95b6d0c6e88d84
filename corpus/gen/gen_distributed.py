#!/usr/bin/python3
"""Distributed failures with torch.distributed (gloo) on 127.0.0.1.

Launchers: torchrun (`--redirects 2 --tee 2`, which prefixes each rank's
stderr with [defaultN]: -- see README for why plain torchrun cannot be used
with this torch build), a bash launcher that starts the ranks in the
background like a multi-task srun, and torch.multiprocessing.spawn.
Each case gets its own MASTER_PORT."""
import os
import signal as S
from capture import Case, job_env, workdir, neutral_dir, generator_main, free_port, RUN_ROOT

G = "gen_distributed.py"
C = []
_base = [30100]


def port():
    _base[0] += 37
    return free_port(_base[0])


def torchrun(name, label, argv, notes, nproc=2, redir="2", **kw):
    w = workdir(neutral_dir(label, name), ("ddp.py",))
    p = port()
    cmd = ["torchrun", "--nproc_per_node", str(nproc), "--master_addr", "127.0.0.1", "--master_port", str(p),
           "--redirects", redir, "--tee", redir, "--log_dir", os.path.join(w, "torchrun_logs"), "ddp.py"] + argv
    kw.setdefault("timeout", 90)
    C.append(Case(name, label, cmd, notes + " Launched with torchrun --nproc_per_node %d, MASTER_PORT %d." % (nproc, p),
                  G, cwd=w, env=job_env(), **kw))


def bashlaunch(name, label, argv, notes, nproc=2, **kw):
    w = workdir(neutral_dir(label, name), ("ddp.py",))
    p = port()
    script = ("#!/bin/bash\n# start one process per rank, like srun --ntasks=%d --kill-on-bad-exit\n"
              "export MASTER_ADDR=127.0.0.1 MASTER_PORT=%d WORLD_SIZE=%d\n"
              "declare -A rank_of\nfor r in $(seq 0 %d); do\n  RANK=$r LOCAL_RANK=$r python3 ddp.py %s &\n  rank_of[$!]=$r\ndone\n"
              "rc=0\nwhile [ ${#rank_of[@]} -gt 0 ]; do\n  wait -n -p done_pid; s=$?\n"
              "  r=${rank_of[$done_pid]}; unset \"rank_of[$done_pid]\"\n"
              "  if [ $s -ne 0 ] && [ $rc -eq 0 ]; then\n    rc=$s\n"
              "    echo \"launcher: rank $r (pid $done_pid) exited with status $s; terminating ${#rank_of[@]} remaining rank(s)\" >&2\n"
              "    [ ${#rank_of[@]} -gt 0 ] && sleep 3 && kill -TERM \"${!rank_of[@]}\" 2>/dev/null\n  fi\ndone\nexit $rc\n"
              % (nproc, p, nproc, nproc - 1, " ".join(argv)))
    with open(os.path.join(w, "launch.sh"), "w") as f:
        f.write(script)
    kw.setdefault("timeout", 90)
    C.append(Case(name, label, ["bash", "launch.sh"], notes + " %d ranks started by a bash launcher, MASTER_PORT %d." % (nproc, p),
                  G, cwd=w, env=job_env(), **kw))


def spawn(name, label, argv, notes, nproc=2, **kw):
    w = workdir(neutral_dir(label, name), ("ddp.py",))
    p = port()
    kw.setdefault("timeout", 90)
    C.append(Case(name, label, ["python3", "ddp.py", "--spawn", str(nproc), "--port", str(p)] + argv,
                  notes + " %d ranks via torch.multiprocessing.spawn, port %d." % (nproc, p), G, cwd=w, env=job_env(), **kw))


TO = r"Timed out waiting \d+ms|failed to pass monitoredBarrier|Socket Timeout|timed out|Timeout"
CLOSED = r"Connection closed by peer|Connection reset by peer|ProcessExitedException|exitcode"

# comm_timeout
torchrun("torchrun-late-rank", "comm_timeout", ["--fault", "late", "--delay", "9"],
         "rank 1 sleeps 9 s before its all-reduce; gloo timeout 5 s: rank 0 'Timed out waiting 5000ms for recv', rank 1 then 'Connection closed by peer'.",
         expect_exit=1, expect_re=r"Timed out waiting 5000ms")
torchrun("torchrun-stuck-rank", "comm_timeout", ["--fault", "stuck", "--at-step", "8"],
         "rank 1 blocks forever on a data queue; rank 0's all-reduce times out; torchrun SIGTERMs rank 1.",
         expect_exit=1, expect_re=r"Timed out waiting")
torchrun("torchrun-3ranks-late", "comm_timeout", ["--fault", "late", "--bad-rank", "2", "--delay", "9", "--timeout", "4"],
         "3 ranks, rank 2 is a straggler; 4 s gloo timeout.", nproc=3, expect_exit=1, expect_re=r"Timed out waiting")
torchrun("torchrun-monitored-barrier", "comm_timeout", ["--fault", "barrier", "--delay", "9", "--at-step", "3"],
         "dist.monitored_barrier(timeout=5s); rank 1 arrives 9 s late: 'Rank 1 failed to pass monitoredBarrier'.",
         expect_exit=1, expect_re=r"monitoredBarrier")
torchrun("torchrun-late-stdout-tee", "comm_timeout", ["--fault", "late", "--delay", "9", "--at-step", "2", "--no-ddp"],
         "explicit all_reduce loop, rank 1 late; torchrun --redirects 1 --tee 1 (stdout prefixed, stderr not).",
         redir="1", expect_exit=1, expect_re=r"Timed out waiting")
bashlaunch("bash-late-rank-allreduce", "comm_timeout", ["--fault", "late", "--delay", "9", "--no-ddp"],
           "explicit all_reduce loop; rank 1 late by 9 s, timeout 5 s.", expect_exit=1, expect_re=r"Timed out waiting")
bashlaunch("bash-monitored-barrier-4ranks", "comm_timeout", ["--fault", "barrier", "--bad-rank", "3", "--delay", "10", "--at-step", "2"],
           "4 ranks; rank 3 misses the monitored barrier.", nproc=4, expect_exit=1, expect_re=r"monitoredBarrier")
bashlaunch("bash-stuck-rank-3", "comm_timeout", ["--fault", "stuck", "--bad-rank", "2", "--at-step", "4", "--timeout", "6"],
           "3 ranks; rank 2 hangs; ranks 0 and 1 time out; the launcher then SIGTERMs the hung rank.",
           nproc=3, expect_exit="nonzero", expect_re=r"Timed out waiting")
spawn("spawn-late-rank", "comm_timeout", ["--fault", "late", "--delay", "9"],
      "mp.spawn, rank 1 late: ProcessRaisedException wrapping the gloo timeout.", expect_exit=1, expect_re=r"Timed out waiting")
C.append(Case("store-missing-rank", "comm_timeout",
              ["python3", "ddp.py", "--timeout", "6"],
              "WORLD_SIZE=2 but only rank 0 is started (the other node never came up): the TCPStore wait / rendezvous times out.",
              G, cwd=workdir(neutral_dir("comm_timeout", "store-missing-rank"), ("ddp.py",)),
              env=job_env({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port(), "RANK": 0, "WORLD_SIZE": 2}),
              expect_exit=1, expect_re=TO, timeout=60))
C.append(Case("client-cannot-reach-master", "comm_timeout",
              ["python3", "ddp.py", "--timeout", "6"],
              "rank 1 started while the master (rank 0) is not listening: the client socket retries until its timeout.",
              G, cwd=workdir(neutral_dir("comm_timeout", "client-cannot-reach-master"), ("ddp.py",)),
              env=job_env({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port(), "RANK": 1, "WORLD_SIZE": 2}),
              expect_exit=1, expect_re=TO, timeout=60))

# comm_error
torchrun("torchrun-peer-sigkilled", "comm_error", ["--fault", "sigkill", "--at-step", "6", "--timeout", "30"],
         "rank 1 is SIGKILLed mid-training (no OOM, no scheduler); rank 0's gloo pair sees the peer vanish ('Connection closed by peer'/'reset by peer').",
         expect_exit=1, expect_re=r"Connection (closed|reset) by peer|exitcode")
torchrun("torchrun-peer-exits", "comm_error", ["--fault", "exit", "--at-step", "4", "--timeout", "30", "--no-ddp"],
         "rank 1 disappears (os._exit) in the middle of an all_reduce loop; rank 0 gets a connection error.",
         expect_exit=1, expect_re=r"Connection (closed|reset) by peer|exitcode")
bashlaunch("bash-peer-killed", "comm_error", ["--fault", "sigkill", "--at-step", "5", "--timeout", "30"],
           "rank 1 SIGKILLed; rank 0 reports the closed connection.", expect_exit="nonzero", expect_re=r"Connection (closed|reset) by peer")
bashlaunch("bash-peer-killed-3ranks", "comm_error", ["--fault", "sigkill", "--bad-rank", "1", "--at-step", "3", "--timeout", "30", "--no-ddp"],
           "3 ranks, rank 1 SIGKILLed during all_reduce.", nproc=3, expect_exit="nonzero", expect_re=r"Connection (closed|reset) by peer")
torchrun("torchrun-3ranks-peer-sigkilled", "comm_error", ["--fault", "sigkill", "--bad-rank", "2", "--at-step", "4", "--timeout", "30", "--no-ddp"],
         "3 ranks; rank 2 is SIGKILLed in an all_reduce loop; the survivors' gloo pairs report the lost peer.", nproc=3,
         expect_exit=1, expect_re=r"Connection (closed|reset) by peer|exitcode")
spawn("spawn-peer-exits", "comm_error", ["--fault", "exit", "--at-step", "6", "--timeout", "30", "--no-ddp"],
      "mp.spawn; rank 1 vanishes (os._exit) mid all_reduce.", expect_exit=1, expect_re=r"Connection (closed|reset) by peer|terminated with exit code")
bashlaunch("bash-peer-exits-4ranks", "comm_error", ["--fault", "exit", "--bad-rank", "3", "--at-step", "3", "--timeout", "30"],
           "4 DDP ranks; rank 3 disappears (os._exit(1), no message); the others see the connection drop.", nproc=4,
           expect_exit="nonzero", expect_re=r"Connection (closed|reset) by peer")
spawn("spawn-peer-killed", "comm_error", ["--fault", "sigkill", "--at-step", "5", "--timeout", "30"],
      "mp.spawn, rank 1 SIGKILLed.", expect_exit=1, expect_re=r"Connection (closed|reset) by peer|terminated with signal SIGKILL")


def port_clash():
    import socket
    p = port()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", p))
    s.listen(1)
    return p, s


_clash_port, _clash_sock = port_clash()
C.append(Case("master-port-in-use", "comm_error", ["python3", "ddp.py", "--timeout", "6"],
              "MASTER_PORT already taken by another process: rank 0's TCPStore server cannot bind (errno 98).",
              G, cwd=workdir(neutral_dir("comm_error", "master-port-in-use"), ("ddp.py",)),
              env=job_env({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": _clash_port, "RANK": 0, "WORLD_SIZE": 2}),
              expect_exit=1, expect_re=r"Address already in use|errno: 98", timeout=60))

# root cause elsewhere
torchrun("torchrun-rank-nan-peer-times-out", "numerical_divergence", ["--fault", "nan", "--at-step", "7", "--timeout", "5"],
         "rank 1's loss becomes NaN and it raises; rank 0 then fails in the collective (timeout or closed connection). Root cause: NaN.",
         expect_exit=1, expect_re=r"loss is nan")
bashlaunch("bash-rank-nan", "numerical_divergence", ["--fault", "nan", "--at-step", "4", "--no-ddp"],
           "rank 1 NaN loss raises; rank 0's all_reduce fails afterwards.", expect_exit="nonzero", expect_re=r"loss is nan")
torchrun("torchrun-rank-keyerror", "script_error", ["--fault", "error", "--at-step", "3"],
         "rank 1 raises KeyError on a config key; rank 0 then sees the connection close.", expect_exit=1, expect_re=r"KeyError: 'warmup'")
torchrun("torchrun-success", "success", ["--steps", "20"], "clean 2-rank DDP run.", expect_exit=0)
bashlaunch("bash-success-3ranks", "success", ["--steps", "15", "--no-ddp"], "clean 3-rank all_reduce run.", nproc=3, expect_exit=0)
torchrun("torchrun-ctrl-c", "cancelled", ["--steps", "100000", "--timeout", "30"],
         "a person presses Ctrl-C: SIGINT to the whole foreground process group (torchrun and ranks).",
         send=[(S.SIGINT, r"step 10 loss", "group")], expect_exit="nonzero", expect_signal=None,
         post=lambda r: True)
torchrun("torchrun-sigterm", "cancelled", ["--steps", "100000", "--timeout", "30"],
         "kill <torchrun pid> (SIGTERM to the launcher only): 'SignalException: Process N got signal: 15'.",
         send=[(S.SIGTERM, r"step 10 loss", "pid")], expect_exit="nonzero", expect_re=r"got signal: 15")

# the launcher itself, run without --redirects: crashes in this torch build
w0 = workdir(neutral_dir("script_error", "torchrun-launcher-bug"), ("ddp.py",))
C.append(Case("torchrun-launcher-bug", "script_error",
              ["torchrun", "--nproc_per_node", "2", "--master_port", str(port()), "ddp.py"],
              "plain `torchrun --nproc_per_node 2 ddp.py` with Debian's torch 1.13 on Python 3.11: torchrun itself raises AttributeError in elastic/multiprocessing/api.py to_map (Std flag iteration changed in 3.11).",
              G, cwd=w0, env=job_env(), expect_exit=1, expect_re=r"AttributeError: 'NoneType' object has no attribute 'get'"))

# host OOM of a rank inside a memory cgroup
torchrun("torchrun-rank-oom-killed", "host_oom", ["--fault", "grow", "--at-step", "2", "--grow-mb", "48", "--steps", "1000", "--timeout", "30"],
         "rank 1 keeps 48 MB per step; the job's memory cgroup OOM killer SIGKILLs it; torchrun reports exitcode -9; peers see the connection close.",
         expect_exit=1, expect_re=r"-9|SIGKILL|Connection", kmsg=True, mem_limit="1200M")
bashlaunch("bash-rank-oom-killed", "host_oom", ["--fault", "grow", "--at-step", "2", "--grow-mb", "48", "--steps", "1000", "--timeout", "30"],
           "rank 1 OOM-killed in the job's memory cgroup; rank 0 sees the connection close.",
           expect_exit="nonzero", kmsg=True, mem_limit="1000M")

if __name__ == "__main__":
    try:
        generator_main(C, G)
    finally:
        _clash_sock.close()
