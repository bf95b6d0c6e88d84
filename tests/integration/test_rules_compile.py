"""The rules' patterns are compiled by gpualert-compile, a helper beside gpualert, so that
Hyperscan's compiler is not part of every job's start: the first run with a rule set
compiles through it, errors still name the rule and line, a set found good is remembered,
and without the helper a job still runs, keeps its exit status and says what was not read."""
import glob
import os
import shutil
import subprocess
import unittest

from harness import BIN, RunTestCase

RULES = """\
[[rule]]
id = "empty-match"
label = "script_error"
patterns = ["ok then", "x*"]

[[rule]]
id = "unclosed"
label = "script_error"
patterns = ["(unclosed"]
"""

GOOD = """\
[[rule]]
id = "fine"
label = "script_error"
patterns = ["^my_trainer: fatal"]
"""


class CompileHelperTest(RunTestCase):
    def setUp(self):
        super().setUp()
        self.cache = os.path.join(self.tmp, "cache")
        self.env["GPUALERT_CACHE_DIR"] = self.cache

    def gpualert(self, *args, binary=BIN):
        return subprocess.run([binary, *args], capture_output=True, text=True, env=self.env,
                              cwd=self.tmp, timeout=120)

    def alone(self):
        """A copy of gpualert with none of its helpers beside it."""
        d = os.path.join(self.tmp, "alone")
        os.makedirs(d)
        return shutil.copy2(BIN, d)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_gpualert_carries_no_pattern_compiler(self):
        nm = subprocess.run(["nm", BIN], capture_output=True, text=True, check=True).stdout
        self.assertRegex(nm, r"(?m) [Tt] main$")  # symbols are there to be looked at
        self.assertNotIn("hs_compile_multi", nm)
        self.assertIn("hs_scan", nm)

    def test_first_run_compiles_through_the_helper(self):
        p, run_dir = self.run_wrapped(["/usr/bin/python3", "-c", "raise KeyError('labels')"])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(self.report(run_dir)["label"], "script_error")
        self.assertTrue(glob.glob(os.path.join(self.cache, "hs-*.db")))

    def test_pattern_errors_name_the_rule_and_line_in_file_order(self):
        p = self.gpualert("rules", "check", self.write("r.toml", RULES))
        self.assertEqual(p.returncode, 1, p.stderr)
        lines = [l for l in p.stderr.splitlines() if "pattern '" in l]
        self.assertEqual(len(lines), 2, p.stderr)
        # Only Hyperscan refuses this one (RE2 takes it): the helper's answer, per rule.
        self.assertIn("r.toml:1: rule 'empty-match': pattern 'x*': Pattern matches empty buffer",
                      lines[0])
        self.assertIn("r.toml:6: rule 'unclosed': pattern '(unclosed'", lines[1])
        self.assertNotIn("'ok then'", p.stderr)

    def test_a_set_found_good_is_checked_once(self):
        rules = self.write("good.toml", GOOD)
        self.assertEqual(self.gpualert("rules", "check", rules).returncode, 0)
        self.assertTrue(glob.glob(os.path.join(self.cache, "hs-*.ok")))
        # The same set again needs no compiler: a helper-less copy accepts it.
        p = self.gpualert("rules", "check", rules, binary=self.alone())
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_without_the_helper_the_job_runs_and_the_verdict_says_what_was_not_read(self):
        alone = self.alone()
        p = self.gpualert("rules", "check", self.write("good.toml", GOOD), binary=alone)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("gpualert-compile", p.stderr)
        self.assertIn("not installed beside gpualert", p.stderr)
        cmd = [alone, "run", "--log-dir", self.logs, "--notify", "never", "--",
               "/usr/bin/python3", "-c", "raise KeyError('labels')"]
        p = subprocess.run(cmd, capture_output=True, env=self.env, cwd=self.tmp, timeout=60)
        self.assertEqual(p.returncode, 1)
        rep = self.report(self.only_run_dir())
        self.assertTrue(any("not read by the rules' patterns" in c and "gpualert-compile" in c
                            for c in rep.get("caveats", [])), rep)


if __name__ == "__main__":
    unittest.main()
