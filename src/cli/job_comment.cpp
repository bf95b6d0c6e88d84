#include "cli/job_comment.hpp"

#include "notify/policy.hpp"
#include "report/secrets.hpp"
#include "util/text.hpp"

namespace cli {

namespace {

constexpr std::chrono::milliseconds k_comment_deadline{2000};

std::string env_of(const report::RunReport& rep, const char* key) {
  auto it = rep.env.find(key);
  return it == rep.env.end() ? std::string() : it->second;
}

}  // namespace

std::string job_comment_text(const report::RunReport& rep) {
  std::string text = "gpualert: " + (rep.verdict ? rep.verdict->label : std::string("unknown"));
  for (const char* k : {"RANK", "SLURM_PROCID"}) {
    if (std::string rank = env_of(rep, k); !rank.empty()) {
      if (rank != "0") {
        text += " rank " + rank;
      }
      break;
    }
  }
  if (rep.verdict && !notify::is_success(rep)) {
    for (const auto& e : rep.verdict->evidence) {
      if (e.source == "log" || e.source == "kernel" || e.source == "scheduler") {
        text += ": " + report::mask_secrets(util::trim_blanks(e.text));
        break;
      }
    }
  }
  return text;
}

host::CommentWrite start_job_comment(const report::RunReport& rep, const config::Config& config) {
  std::string job_id = env_of(rep, "SLURM_JOB_ID");
  if (!config.slurm_comment || job_id.empty()) {
    return {};
  }
  std::string tasks = env_of(rep, "SLURM_STEP_NUM_TASKS");
  if (tasks.empty()) {
    tasks = env_of(rep, "SLURM_NTASKS");
  }
  bool one_of_many = !tasks.empty() && tasks != "1";
  if (notify::is_success(rep) && one_of_many) {
    return {};
  }
  return host::start_comment_write(job_id, job_comment_text(rep), k_comment_deadline);
}

}  // namespace cli
