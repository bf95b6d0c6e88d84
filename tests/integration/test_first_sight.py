"""First sight: scripts/first-sight.py records the verdict the rules gave each case when
it was added (from git history, or from the checkout when a batch is added), and
`gpualert eval` scores those verdicts beside the current ones, in total and per batch."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, clean_env

SOURCE_DIR = os.environ.get("GPUALERT_SOURCE_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "first-sight.py")
RULES = "src/classify/default_rules.toml"

DISK_RULE = """version = 1
[[rule]]
id = "disk"
label = "disk_full"
tier = "cause"
patterns = ['No space left on device']
"""
OOM_RULE = """
[[rule]]
id = "oom"
label = "cuda_oom"
tier = "cause"
patterns = ['CUDA out of memory']
"""
OOM_LOG = "step 1 loss 2.0\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n"
DISK_LOG = "step 1 loss 2.0\nOSError: [Errno 28] No space left on device\n"


@unittest.skipUnless(shutil.which("git"), "the backfill reads git history")
class FirstSightTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpualert-first-sight-")
        self.repo = os.path.join(self.tmp, "repo")
        self.env = clean_env(XDG_CACHE_HOME=os.path.join(self.tmp, "cache"),
                             GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
                             GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
        os.makedirs(os.path.join(self.repo, "src", "classify"))
        self.git("init", "-q")
        self.write(RULES, DISK_RULE)
        self.commit("rules: disk only")
        self.rules_then = self.head()
        self.add_case("corpus/ext/disk_full/a", "disk_full", 1, DISK_LOG)
        # Gathered before the rules knew CUDA OOM, filed first under the wrong label.
        self.add_case("corpus/ext/script_error/b", "script_error", 1, OOM_LOG)
        self.commit("corpus: batch 1")
        self.write(RULES, DISK_RULE + OOM_RULE)
        self.commit("rules: CUDA OOM")
        self.rules_now = self.head()
        # Relabelled since: moved under its right label, label changed.
        os.makedirs(os.path.join(self.repo, "corpus/ext/cuda_oom"))
        self.git("mv", "corpus/ext/script_error/b", "corpus/ext/cuda_oom/b")
        self.set_label("corpus/ext/cuda_oom/b", "cuda_oom")
        self.commit("corpus: b is a CUDA OOM")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def git(self, *args):
        return subprocess.run(["git", *args], cwd=self.repo, env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def head(self):
        return self.git("rev-parse", "HEAD").strip()

    def commit(self, message):
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def write(self, rel, text):
        path = os.path.join(self.repo, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def add_case(self, rel, label, exit_code, log, batch=1):
        self.write(rel + "/case.json", json.dumps(
            {"label": label, "exit_code": exit_code, "signal": None, "source": "synthetic",
             "batch": batch}, indent=2) + "\n")
        self.write(rel + "/output.log", log)

    def case(self, rel):
        with open(os.path.join(self.repo, rel, "case.json")) as f:
            return json.load(f)

    def set_label(self, rel, label):
        c = self.case(rel)
        c["label"] = label
        self.write(rel + "/case.json", json.dumps(c, indent=2) + "\n")

    def first_sight(self, *args):
        return subprocess.run(["/usr/bin/python3", SCRIPT, *args], cwd=self.repo,
                              capture_output=True, text=True, env=self.env, timeout=120)

    def eval_json(self, *args):
        out = subprocess.run([BIN, "eval", "--json", *args], cwd=self.repo, check=True,
                             capture_output=True, text=True, env=self.env, timeout=120).stdout
        return json.loads(out)

    def test_backfill_uses_the_rules_before_each_case_and_follows_moves(self):
        r = self.first_sight("--backfill", BIN, "corpus/ext")
        self.assertEqual(r.returncode, 0, r.stderr)
        a, b = self.case("corpus/ext/disk_full/a"), self.case("corpus/ext/cuda_oom/b")
        self.assertEqual((a["first_verdict"], a["first_seen_with"]), ("disk_full", self.rules_then))
        # The table of then had no OOM rule: whatever it said, it was not cuda_oom.
        self.assertNotEqual(b["first_verdict"], "cuda_oom")
        self.assertEqual(b["first_seen_with"], self.rules_then)

        j = self.eval_json("--by-batch", "--no-default-rules", "--rules", RULES, "corpus/ext")
        self.assertEqual((j["cases"], j["right"]), (2, 2))
        self.assertEqual(j["first_sight"], {"cases": 2, "right": 1, "unknown": 0})
        self.assertEqual(j["by_batch"], [{"batch": "1", "cases": 2, "right": 2,
                                          "first_sight": {"cases": 2, "right": 1, "unknown": 0}}])
        text = subprocess.run([BIN, "eval", "--no-default-rules", "--rules", RULES, "corpus/ext"],
                              cwd=self.repo, capture_output=True, text=True, env=self.env).stdout
        self.assertIn("first sight: 1 of 2 right (50.0%)", text)
        self.assertIn("now:         2 of 2 right (100.0%)", text)

    def test_a_recorded_first_verdict_is_never_revised(self):
        self.assertEqual(self.first_sight("--backfill", BIN, "corpus/ext").returncode, 0)
        before = self.case("corpus/ext/cuda_oom/b")
        r = self.first_sight("--backfill", BIN, "corpus/ext")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.case("corpus/ext/cuda_oom/b"), before)

    def test_a_new_batch_gets_the_checkouts_rules_and_commit(self):
        self.add_case("corpus/ext/cuda_oom/c", "cuda_oom", 1, OOM_LOG, batch=2)
        r = self.first_sight(BIN, "corpus/ext/cuda_oom/c")
        self.assertEqual(r.returncode, 0, r.stderr)
        c = self.case("corpus/ext/cuda_oom/c")
        self.assertEqual((c["first_verdict"], c["first_seen_with"]), ("cuda_oom", self.head()))
        # Only the cases named: the others still have none, and count as unknown.
        j = self.eval_json("--no-default-rules", "--rules", RULES, "corpus/ext")
        self.assertEqual(j["first_sight"], {"cases": 1, "right": 1, "unknown": 2})

    def test_uncommitted_rules_are_refused(self):
        self.add_case("corpus/ext/cuda_oom/c", "cuda_oom", 1, OOM_LOG, batch=2)
        self.write(RULES, DISK_RULE)
        r = self.first_sight(BIN, "corpus/ext/cuda_oom/c")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("uncommitted changes", r.stderr)
        self.assertNotIn("first_verdict", self.case("corpus/ext/cuda_oom/c"))

    def test_eval_rules_option_takes_one_file_per_flag(self):
        # A case directory after --rules is a corpus root, not a second rules file.
        j = self.eval_json("--no-default-rules", "--rules", RULES, "corpus/ext/disk_full",
                           "corpus/ext/cuda_oom")
        self.assertEqual(j["cases"], 2)
        r = subprocess.run([BIN, "eval", "--no-default-rules", "corpus/ext"], cwd=self.repo,
                           capture_output=True, text=True, env=self.env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--no-default-rules needs", r.stderr)


if __name__ == "__main__":
    unittest.main()
