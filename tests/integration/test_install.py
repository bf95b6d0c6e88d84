"""`cmake --install` into a staging DESTDIR: the programs side by side, the man pages,
and an installed gpualert that runs a job and finds its helper. The examples that the
man pages give (a rules file, a configuration file) are checked with the installed
binary, so the documentation can't drift from what the program accepts."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, clean_env

BUILD_DIR = os.path.dirname(BIN)
SOURCE_DIR = os.environ.get("GPUALERT_SOURCE_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..")
PREFIX = "/opt/gpualert-test"
MAN_PAGES = ["man1/gpualert.1", "man1/gpualert-run.1", "man5/gpualert.toml.5",
             "man5/gpualert-rules.5"]


def code_blocks(markdown_path, lang=""):
    with open(markdown_path, encoding="utf-8") as f:
        return re.findall(r"^```" + lang + r"\n(.*?)^```$", f.read(), flags=re.S | re.M)


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpualert-install-")
        cls.destdir = os.path.join(cls.tmp, "stage")
        env = dict(os.environ, DESTDIR=cls.destdir)
        cls.install = subprocess.run(
            ["cmake", "--install", BUILD_DIR, "--prefix", PREFIX],
            capture_output=True, text=True, env=env, timeout=120)
        cls.root = cls.destdir + PREFIX
        cls.gpualert = os.path.join(cls.root, "bin", "gpualert")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.install.returncode, 0, self.install.stdout + self.install.stderr)
        self.work = tempfile.mkdtemp(dir=self.tmp)
        self.env = clean_env(GPUALERT_STATE_DIR=os.path.join(self.work, "state"),
                             XDG_CONFIG_HOME=os.path.join(self.work, "cfg"),
                             XDG_CACHE_HOME=os.path.join(self.work, "cache"))

    def test_both_programs_side_by_side(self):
        for name in ("gpualert", "gpualert-notify", "gpualert-gpu", "gpualert-compile"):
            path = os.path.join(self.root, "bin", name)
            self.assertTrue(os.access(path, os.X_OK), path)
        # Nothing is written outside DESTDIR's prefix.
        self.assertEqual(os.listdir(self.destdir), [PREFIX.strip("/").split("/")[0]])

    def test_installed_binary_runs_a_job(self):
        logs = os.path.join(self.work, "logs")
        p = subprocess.run([self.gpualert, "run", "--log-dir", logs, "--notify", "never", "--",
                            "/bin/sh", "-c", "echo 'OSError: [Errno 28] No space left on device'; exit 3"],
                           capture_output=True, text=True, env=self.env, cwd=self.work, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        (run_dir,) = os.listdir(logs)
        with open(os.path.join(logs, run_dir, "report.json")) as f:
            report = json.load(f)
        self.assertEqual(report["exit_code"], 3)
        self.assertEqual(report["label"], "disk_full")
        # Its cache was empty: the rules were compiled by the installed gpualert-compile.
        cache = os.path.join(self.work, "cache", "gpualert")
        self.assertTrue(any(n.endswith(".db") for n in os.listdir(cache)), os.listdir(cache))

    def test_installed_binary_finds_its_helper(self):
        # outbox runs in gpualert-notify: found beside the installed gpualert.
        p = subprocess.run([self.gpualert, "outbox", "list"], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_man_pages_installed_and_render(self):
        if not shutil.which("pandoc"):
            self.skipTest("pandoc is not installed: the build leaves the man pages out")
        for page in MAN_PAGES:
            path = os.path.join(self.root, "share", "man", page)
            self.assertTrue(os.path.isfile(path), path)
            with open(path, encoding="utf-8") as f:
                self.assertRegex(f.read(), r'(?m)^\.TH "GPUALERT')
            if shutil.which("man"):
                out = subprocess.run(["man", "-l", path], capture_output=True, text=True,
                                     env=dict(os.environ, MANPAGER="cat", MANWIDTH="80"),
                                     timeout=60)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertIn("NAME", out.stdout)
                self.assertIn("SEE ALSO", out.stdout)

    def test_rules_example_of_the_man_page_is_valid(self):
        (example,) = [b for b in code_blocks(os.path.join(SOURCE_DIR, "docs", "man",
                                                          "gpualert-rules.5.md"))
                      if "[[rule]]" in b]
        path = os.path.join(self.work, "site-rules.toml")
        with open(path, "w") as f:
            f.write(example)
        p = subprocess.run([self.gpualert, "rules", "check", path], capture_output=True,
                           text=True, env=self.env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_config_example_of_the_man_page_is_valid(self):
        (example,) = [b for b in code_blocks(os.path.join(SOURCE_DIR, "docs", "man",
                                                          "gpualert.toml.5.md"))
                      if "smtp_url" in b]
        path = os.path.join(self.work, "config.toml")
        with open(path, "w") as f:
            f.write(example.replace("/scratch/me/gpualert-logs", os.path.join(self.work, "l")))
        p = subprocess.run([self.gpualert, "run", "--config", path, "--notify", "never", "--",
                            "true"], capture_output=True, text=True, env=self.env,
                           cwd=self.work, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.listdir(os.path.join(self.work, "l")))

    def test_config_example_of_the_readme_is_valid(self):
        (example,) = code_blocks(os.path.join(SOURCE_DIR, "README.md"), "toml")
        rules = os.path.join(self.work, "site-rules.toml")
        with open(rules, "w") as f:
            f.write("version = 1\n")
        path = os.path.join(self.work, "config.toml")
        with open(path, "w") as f:
            f.write(example.replace("/scratch/me/gpualert-logs", os.path.join(self.work, "l"))
                    .replace("/etc/gpualert/site-rules.toml", rules))
        # --notify never: the example's relay is not to be contacted from a test.
        p = subprocess.run([self.gpualert, "run", "--config", path, "--notify", "never", "--",
                            "sh", "-c", "exit 4"],
                           capture_output=True, text=True, env=self.env, cwd=self.work,
                           timeout=60)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertTrue(os.listdir(os.path.join(self.work, "l")))


if __name__ == "__main__":
    unittest.main()
