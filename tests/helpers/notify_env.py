"""Shared set-up for test_notify*.py: the binary, a clean environment, parsing stored mail."""
import email
import email.policy
import os
import subprocess
import tempfile
import time

BIN = os.environ.get("GPUALERT_BIN", "")
if not BIN or not os.access(BIN, os.X_OK):
    # Not a skip: a missing binary must fail the suite, not pass it silently.
    raise RuntimeError(f"GPUALERT_BIN must name the built gpualert binary (got {BIN!r})")


class Env:
    """A private HOME/XDG/state directory per test, and a runner for the binary."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gpualert-notify-")
        self.root = self.tmp.name
        self.state = os.path.join(self.root, "state")
        self.vars = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.root,
            "XDG_CONFIG_HOME": os.path.join(self.root, "config"),
            "XDG_STATE_HOME": os.path.join(self.root, "xdgstate"),
            "GPUALERT_STATE_DIR": self.state,
            "GPUALERT_FROM": "gpualert@test.invalid",
            "GPUALERT_TO": "alice@example.com",
            "GPUALERT_NOTIFY_TIMEOUT": "10s",
        }

    def run(self, *args, timeout=30, **extra_env):
        env = dict(self.vars)
        for k, v in extra_env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        start = time.monotonic()
        p = subprocess.run([BIN, *args], env=env, capture_output=True, text=True, timeout=timeout)
        p.elapsed = time.monotonic() - start
        return p

    def outbox_files(self, suffix):
        d = os.path.join(self.state, "outbox", "new")
        if not os.path.isdir(d):
            return []
        return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(suffix))

    def cleanup(self):
        self.tmp.cleanup()


def parse(raw):
    return email.message_from_bytes(raw, policy=email.policy.default)


def text_parts(msg):
    """The text/plain and text/html bodies, decoded."""
    plain = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")
    html = msg.get_body(("html",)).get_content().replace("\r\n", "\n")
    return plain, html
