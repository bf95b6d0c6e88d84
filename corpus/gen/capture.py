#!/usr/bin/python3
"""Run one job for real and store it as a labelled corpus case.

The job's stdout and stderr share ONE pipe; every byte read from it is copied
to output.log unchanged, in arrival order.  The exit status is recorded as the
corpus format asks (exit_code when the process exited, signal name when a
signal killed it).  Optionally:

  * kernel messages that appear in /dev/kmsg while the job runs are read and
    the OOM-killer / NVRM / segfault records that belong to this job are
    written to kernel.log;
  * the job runs inside a fresh cgroup-v1 memory cgroup with a limit;
  * a "controller" sends signals to the job (after a delay, or when a line
    matching a pattern has been printed) -- this is how Ctrl-C, kill and
    scheduler cancellations are reproduced.

A case is only written when the failure really happened as intended: the
generator states the expected exit status / signal and a pattern that must be
in the log; otherwise nothing is written and the run is reported as a miss.

Library use:   capture.run_case(Case(...))
Command line:  capture.py --case DIR --label L --notes TEXT [--expect-signal S]
                          [--expect-exit N] [--expect-re RE] [--kmsg]
                          [--mem-limit 256M] [--timeout S] -- CMD ...
"""
import argparse
import datetime
import errno
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.dirname(HERE)
OUT_ROOT = os.path.join(CORPUS, "reproduced")
JOBS = os.path.join(HERE, "jobs")
# Where the jobs run: a neutral scratch tree so that tracebacks show
# /tmp/gpualert-jobs/<case>/train.py rather than a checkout path.
RUN_ROOT = os.path.join(tempfile.gettempdir(), "gpualert-jobs")
BIN_DIR = os.path.join(RUN_ROOT, ".bin")
PYTHON = "/usr/bin/python3"  # the interpreter that has torch (Debian's)

KMSG_KEEP = re.compile(
    r"invoked oom-killer|oom-kill:|Out of memory|Memory cgroup out of memory|"
    r"Killed process|oom_reaper|NVRM|segfault at|general protection|trap |"
    r"memory: usage|memory\+swap: usage|Memory cgroup stats|Tasks state|"
    r"^\[\s*\d+\]|^\s*\[\s*pid\s*\]")

_port_lock = threading.Lock()


# --------------------------------------------------------------------------
# helpers used by generators
# --------------------------------------------------------------------------

def setup_bin():
    """A PATH directory where `python3` / `torchrun` are the torch-enabled ones."""
    os.makedirs(BIN_DIR, exist_ok=True)
    p = os.path.join(BIN_DIR, "python3")
    if not os.path.lexists(p):
        os.symlink(PYTHON, p)
    q = os.path.join(BIN_DIR, "python")
    if not os.path.lexists(q):
        os.symlink(PYTHON, q)
    return BIN_DIR


def job_env(extra=None, unbuffered=False):
    env = dict(os.environ)
    if not unbuffered:
        env.pop("PYTHONUNBUFFERED", None)
    env["PATH"] = setup_bin() + ":" + env.get("PATH", "/usr/bin:/bin")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if extra:
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
    return env


def workdir(name, files=()):
    """Fresh job directory with copies of the named job scripts."""
    d = os.path.join(RUN_ROOT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in files:
        shutil.copy(os.path.join(JOBS, f), os.path.join(d, os.path.basename(f)))
    return d


def free_port(base):
    """A free TCP port on 127.0.0.1 at or above base."""
    import socket
    with _port_lock:
        for p in range(base, base + 2000):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p))
                s.close()
                return p
            except OSError:
                s.close()
    raise RuntimeError("no free port")


