"""The corpus gate (scripts/expected-verdicts.py) on a small corpus of its own: it passes
when every verdict is as recorded, and a rule change that flips a case makes it fail and
name the case until the file is rewritten."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, clean_env

SOURCE_DIR = os.environ.get("GPUALERT_SOURCE_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "expected-verdicts.py")

# A site rule that reads a full disk as a script error: the flip a careless rule makes.
FLIPPING_RULE = """version = 1
[[rule]]
id = "test-flip"
label = "script_error"
tier = "decisive"
patterns = ['No space left on device']
"""


def make_case(root, rel, label, exit_code, log):
    d = os.path.join(root, rel)
    os.makedirs(d)
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump({"label": label, "exit_code": exit_code, "signal": None,
                   "source": "synthetic"}, f)
    with open(os.path.join(d, "output.log"), "w") as f:
        f.write(log)


class ExpectedVerdictsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpualert-gate-")
        self.corpus = os.path.join(self.tmp, "corpus")
        make_case(self.corpus, "one/disk_full/a", "disk_full", 1,
                  "step 1 loss 2.0\nOSError: [Errno 28] No space left on device\n")
        make_case(self.corpus, "two/success/b", "success", 0, "step 1 loss 2.0\ndone\n")
        self.expected = os.path.join(self.tmp, "expected.tsv")
        self.env = clean_env(XDG_CACHE_HOME=os.path.join(self.tmp, "cache"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def gate(self, *extra):
        return subprocess.run(["/usr/bin/python3", SCRIPT, "--corpus", self.corpus,
                               "--expected", self.expected, *extra, BIN],
                              capture_output=True, text=True, env=self.env, timeout=120)

    def test_unchanged_rules_pass(self):
        self.assertEqual(self.gate("--update").returncode, 0)
        with open(self.expected) as f:
            rows = [l.rstrip("\n").split("\t") for l in f if not l.startswith("#")]
        self.assertEqual(rows, [["one/disk_full/a", "disk_full", "disk_full"],
                                ["two/success/b", "success", "success"]])
        p = self.gate()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_a_flipped_case_fails_until_the_file_is_updated(self):
        self.assertEqual(self.gate("--update").returncode, 0)
        rules = os.path.join(self.tmp, "flip.toml")
        with open(rules, "w") as f:
            f.write(FLIPPING_RULE)
        p = self.gate("--rules", rules)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("one/disk_full/a: verdict disk_full -> script_error", p.stdout)
        self.assertNotIn("two/success/b", p.stdout)
        self.assertEqual(self.gate("--rules", rules, "--update").returncode, 0)
        self.assertEqual(self.gate("--rules", rules).returncode, 0)

    def test_a_new_case_fails_until_recorded(self):
        self.assertEqual(self.gate("--update").returncode, 0)
        make_case(self.corpus, "two/script_error/c", "script_error", 1,
                  "Traceback (most recent call last):\nNameError: name 'x' is not defined\n")
        p = self.gate()
        self.assertEqual(p.returncode, 1)
        self.assertIn("two/script_error/c: new case", p.stdout)

    def test_missing_file_is_an_error(self):
        p = self.gate()
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("missing", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
