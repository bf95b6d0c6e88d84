#include "cli/group_notice.hpp"

#include "notify/policy.hpp"
#include "report/secrets.hpp"
#include "util/text.hpp"

namespace cli {

namespace {

// The evidence line that decided, one line and short: the cause in the other members'
// summaries (the notice's own subject cuts it again for a phone).
std::string cause_of(const report::RunReport& rep) {
  if (!rep.verdict) {
    return "";
  }
  if (notify::is_success(rep)) {
    return rep.verdict->caveats.empty() ? "" : "but " + rep.verdict->caveats.front();
  }
  for (const auto& e : rep.verdict->evidence) {
    if (e.source == "log" || e.source == "kernel" || e.source == "scheduler" || e.source == "gpu") {
      std::string text =
          report::mask_secrets(util::printable_line(std::string(util::trim_blanks(e.text))));
      if (text.size() > 160) {
        size_t cut = 157;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
          --cut;
        }
        text = text.substr(0, cut) + "...";
      }
      return text;
    }
  }
  return "";
}

std::string ending_of(const report::RunReport& rep) {
  std::string s = rep.signal      ? "killed by " + *rep.signal
                  : rep.exit_code ? "exit " + std::to_string(*rep.exit_code)
                                  : std::string("ended");
  return s + " after " + util::human_duration(rep.duration_s);
}

std::string group_dir_beside(const std::string& run_dir, const std::string& key) {
  auto slash = run_dir.find_last_of('/');
  return report::group_dir(slash == std::string::npos ? "." : run_dir.substr(0, slash), key);
}

std::string env_value(const report::RunReport& rep, const char* k) {
  auto it = rep.env.find(k);
  return it == rep.env.end() ? std::string() : it->second;
}

// The array part of group_ending: false when the digest (sent by the last member)
// stands for this member's notice.
bool array_ending(report::RunReport& rep, report::MemberRecord r) {
  std::string array = env_value(rep, "SLURM_ARRAY_JOB_ID");
  std::string index = env_value(rep, "SLURM_ARRAY_TASK_ID");
  int size = std::atoi(env_value(rep, "SLURM_ARRAY_TASK_COUNT").c_str());
  if (env_value(rep, "GPUALERT_ARRAY") != "digest" || array.empty() || index.empty()) {
    return true;
  }
  if (size < 1) {
    rep.warnings.push_back(
        "array = digest: SLURM_ARRAY_TASK_COUNT is not set, so the array's "
        "end can't be told; this is member " +
        index + "'s own notice");
    return true;
  }
  r.member = index;
  r.rank = index;
  std::string dir = group_dir_beside(rep.run_dir, "array-" + array);
  auto digest = report::finish_array_member(dir, size, r);
  if (!digest) {
    rep.warnings.push_back("array = digest: could not use " + dir + " (" + digest.error() +
                           "); this is member " + index + "'s own notice");
    return true;
  }
  if (!digest->send) {
    return false;
  }
  nlohmann::json members = nlohmann::json::array();
  nlohmann::json labels = nlohmann::json::object();
  int failed = 0;
  for (const auto& m : digest->members) {
    members.push_back({{"index", m.member},
                       {"label", m.label},
                       {"failed", m.failed},
                       {"cause", m.cause},
                       {"ending", m.ending},
                       {"host", m.host},
                       {"run_dir", m.run_dir}});
    labels[m.label] = labels.value(m.label, 0) + 1;
    failed += m.failed ? 1 : 0;
  }
  rep.array_digest = nlohmann::json{{"array_job_id", array}, {"size", size}, {"failed", failed},
                                    {"labels", labels},      {"dir", dir},   {"members", members}};
  return true;
}

}  // namespace

