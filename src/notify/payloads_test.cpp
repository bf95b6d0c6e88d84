#include "notify/payloads.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "notify/content.hpp"
#include "notify/notice.hpp"

namespace notify {
namespace {

using nlohmann::json;

constexpr const char* k_token = "hf_abcdefghijklmnopqrstuvwxyz0123456789";

report::RunReport failed_run() {
  report::RunReport r;
  r.name = "llama-ft";
  r.host = "gpu-node17";
  r.duration_s = 65;
  r.exit_code = 1;
  r.command = "python train.py";
  r.log_path = "/logs/run/output.log";
  r.env = {{"SLURM_JOB_ID", "4242"}, {"SLURM_PROCID", "3"}};
  model::Verdict v;
  v.label = "cuda_oom";
  v.rule = "cuda-oom-torch";
  v.action = "smaller batch";
  v.evidence.push_back(
      {41, std::string("token=") + k_token + " <!channel> OutOfMemoryError", "log"});
  r.verdict = v;
  return r;
}

TEST(Slack, BlockKitWithAColourBarAndATextFallback) {
  report::RunReport r = failed_run();
  json p = json::parse(slack_payload(r, build_subject(r)));
  EXPECT_FALSE(p.contains("username"));
  EXPECT_NE(p["text"].get<std::string>().find("FAILED cuda_oom"), std::string::npos);
  ASSERT_EQ(p["attachments"].size(), 1u);
  EXPECT_EQ(p["attachments"][0]["color"], "#cf222e");
  const json& blocks = p["attachments"][0]["blocks"];
  EXPECT_EQ(blocks[0]["type"], "header");
  EXPECT_EQ(blocks[0]["text"]["text"], "FAILED cuda_oom: llama-ft");
  std::string all = p.dump();
  EXPECT_EQ(all.find(k_token), std::string::npos) << all;
  // The job's text cannot notify the whole channel.
  EXPECT_EQ(all.find("<!channel>"), std::string::npos) << all;
  EXPECT_NE(all.find("&lt;!channel&gt;"), std::string::npos) << all;

  r.exit_code = 0;
  r.verdict->label = "success";
  r.verdict->evidence.clear();
  json ok = json::parse(slack_payload(r, build_subject(r)));
  EXPECT_EQ(ok["attachments"][0]["color"], "#1a7f37");
  EXPECT_EQ(ok["attachments"][0]["blocks"][0]["text"]["text"], "succeeded: llama-ft");
}

TEST(Json, TheReportKeepsItsKeysAndGainsAText) {
  report::RunReport r = failed_run();
  json p =
      json::parse(json_payload(r, R"({"label": "cuda_oom", "exit_code": 1})", build_subject(r)));
  EXPECT_EQ(p["label"], "cuda_oom");
  EXPECT_EQ(p["exit_code"], 1);
  std::string text = p["text"];
  EXPECT_NE(text.find("FAILED cuda_oom"), std::string::npos);
  EXPECT_NE(text.find("First action: smaller batch"), std::string::npos);
  EXPECT_EQ(text.find(k_token), std::string::npos);
  // report.json unreadable: the report is serialised again, text and all.
  json again = json::parse(json_payload(r, "", build_subject(r)));
  EXPECT_EQ(again["label"], "cuda_oom");
  EXPECT_TRUE(again.contains("text"));
}

TEST(Ntfy, PriorityAndTagsByOutcomeAndARoundTripThroughTheOutbox) {
  report::RunReport r = failed_run();
  NtfyMessage m = ntfy_message(r);
  EXPECT_EQ(m.priority, "high");
  EXPECT_EQ(m.tags, "rotating_light,cuda_oom");
  EXPECT_EQ(m.title, "FAILED cuda_oom: job 4242 llama-ft rank 3 on gpu-node17");
  EXPECT_EQ(m.message.find(k_token), std::string::npos);
  auto back = parse_ntfy(ntfy_to_json(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->title, m.title);
  EXPECT_EQ(back->message, m.message);
  EXPECT_FALSE(parse_ntfy("not json"));
  EXPECT_FALSE(parse_ntfy(R"({"title": "x"})"));

  r.exit_code = 0;
  r.verdict->label = "success";
  NtfyMessage ok = ntfy_message(r);
  EXPECT_EQ(ok.priority, "default");
  EXPECT_EQ(ok.tags, "white_check_mark,success");
}

TEST(Sender, TheDomainComesFromMailnameElseTheHostName) {
  char path[] = "/tmp/gpualert-mailname-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "mail.example.org\n";
  EXPECT_EQ(sender_domain(path, "vm"), "mail.example.org");
  std::ofstream(path) << "vm\n";  // a bare name there is no domain
  EXPECT_EQ(sender_domain(path, "node1.cluster.example.org"), "node1.cluster.example.org");
  ::unlink(path);
  EXPECT_EQ(sender_domain(path, "n2.example.org"), "n2.example.org");

  EXPECT_TRUE(has_mail_domain("gpualert@example.org"));
  EXPECT_TRUE(has_mail_domain("GPU Alert <gpualert@example.org>"));
  EXPECT_FALSE(has_mail_domain("gpualert@vm"));
  EXPECT_FALSE(has_mail_domain("gpualert@10.0.0.1"));
  EXPECT_FALSE(has_mail_domain("gpualert"));
}

}  // namespace
}  // namespace notify
