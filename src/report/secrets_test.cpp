#include "report/secrets.hpp"

#include <gtest/gtest.h>

#include "report/run_report.hpp"

namespace {

using report::mask_argv;
using report::mask_secrets;

TEST(Secrets, KnownTokenShapesAreMaskedWherever) {
  EXPECT_EQ(mask_secrets("token hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123 here"), "token ******** here");
  EXPECT_EQ(mask_secrets("sk-proj-abcdefghijklmnopqrstuvwx1234"), "********");
  EXPECT_EQ(mask_secrets("gh token github_pat_11ABCDEFG0123456789_abcdefghij"),
            "gh token ********");
  // 40 lowercase hex (W&B API key) and an AWS secret access key, standing alone.
  EXPECT_EQ(mask_secrets("wandb login 0123456789abcdef0123456789abcdef01234567"),
            "wandb login ********");
  EXPECT_EQ(mask_secrets("aws wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok"), "aws ******** ok");
  EXPECT_EQ(mask_secrets("curl -H 'Authorization: Bearer eyJhbGciOi.x.y'"),
            "curl -H 'Authorization: Bearer ********'");
  EXPECT_EQ(mask_secrets("MASTER_ADDR=https://bob:p4ssw0rd@10.0.0.1"),
            "MASTER_ADDR=https://bob:********@10.0.0.1");
}

TEST(Secrets, OrdinaryTextIsLeftAlone) {
  for (const char* line :
       {"step 10 loss 2.31", "/home/alice/checkpoints/epoch-3/model.safetensors",
        "max_tokens: 2048", "sha256 of 41 chars: 0123456789abcdef0123456789abcdef012345678"}) {
    EXPECT_EQ(mask_secrets(line), line);
  }
}

TEST(Secrets, ArgvValueAfterASecretFlagIsMaskedWhole) {
  std::vector<std::string> argv = {
      "train.py", "--password",    "hunter2", "--lr",
      "3e-4",     "--api-key=abc", "--url",   "https://alice:p4ss@hub/x"};
  std::vector<std::string> want = {
      "train.py", "--password",         "********", "--lr",
      "3e-4",     "--api-key=********", "--url",    "https://alice:********@hub/x"};
  EXPECT_EQ(mask_argv(argv), want);
}

TEST(RunReportJson, BytesThatAreNotUtf8ComeBackExactly) {
  report::RunReport r;
  r.name = std::string("job\xc3(", 5);
  r.argv = {"python", "caf\xe9.txt"};
  r.cwd = "/home/j\xf6rg";
  r.user = "j\xf6rg";
  r.run_dir = r.cwd + "/logs/x";
  r.log_path = r.run_dir + "/output.log";
  std::string text = report::to_text(r);  // must not throw
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["cwd"].get<std::string>(),
            "/home/j\xef\xbf\xbd"
            "rg");  // readable, with U+FFFD
  auto back = report::from_json(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->name, r.name);
  EXPECT_EQ(back->argv, r.argv);
  EXPECT_EQ(back->cwd, r.cwd);
  EXPECT_EQ(back->user, r.user);
  EXPECT_EQ(back->run_dir, r.run_dir);
  EXPECT_EQ(back->log_path, r.log_path);
}

TEST(RunReportJson, ValidUtf8HasNoBase64Twin) {
  report::RunReport r;
  r.argv = {"python", "café.py"};
  r.cwd = "/tmp";
  auto j = report::to_json(r);
  EXPECT_FALSE(j.contains("argv_b64"));
  EXPECT_FALSE(j.contains("cwd_b64"));
}

}  // namespace
