"""Shared helpers for the integration tests: run the real gpualert binary.

Tests are plain unittest; ctest runs each test_*.py with GPUALERT_BIN set to the
built binary. Nothing here fakes processes, signals or files.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import warnings

warnings.simplefilter("ignore", ResourceWarning)

BIN = os.environ.get("GPUALERT_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "gpualert")
BIN = os.path.abspath(BIN)
PY = "/usr/bin/python3"


def clean_env(**extra):
    """The environment of a user's cluster: no PYTHONUNBUFFERED, no gpualert config."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONUNBUFFERED" and not k.startswith("GPUALERT_")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


class RunTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpualert-test-")
        self.logs = os.path.join(self.tmp, "logs")
        self.state = os.path.join(self.tmp, "state")
        self.env = clean_env(GPUALERT_STATE_DIR=self.state, XDG_CONFIG_HOME=os.path.join(self.tmp, "cfg"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_wrapped(self, args, opts=(), timeout=60, **kw):
        """Runs gpualert run [opts] -- args; returns (CompletedProcess, run_dir or None)."""
        cmd = [BIN, "run", "--log-dir", self.logs, "--notify", "never", *opts, "--", *args]
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=kw.pop("env", self.env),
                           cwd=kw.pop("cwd", self.tmp), **kw)
        return p, self.only_run_dir()

    def only_run_dir(self, base=None):
        """The run directory under base, or the newest one; tests that run several
        jobs rename the ones they are done with to NAME.done, which is skipped
        (names sort by pid, which says nothing about order)."""
        logs = glob.glob(os.path.join(base or self.logs, "*", "output.log"))
        dirs = [os.path.dirname(p) for p in logs if not os.path.dirname(p).endswith(".done")]
        return max(dirs, key=lambda d: os.stat(d).st_mtime_ns) if dirs else None

    @staticmethod
    def job_output(run_dir):
        """output.log without the wrapper's marked header and footer lines."""
        with open(os.path.join(run_dir, "output.log"), "rb") as f:
            data = f.read()
        begin = b"#gpualert# ---- job output begins ----\n"
        end = b"#gpualert# ---- job output ends ----\n"
        start = data.index(begin) + len(begin)
        stop = data.rfind(end)
        body = data[start:stop if stop >= 0 else len(data)]
        return body

    @staticmethod
    def report(run_dir):
        with open(os.path.join(run_dir, "report.json")) as f:
            return json.load(f)


def write_script(directory, name, text, mode=0o755):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def wait_for(predicate, timeout=10.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