def mem_cgroup_base():
    """This process's own cgroup-v1 memory directory (children go under it)."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3 and "memory" in parts[1].split(","):
                    base = "/sys/fs/cgroup/memory" + parts[2]
                    if os.path.isdir(base):
                        return base
    except OSError:
        pass
    if os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        return "/sys/fs/cgroup/memory"
    return None


def parse_size(s):
    s = str(s).strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


# --------------------------------------------------------------------------
# kernel log
# --------------------------------------------------------------------------

class KmsgReader:
    """Reads records that appear in /dev/kmsg after start()."""

    def __init__(self):
        self.fd = None
        self.records = []  # (usec, text)

    def start(self):
        try:
            self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError as e:
            sys.stderr.write("capture: /dev/kmsg not readable (%s)\n" % e)
            self.fd = None
        return self.fd is not None

    def drain(self):
        if self.fd is None:
            return
        while True:
            try:
                rec = os.read(self.fd, 8192)
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno == errno.EPIPE:  # overwritten records; go on
                    continue
                return
            if not rec:
                return
            txt = rec.decode("utf-8", "replace")
            head, _, msg = txt.partition(";")
            f = head.split(",")
            try:
                usec = int(f[2])
            except (IndexError, ValueError):
                usec = 0
            # continuation lines ("\n KEY=value") are dropped
            msg = msg.split("\n", 1)[0]
            self.records.append((usec, msg))

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def relevant(self, pids, cg_name):
        """dmesg-style lines that belong to this job.

        An OOM report is a block from '... invoked oom-killer' to the
        'Killed process' / 'oom_reaper' lines; it is kept when it names the
        job's memory cgroup or one of its pids.  Segfault lines are kept when
        they name a pid of the job."""
        out = []
        blk = None
        pid_re = re.compile(r"\[(\d+)\]|pid[= ](\d+)|process (\d+)|PID: (\d+)")

        def mine(lines):
            for _, m in lines:
                if cg_name and cg_name in m:
                    return True
                for g in pid_re.findall(m):
                    for x in g:
                        if x and int(x) in pids:
                            return True
            return False

        for usec, msg in self.records:
            if "invoked oom-killer" in msg:
                if blk:
                    if mine(blk):
                        out.extend(blk)
                blk = [(usec, msg)]
                continue
            if blk is not None:
                blk.append((usec, msg))
                if "Killed process" in msg:
                    if mine(blk):
                        out.extend(blk)
                    blk = None
                continue
            if KMSG_KEEP.search(msg) and mine([(usec, msg)]):
                out.append((usec, msg))
        if blk and mine(blk):
            out.extend(blk)
        # the full OOM dump has a call trace etc.; keep the lines an operator
        # greps for, like `dmesg | grep -i -e oom -e killed` would.
        lines = []
        for usec, msg in out:
            if KMSG_KEEP.search(msg):
                lines.append("[%5d.%06d] %s" % (usec // 1000000, usec % 1000000, msg))
        return lines


# --------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------

def _descendants(root, seen):
    """Add to `seen` every live process whose ancestry reaches root."""
    parent = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
            ppid = int(s[s.rfind(")") + 2:].split()[1])
            parent[int(d)] = ppid
        except (OSError, ValueError, IndexError):
            pass
    for p in parent:
        q, n = p, 0
        while q and n < 50:
            if q == root or q in seen:
                seen.add(p)
                break
            q = parent.get(q)
            n += 1


class Case:
    def __init__(self, name, label, cmd, notes, generator, cwd=None, env=None,
                 expect_exit=None, expect_signal=None, expect_re=None,
                 kmsg=False, mem_limit=None, timeout=120, send=(),
                 shell=False, stdin_tty=False, extra=None, post=None):
        self.name = name            # variant name (directory under the label)
        self.label = label
        self.cmd = cmd
        self.notes = notes
        self.generator = generator
        self.cwd = cwd
        self.env = env
        self.expect_exit = expect_exit      # int, list of ints, or "nonzero"
        self.expect_signal = expect_signal  # "SIGKILL", ...
        self.expect_re = expect_re          # regex (bytes or str) or list
        self.kmsg = kmsg
        self.mem_limit = mem_limit
        self.timeout = timeout
        # (signal, when, target): when = seconds (float) or regex string that
        # must appear in the output; target = "pid" or "group"
        self.send = list(send)
        self.shell = shell
        self.extra = extra or {}
        self.post = post  # callable(result) -> extra notes / checks


class Result:
    # Host facts a run may not have (gen_slurm's results never read /dev/kmsg).
    kernel_log_read = False
    oom_kill = None


def neutral_dir(label, name):
    """Job directory name that does not give the label away in tracebacks."""
    import hashlib
    return "run-" + hashlib.sha1(("%s/%s" % (label, name)).encode()).hexdigest()[:8]


def pycase(name, label, argv, notes, generator, files=("train.py",), env_extra=None,
           unbuffered=False, **kw):
    """A case that runs `python3 <argv>` in a fresh job directory."""
    w = workdir(neutral_dir(label, name), files)
    return Case(name, label, ["python3"] + list(argv), notes, generator, cwd=w,
                env=job_env(env_extra, unbuffered=unbuffered), **kw)


def shcase(name, label, script, notes, generator, files=("train.py",), env_extra=None,
           script_name="run.sh", unbuffered=False, **kw):
    """A case whose job is a bash script (like an sbatch script) written to the job dir."""
    w = workdir(neutral_dir(label, name), files)
    with open(os.path.join(w, script_name), "w") as f:
        f.write(script)
    os.chmod(os.path.join(w, script_name), 0o755)
    return Case(name, label, ["bash", script_name], notes, generator, cwd=w,
                env=job_env(env_extra, unbuffered=unbuffered), **kw)


def generator_main(cases, generator, jobs=2):
    """Entry point used by the gen_*.py scripts: run, print, exit 0 if any written."""
    if sys.argv[1:] == ["--list"]:
        for c in cases:
            print("%s/%s" % (c.label, c.name))
        sys.exit(0)
    only = sys.argv[1:]
    if only:
        cases = [c for c in cases if c.name in only]
    t = time.time()
    ok, bad = run_all(cases, jobs=jobs)
    print("%s: %d written, %d missed (%s) in %.0fs" % (generator, len(ok), len(bad),
          ", ".join(bad) or "-", time.time() - t), flush=True)
    sys.exit(0 if ok else 1)


def read_chunk(fd, wait):
    """Up to 64 KiB from fd once it is readable within `wait` seconds; None if it
    was not, b"" at EOF."""
    r, _, _ = select.select([fd], [], [], wait)
    return os.read(fd, 65536) if r else None


def _run(case):
    env = case.env if case.env is not None else job_env()
    cg_dir = None
    cg_name = None
    base = None
    if case.mem_limit:
        base = mem_cgroup_base()
        if not base:
            raise RuntimeError("no cgroup-v1 memory controller")
        cg_name = "gpualert-case-%s-%d" % (re.sub(r"[^A-Za-z0-9]", "-", case.name), os.getpid())
        cg_dir = os.path.join(base, cg_name)
        if os.path.isdir(cg_dir):
            os.rmdir(cg_dir)
        os.mkdir(cg_dir)
        with open(os.path.join(cg_dir, "memory.limit_in_bytes"), "w") as f:
            f.write(str(parse_size(case.mem_limit)))
        try:
            with open(os.path.join(cg_dir, "memory.memsw.limit_in_bytes"), "w") as f:
                f.write(str(parse_size(case.mem_limit)))
        except OSError:
            pass

    km = KmsgReader() if case.kmsg else None
    if km:
        km.start()

    rfd, wfd = os.pipe()

    def preexec():
        os.setsid()
        if cg_dir:
            with open(os.path.join(cg_dir, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    t0 = time.time()
    proc = subprocess.Popen(case.cmd, shell=case.shell, cwd=case.cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=wfd, stderr=wfd,
                            preexec_fn=preexec, close_fds=True)
    os.close(wfd)
    pids = {proc.pid}
    out = bytearray()
    pending = list(case.send)
    sent = []
    timed_out = False
    eof = False
    last_scan = 0.0
    while True:
        now = time.time()
        if now - last_scan > 0.05:
            last_scan = now
            if proc.poll() is None:
                _descendants(proc.pid, pids)
        # controller
        for item in list(pending):
            sig, when, target = item
            fire = False
            if isinstance(when, (int, float)):
                fire = now - t0 >= when
            else:
                fire = re.search(when.encode() if isinstance(when, str) else when,
                                 bytes(out)) is not None
            if fire and proc.poll() is None:
                pending.remove(item)
                try:
                    if target == "group":
                        os.killpg(proc.pid, sig)
                    else:
                        os.kill(proc.pid, sig)
                    sent.append((signal.Signals(sig).name, round(now - t0, 2), target))
                except ProcessLookupError:
                    pass
        if now - t0 > case.timeout and proc.poll() is None:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if km:
            km.drain()
        if eof:
            if proc.poll() is not None:
                break
            time.sleep(0.02)
            continue
        chunk = read_chunk(rfd, 0.05)
        if chunk is None and proc.poll() is not None:
            # The job is gone; a grandchild may keep the pipe open: give it a
            # moment, then stop reading.
            chunk = b"" if time.time() - t0 > case.timeout else read_chunk(rfd, 2.0)
            if chunk is None:
                chunk = b""
        if chunk is not None:
            if chunk:
                out += chunk
            else:
                eof = True
    rc = proc.wait()
    elapsed = time.time() - t0
    # stragglers of the job (leftover workers, ranks): kill the session
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for p in list(pids):
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    os.close(rfd)

    res = Result()
    res.output = bytes(out)
    res.rc = rc
    res.elapsed = elapsed
    res.timed_out = timed_out
    res.sent = sent
    res.exit_code = rc if rc >= 0 else None
    res.signal = signal.Signals(-rc).name if rc < 0 else None
    res.kernel_lines = []
    res.oom_kill = None
    if cg_dir:
        try:
            with open(os.path.join(cg_dir, "memory.oom_control")) as f:
                for line in f:
                    if line.startswith("oom_kill "):
                        res.oom_kill = int(line.split()[1])
        except OSError:
            pass
    res.kernel_log_read = bool(km and km.fd is not None)
    if km:
        time.sleep(0.3)
        km.drain()
        km.close()
        res.kernel_lines = km.relevant(pids, cg_name)
    if cg_dir:
        for _ in range(50):
            try:
                os.rmdir(cg_dir)
                break
            except OSError:
                # move leftovers out and retry
                try:
                    with open(os.path.join(cg_dir, "cgroup.procs")) as f:
                        for p in f.read().split():
                            try:
                                os.kill(int(p), signal.SIGKILL)
                            except OSError:
                                pass
                except OSError:
                    pass
                time.sleep(0.1)
    return res


def _check(case, res):
    why = []
    if res.timed_out:
        why.append("safety timeout %ss hit" % case.timeout)
    if case.expect_signal is not None:
        sigs = case.expect_signal if isinstance(case.expect_signal, (list, tuple)) else [case.expect_signal]
        if res.signal not in sigs:
            why.append("expected signal %s, got exit=%s signal=%s" % (sigs, res.exit_code, res.signal))
    if case.expect_exit is not None:
        if case.expect_exit == "nonzero":
            ok = res.exit_code not in (None, 0)
        elif isinstance(case.expect_exit, (list, tuple)):
            ok = res.exit_code in case.expect_exit
        else:
            ok = res.exit_code == case.expect_exit
        if not ok:
            why.append("expected exit %s, got exit=%s signal=%s" % (case.expect_exit, res.exit_code, res.signal))
    pats = case.expect_re
    if pats is not None:
        if not isinstance(pats, (list, tuple)):
            pats = [pats]
        for p in pats:
            pb = p.encode() if isinstance(p, str) else p
            if not re.search(pb, res.output):
                why.append("pattern %r not in output" % p)
    return why


def run_case(case, quiet=False):
    """Run the case; write it when the intended failure really happened.

    Returns True when the case was written."""
    dest = os.path.join(OUT_ROOT, case.label, case.name)
    try:
        res = _run(case)
    except Exception as e:  # noqa: BLE001 -- one bad case must not stop a generator
        print("MISS %-22s %-34s error: %s" % (case.label, case.name, e), flush=True)
        return False
    why = _check(case, res)
    res.extra_notes = ""
    if not why and case.post:
        r = case.post(res)
        if r is False:
            why.append("post-check failed")
        elif isinstance(r, str):
            res.extra_notes = r
    if why:
        print("MISS %-22s %-34s %s" % (case.label, case.name, "; ".join(why)), flush=True)
        tail = res.output[-600:].decode("utf-8", "replace")
        print("     last output: " + tail.replace("\n", "\n     "), flush=True)
        return False
    write_case(case, res, quiet)
    return True


def write_case(case, res, quiet=False):
    """Write res (output, exit_code/signal, kernel_lines, ...) as corpus case."""
    dest = os.path.join(OUT_ROOT, case.label, case.name)
    extra_notes = getattr(res, "extra_notes", "")
    notes = case.notes
    if res.sent:
        notes += " Controller sent: " + ", ".join(
            "%s to the %s at %.1fs" % (s, "process group" if t == "group" else "job process", w)
            for s, w, t in res.sent) + "."
    if case.mem_limit:
        notes += " Memory cgroup (v1) limit %s; oom_kill counter after the run: %s." % (
            case.mem_limit, res.oom_kill)
    if case.kmsg:
        notes += " kernel.log: %d line(s) from /dev/kmsg during the run." % len(res.kernel_lines)
    if extra_notes:
        notes += " " + extra_notes
    meta = {
        "label": case.label,
        "exit_code": res.exit_code,
        "signal": res.signal,
        "source": "reproduced-cpu",
        "notes": notes.strip(),
        "generator": case.generator,
        "produced": datetime.date.today().isoformat(),
        "duration_s": round(res.elapsed, 1),
    }
    # The host facts a wrapped run would have had: whether the kernel log could be
    # read (empty or not), and the memory cgroup's oom_kill counter when there was one.
    if res.kernel_log_read:
        meta["kernel_log_read"] = True
    if res.oom_kill is not None:
        meta["cgroup_oom_kills"] = res.oom_kill
    meta.update(case.extra)
    tmp = dest + ".tmp-%d" % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "output.log"), "wb") as f:
        f.write(res.output)
    if res.kernel_lines:
        with open(os.path.join(tmp, "kernel.log"), "w") as f:
            f.write("\n".join(res.kernel_lines) + "\n")
    with open(os.path.join(tmp, "case.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    if not quiet:
        st = res.signal or "exit %s" % res.exit_code
        print("ok   %-22s %-34s %-10s %5.1fs %6dB%s" % (
            case.label, case.name, st, res.elapsed, len(res.output),
            " +kernel.log" if res.kernel_lines else ""), flush=True)


def run_all(cases, jobs=1):
    """Run cases (in `jobs` threads); returns (written, missed)."""
    ok = []
    bad = []
    lock = threading.Lock()
    it = iter(cases)

    def worker():
        while True:
            with lock:
                c = next(it, None)
            if c is None:
                return
            good = run_case(c)
            with lock:
                (ok if good else bad).append(c.name)

    ths = [threading.Thread(target=worker) for _ in range(max(1, jobs))]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return ok, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", required=True, help="variant name (dir under reproduced/<label>/)")
    ap.add_argument("--label", required=True)
    ap.add_argument("--notes", required=True)
    ap.add_argument("--generator", default="capture.py")
    ap.add_argument("--cwd")
    ap.add_argument("--expect-exit")
    ap.add_argument("--expect-signal")
    ap.add_argument("--expect-re", action="append")
    ap.add_argument("--kmsg", action="store_true")
    ap.add_argument("--mem-limit")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--unbuffered", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    ee = a.expect_exit
    if ee is not None and ee != "nonzero":
        ee = int(ee)
    c = Case(a.case, a.label, cmd, a.notes, a.generator, cwd=a.cwd,
             env=job_env(unbuffered=a.unbuffered), expect_exit=ee,
             expect_signal=a.expect_signal, expect_re=a.expect_re, kmsg=a.kmsg,
             mem_limit=a.mem_limit, timeout=a.timeout)
    sys.exit(0 if run_case(c) else 1)


if __name__ == "__main__":
    main()
