"""What --help and usage errors tell a person: the command line as it is typed, no
parser internals, every variable that configures delivery, and status 2 with the
usage for a command given without what it needs."""
import re
import subprocess
import unittest

from harness import BIN, clean_env


def gpualert(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, env=clean_env(),
                          timeout=60)


class HelpTest(unittest.TestCase):
    COMMANDS = [["run"], ["classify"], ["eval"], ["rules"], ["rules", "list"],
                ["rules", "check"], ["outbox"], ["test-notify"], ["notify"]]

    def test_run_usage_shows_the_command_after_double_dash(self):
        p = gpualert("run", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("Usage: gpualert run [OPTIONS] -- COMMAND [ARGS...]\n", p.stdout)

    def test_no_parser_type_hints(self):
        for cmd in self.COMMANDS:
            p = gpualert(*cmd, "--help")
            self.assertEqual(p.returncode, 0, cmd)
            self.assertIn("Usage: gpualert " + " ".join(cmd), p.stdout)
            self.assertNotRegex(p.stdout, r"\b(?:TEXT|INT|UINT|FLOAT)\b", cmd)
            self.assertNotIn("REQUIRED", p.stdout, cmd)
        run = gpualert("run", "--help").stdout
        self.assertRegex(run, r"--notify always\|failure\|failure\+warnings\|never\b")
        self.assertRegex(run, r"--timeout DURATION\b")
        self.assertRegex(run, r"-q,--quiet +no start")  # a flag takes no value

    def test_run_help_lists_every_delivery_variable(self):
        run = gpualert("run", "--help").stdout
        for var in ("GPUALERT_SMTP_URL", "GPUALERT_TO", "GPUALERT_WEBHOOK_URL",
                    "GPUALERT_WEBHOOK_FORMAT", "GPUALERT_SMTP_CA_FILE"):
            self.assertIn(var, run)

    def test_rules_without_subcommand_is_a_usage_error(self):
        p = gpualert("rules")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertIn("Usage: gpualert rules", p.stderr)
        self.assertRegex(p.stderr, r"(?m)^ +list ")
        self.assertRegex(p.stderr, r"(?m)^ +check ")


if __name__ == "__main__":
    unittest.main()
