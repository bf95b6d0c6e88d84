#!/usr/bin/python3
"""native_crash: real segfaults, aborts and heap corruption in native code
(C/C++ programs compiled at generation time with cc/c++, ctypes from a torch
training job, os.abort, Py_FatalError, a DataLoader worker that segfaults)."""
import os
import shutil
import subprocess
import tempfile
from capture import Case, pycase, shcase, job_env, workdir, neutral_dir, generator_main, JOBS

G = "gen_native_crash.py"
L = "native_crash"
C = []
bindir = os.path.join(tempfile.gettempdir(), "gpualert-jobs", ".native")
os.makedirs(bindir, exist_ok=True)
built = {}
for src, out, comp in [("crashers.c", "preproc", "cc"), ("terminate.cpp", "decoder", "c++")]:
    r = subprocess.run([comp, "-O0", "-g", "-pthread", "-o", os.path.join(bindir, out), os.path.join(JOBS, src)],
                       capture_output=True, text=True)
    built[out] = r.returncode == 0
    if r.returncode:
        print("build of %s failed: %s" % (src, r.stderr))


def native(name, prog, mode, notes, via_shell=False, **kw):
    w = workdir(neutral_dir(L, name))
    shutil.copy(os.path.join(bindir, prog), os.path.join(w, prog))
    if via_shell:
        script = "#!/bin/bash\necho \"job $(hostname) starting\"\n./%s %s\necho \"step finished with status $?\"\n" % (prog, mode)
        with open(os.path.join(w, "job.sh"), "w") as f:
            f.write(script)
        cmd = ["bash", "job.sh"]
    else:
        cmd = ["./" + prog, mode]
    C.append(Case(name, L, cmd, notes, G, cwd=w, env=job_env(), kmsg=True, **kw))


native("c-segv-direct", "preproc", "segv", "C program writes through a NULL pointer: SIGSEGV (kernel segfault line in kernel.log).", expect_signal="SIGSEGV")
native("c-segv-bash", "preproc", "segv", "same segfault under a bash job script: bash prints 'Segmentation fault'.", via_shell=True, expect_exit=0, expect_re=r"Segmentation fault")
native("c-double-free", "preproc", "double_free", "glibc detects a double free and aborts.", expect_signal="SIGABRT", expect_re=r"double free")
native("c-double-free-bash", "preproc", "double_free", "double free under a bash job script ('Aborted').", via_shell=True, expect_exit=0, expect_re=r"double free")
native("c-heap-overflow", "preproc", "heap_overflow", "heap buffer overflow corrupts a chunk header, then free() (glibc abort or SIGSEGV).", expect_signal=["SIGABRT", "SIGSEGV"])
native("c-fpe", "preproc", "fpe", "integer division by zero: SIGFPE.", via_shell=True, expect_exit=0, expect_re=r"Floating point exception")
native("c-illegal-instruction", "preproc", "ill", "__builtin_trap (ud2): SIGILL.", expect_signal="SIGILL")
native("c-stack-overflow", "preproc", "stack", "unbounded recursion overflows the stack: SIGSEGV.", via_shell=True, expect_exit=0, expect_re=r"Segmentation fault")
native("c-assert-abort", "preproc", "abort_assert", "C assert-style message then abort().", expect_signal="SIGABRT")
native("cpp-terminate-thread", "decoder", "thread", "C++ exception escapes a std::thread: 'terminate called after throwing an instance of std::runtime_error'.", expect_signal="SIGABRT", expect_re=r"terminate called after throwing")
native("cpp-terminate-noexcept", "decoder", "noexcept", "exception thrown through a noexcept lambda: terminate.", via_shell=True, expect_exit=0, expect_re=r"terminate called")
native("cpp-bad-alloc", "decoder", "bad_alloc", "vector::reserve(2^62) throws std::length_error/bad_alloc uncaught: terminate.", expect_signal="SIGABRT", expect_re=r"terminate called")
native("cpp-terminate-joinable", "decoder", "join", "std::thread destroyed while joinable: 'terminate called without an active exception'.", expect_signal="SIGABRT", expect_re=r"terminate called without")

def py(name, mode, notes, env_extra=None, argv_pre=(), **kw):
    C.append(pycase(name, L, list(argv_pre) + ["pycrash.py", mode], notes, G, files=("pycrash.py",),
                    env_extra=env_extra, kmsg=True, **kw))

py("py-ctypes-null-silent", "ctypes_null", "torch job reads address 0 via ctypes: SIGSEGV with no Python message.", expect_signal="SIGSEGV")
py("py-ctypes-null-faulthandler", "ctypes_null", "same with PYTHONFAULTHANDLER=1: 'Fatal Python error: Segmentation fault' and the Python stack.",
   env_extra={"PYTHONFAULTHANDLER": "1"}, expect_signal="SIGSEGV", expect_re=r"Fatal Python error: Segmentation fault")
py("py-ctypes-memset-X-faulthandler", "ctypes_memset", "ctypes.memset to a bad address under python3 -X faulthandler.",
   argv_pre=("-X", "faulthandler"), expect_signal="SIGSEGV", expect_re=r"Fatal Python error")
py("py-os-abort", "abort", "os.abort() after training steps: SIGABRT, no message.", expect_signal="SIGABRT")
py("py-os-abort-faulthandler", "abort", "os.abort() with faulthandler: 'Fatal Python error: Aborted'.",
   env_extra={"PYTHONFAULTHANDLER": "1"}, expect_signal="SIGABRT", expect_re=r"Fatal Python error: Aborted")
py("py-fatal-error", "fatal", "Py_FatalError called from an extension: 'Fatal Python error: ...' then abort.",
   expect_signal="SIGABRT", expect_re=r"Fatal Python error")
py("py-deep-recursion", "recursion", "recursion limit raised, str() of a 10^6-deep nested list overflows the C stack: SIGSEGV (faulthandler on).",
   env_extra={"PYTHONFAULTHANDLER": "1"}, expect_signal="SIGSEGV", timeout=120)
py("py-invalid-free", "free_bad", "libc free() of an interior pointer of a ctypes buffer (glibc abort or SIGSEGV).",
   expect_signal=["SIGABRT", "SIGSEGV"])
py("py-loader-worker-segv", "loader_worker_segv", "a DataLoader worker segfaults in a decoder: 'DataLoader worker (pid N) is killed by signal: Segmentation fault.'",
   expect_exit=1, expect_re=r"killed by signal: Segmentation fault|exited unexpectedly|Unexpected segmentation fault encountered in worker")
C.append(shcase("py-segv-bash-core", L,
    "#!/bin/bash\nulimit -c 0\necho \"launching training\"\npython3 pycrash.py ctypes_null\nstatus=$?\necho \"training exited: $status\"\nexit $status\n",
    "bash job script; python segfaults in ctypes; bash prints the 'Segmentation fault' job-status line and exits 139.",
    G, files=("pycrash.py",), kmsg=True, expect_exit=139, expect_re=r"Segmentation fault"))

if __name__ == "__main__":
    try:
        generator_main(C, G)
    finally:
        shutil.rmtree(bindir, ignore_errors=True)