RunGroup find_group(const config::Config& config, report::RunReport& rep, long pid) {
  RunGroup g;
  g.pid = pid;
  if (config.array_mode == "digest" && rep.env.count("SLURM_ARRAY_JOB_ID") != 0) {
    rep.env["GPUALERT_ARRAY"] = "digest";
  }
  if (!config.group.empty()) {
    rep.env["GPUALERT_GROUP"] = config.group;
    if (config.group_size) {
      rep.env["GPUALERT_GROUP_SIZE"] = std::to_string(*config.group_size);
    }
  }
  std::optional<int> size = config.group_size;
  if (auto it = rep.env.find("GPUALERT_GROUP_SIZE"); !size && it != rep.env.end()) {
    if (int n = std::atoi(it->second.c_str()); n > 0) {
      size = n;
    }
  }
  std::string key = config.group;
  if (auto it = rep.env.find("GPUALERT_GROUP"); key.empty() && it != rep.env.end()) {
    key = it->second;
  }
  if (key == "none") {
    return g;  // every run its own notice, a Slurm step's tasks too
  }
  g.id = report::group_identity(rep.env, key, size, rep.host, pid);
  if (g.id && !rep.run_dir.empty()) {
    g.dir = group_dir_beside(rep.run_dir, g.id->key);
  }
  return g;
}

void join_group(RunGroup& g, const report::RunReport& rep) {
  if (g.id) {
    g.dir = group_dir_beside(rep.run_dir, g.id->key);
    g.registered = report::register_member(g.dir, *g.id, rep.run_dir, g.pid);
  }
}

bool group_ending(RunGroup& group, report::RunReport& rep) {
  if (!group.id && (env_value(rep, "GPUALERT_ARRAY") != "digest" ||
                    env_value(rep, "SLURM_ARRAY_JOB_ID").empty())) {
    return true;  // a run on its own: nobody else's notice to agree with
  }
  bool send = true;
  report::MemberRecord r;
  r.host = rep.host;
  r.run_dir = rep.run_dir;
  r.pid = group.pid;
  r.failed = !notify::is_success(rep);
  r.label = rep.verdict ? rep.verdict->label : (r.failed ? "unknown" : "success");
  r.cause = cause_of(rep);
  r.ending = ending_of(rep);
  if (group.id) {
    r.rank = group.id->rank;
    // A sweep reporting a run whose key has started a new group since: not its group.
    if (auto own = report::member_run_dir(group.dir, group.id->member);
        group.registered && own && *own != rep.run_dir) {
      group.registered =
          util::Error{"the group's key has been used by a later run (" + *own + ") since"};
    }
    report::GroupDecision d = report::finish_member(group.dir, *group.id, r, group.registered);
    if (d.role == "covered") {
      // The member that claimed the notice died before it was sent: one other sends.
      auto claimer = report::abandoned_claim_run_dir(group.dir);
      if (claimer && *claimer != rep.run_dir && report::take_over(group.dir)) {
        d.send = true;
        d.role = "own";
        d.own_why = group.id->noun + " " + d.covered_by +
                    " claimed the job's notice, but its wrapper ended before sending it (" +
                    *claimer + ")";
      }
    }
    rep.job_group = report::decision_json(*group.id, group.dir, d);
    send = d.send;
    group.decision = d;
  }
  if (send) {
    send = array_ending(rep, r);
  }
  return send;
}

bool may_hold_notice(const RunGroup& group, const report::RunReport& rep) {
  if (group.id) {
    return report::first_to_hold(group.dir);
  }
  std::string array = env_value(rep, "SLURM_ARRAY_JOB_ID");
  if (env_value(rep, "GPUALERT_ARRAY") == "digest" && !array.empty()) {
    return report::first_to_hold(group_dir_beside(rep.run_dir, "array-" + array));
  }
  return true;
}

void group_notice_done(RunGroup& group, const report::RunReport& rep) {
  if (group.id && rep.job_group && rep.job_group->value("send", false)) {
    report::mark_sent(group.dir, group.decision);
  }
}

bool notice_wanted(const config::Config& config, const report::RunReport& rep) {
  if (rep.array_digest && config.notify_when != "never") {
    const auto& failed = (*rep.array_digest)["failed"];
    if (failed.is_number_integer() && failed.get<int>() > 0) {
      return true;
    }
  }
  return notify::should_notify(config, rep);
}

}  // namespace cli
