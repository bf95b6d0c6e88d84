"""run inside a real memory cgroup with a limit: the kernel's OOM killer kills the job,
and the cgroup's oom_kill counter, read before and after, says so in the report.

ctest runs this file alone (RUN_SERIAL, tests/CMakeLists.txt): an OOM kill in a child
of the cgroup the other tests share is counted in theirs too (the counters are
hierarchical), and would make any run beside it read host_oom."""
import os
import time
import unittest

from harness import PY, RunTestCase, write_script

GROW = """
import time
chunks = []
for step in range(1000):
    chunks.append(bytearray(8 << 20))  # touched: a real 8 MiB each
    print(f"step {step} | loss 0.5 | held {8 * len(chunks)} MiB", flush=True)
    time.sleep(0.005)
print("never reached", flush=True)
"""


def memory_cgroup_for_test(name, limit_bytes):
    """A child memory cgroup (v1 or v2) limited to limit_bytes, or None where this
    process may not make one (not root, no memory controller)."""
    with open("/proc/self/cgroup") as f:
        lines = [l.rstrip("\n").split(":", 2) for l in f if l.count(":") >= 2]
    candidates = []
    for _, ctrls, path in lines:
        if "memory" in ctrls.split(","):
            candidates.append(("/sys/fs/cgroup/memory" + path, "memory.limit_in_bytes"))
        elif ctrls == "":
            candidates.append(("/sys/fs/cgroup" + path, "memory.max"))
    for base, limit_file in candidates:
        if not os.path.exists(os.path.join(base, limit_file)) and limit_file == "memory.max":
            # v2: the memory controller must be enabled for the children of base.
            try:
                with open(os.path.join(base, "cgroup.subtree_control")) as f:
                    if "memory" not in f.read().split():
                        continue
            except OSError:
                continue
        cg = os.path.join(base, name)
        try:
            os.makedirs(cg, exist_ok=True)
            with open(os.path.join(cg, limit_file), "w") as f:
                f.write(str(limit_bytes))
            return cg
        except OSError:
            try:
                os.rmdir(cg)
            except OSError:
                pass
    return None


class MemoryCgroup(RunTestCase):
    def test_a_real_memory_cgroup_limit_is_host_oom_from_the_counter(self):
        # gpualert and its job in a memory cgroup limited to 128 MiB: the kernel's OOM
        # killer kills the growing job (SIGKILL, passed on as is), and the cgroup's
        # oom_kill counter, read before and after the job, says why.
        cg = memory_cgroup_for_test("gpualert-test-oom-%d" % os.getpid(), 128 << 20)
        if cg is None:
            self.skipTest("no memory cgroup can be made here (needs root and a memory controller)")
        try:
            job = write_script(self.tmp, "grow.py", GROW)

            def enter():
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))

            p, run_dir = self.run_wrapped([PY, job], preexec_fn=enter)
        finally:
            for _ in range(100):
                try:
                    os.rmdir(cg)
                    break
                except OSError:
                    time.sleep(0.05)
        self.assertEqual(p.returncode, -9, p.stderr)
        rep = self.report(run_dir)
        self.assertEqual(rep["signal"], "SIGKILL")
        self.assertGreaterEqual(rep.get("cgroup_oom_kills", 0), 1, rep)
        self.assertEqual(rep["label"], "host_oom")
        self.assertIn(rep["rule"], ("host-oom-cgroup", "host-oom-killer"))
        self.assertIn(b"step 1 |", self.job_output(run_dir))
        if rep["sources"]["kernel_log"].startswith("read"):
            # The kernel's own lines about the kill, from /dev/kmsg during the run.
            with open(os.path.join(run_dir, "kernel.log")) as f:
                self.assertIn("Killed process", f.read())


if __name__ == "__main__":
    unittest.main()
