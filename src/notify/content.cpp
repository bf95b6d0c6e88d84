#include "notify/content.hpp"

#include <algorithm>
#include <cstdio>

#include "notify/gpu_chart.hpp"
#include "notify/text_filters.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

// Environment variables that name the scheduler job or the GPUs the job saw.
constexpr const char* k_job_id_vars[] = {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID",
                                         "FLUX_JOB_ID"};
constexpr const char* k_gpu_vars[] = {
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
    "SLURM_JOB_GPUS",       "SLURM_STEP_GPUS",        "GPU_DEVICE_ORDINAL"};

struct Fact {
  std::string key, value;
};

// Job-controlled text shown on one line (name, command, paths): control
// characters become spaces, secrets are masked.
std::string one_line(const std::string& v) { return mask_secrets(sanitize_header_value(v, 4000)); }

std::string exit_text(const report::RunReport& r) {
  std::string s;
  if (r.state == "stalled") {
    return "still running";
  }
  if (r.signal) {
    s = "killed by " + *r.signal;
  } else if (r.exit_code) {
    s = "exit status " + std::to_string(*r.exit_code);
  } else {
    s = "unknown";
  }
  if (r.core_dumped) {
    s += " (core dumped)";
  }
  if (r.wrapper_timeout) {
    s += ", stopped by gpualert --timeout";
  }
  return s;
}

std::vector<Fact> run_facts(const report::RunReport& r) {
  std::vector<Fact> f;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) {
      f.push_back({k, one_line(v)});
    }
  };
  add("Job", r.name);
  add("Command", r.command.empty() ? util::shell_join(r.argv) : r.command);
  add("Directory", r.cwd);
  add("Host", r.host);
  add("User", r.user);
  add("Started", r.started);
  add("Ended", r.ended);
  char secs[64];
  std::snprintf(secs, sizeof secs, " (%.1f s)", r.duration_s);
  add("Duration", util::human_duration(r.duration_s) + (r.duration_s >= 60 ? secs : ""));
  add("Exit", exit_text(r));
  // An array member by the id its user knows (17_1), not the job id Slurm gave it.
  if (std::string id = scheduler_job_id(r.env); !id.empty() && r.env.count("SLURM_ARRAY_JOB_ID")) {
    add("Scheduler job", "array job " + id);
  } else {
    for (const char* var : k_job_id_vars) {
      if (auto it = r.env.find(var); it != r.env.end()) {
        add("Scheduler job", std::string(var) + "=" + it->second);
        break;
      }
    }
  }
  std::string gpus;
  for (const char* var : k_gpu_vars) {
    if (auto it = r.env.find(var); it != r.env.end()) {
      gpus += (gpus.empty() ? "" : ", ") + std::string(var) + "=" + it->second;
    }
  }
  add("GPUs", gpus.empty() ? std::string("none named in the environment") : gpus);
  add("Run directory", r.run_dir);
  add("Log",
      r.log_path + (r.log_bytes ? " (" + util::human_size(r.log_bytes) + " of job output)" : ""));
  if (r.log_fallback) {
    add("Log fallback", *r.log_fallback);
  }
  return f;
}

std::string headline(const report::RunReport& r) {
  if (r.state == "stalled" && r.stall) {
    return "STALLED: " + r.name + " printed nothing for " + util::human_duration(r.stall->after_s) +
           " (" + ending_phrase(r) + ")";
  }
  if (is_success(r)) {
    return "Succeeded: " + r.name + " (" + ending_phrase(r) + ")";
  }
  std::string label = r.verdict ? r.verdict->label : "unclassified";
  return "FAILED " + label + ": " + r.name + " (" + ending_phrase(r) + ")";
}

std::string where_label(const EvidenceWindow& w) {
  if (w.file.empty()) {
    return w.source.empty() ? "evidence" : w.source;
  }
  return w.file + " line " + std::to_string(w.hit);
}

constexpr const char* k_pre =
    "font-family:Menlo,Consolas,monospace;font-size:12px;background:#f6f8fa;"
    "border:1px solid #d0d7de;padding:8px;white-space:pre-wrap;word-break:break-all;margin:4px 0 "
    "12px 0";
constexpr const char* k_h2 = "font-size:15px;margin:18px 0 6px 0;color:#24292f";
constexpr const char* k_td = "padding:2px 10px 2px 0;vertical-align:top;font-size:13px";

std::string html_table(const std::vector<Fact>& facts) {
  std::string h = "<table style=\"border-collapse:collapse\">";
  for (const auto& f : facts) {
    h += "<tr><td style=\"" + std::string(k_td) + ";color:#57606a;white-space:nowrap\">" +
         html_escape(f.key) + "</td><td style=\"" + k_td + "\">" + html_escape(f.value) +
         "</td></tr>";
  }
  return h + "</table>";
}

// The job's GPUs as gpualert-gpu saw them (report.json "gpus"): one row each,
// and the GPU the failure names (the verdict's `gpu` field, a CUDA index, else
// the fullest one) for the first screen.
uint64_t gpu_number(const nlohmann::json& g, const char* key) {
  auto it = g.find(key);
  return it != g.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

std::string gpu_text(const nlohmann::json& g, const char* key) {
  auto it = g.find(key);
  return it != g.end() && it->is_string() ? one_line(it->get<std::string>()) : std::string();
}

std::string gpu_xids(const nlohmann::json& g) {
  std::string out;
  if (auto it = g.find("xids"); it != g.end() && it->is_array()) {
    for (const auto& x : *it) {
      if (x.is_object() && x.contains("xid") && x["xid"].is_number()) {
        out += (out.empty() ? "" : ", ") + std::to_string(x["xid"].get<uint64_t>());
      }
    }
  }
  return out;
}

std::vector<std::vector<std::string>> gpu_rows(const report::RunReport& r) {
  std::vector<std::vector<std::string>> rows;
  if (!r.gpus || !r.gpus->is_array()) {
    return rows;
  }
  for (const auto& g : *r.gpus) {
    if (!g.is_object()) {
      continue;
    }
    auto size = [&](const char* k) {
      return g.contains(k) ? util::human_size(gpu_number(g, k)) : std::string("-");
    };
    std::string util_last = g.contains("utilization_last")
                                ? std::to_string(gpu_number(g, "utilization_last")) + "%"
                                : "-";
    uint64_t ecc_unc = 0;
    if (auto d = g.find("ecc_delta"); d != g.end() && d->is_object()) {
      ecc_unc = gpu_number(*d, "volatile_uncorrected");
    }
    std::string state = g.contains("lost_at") ? "lost at " + gpu_text(g, "lost_at") : "";
    std::string xids = gpu_xids(g);
    rows.push_back({std::to_string(gpu_number(g, "job_index")), gpu_text(g, "name"),
                    gpu_text(g, "pci"), size("memory_total"), size("memory_used_peak"),
                    size("memory_used_last"), util_last, xids.empty() ? "-" : xids,
                    std::to_string(ecc_unc) + (state.empty() ? "" : "; " + state)});
  }
  return rows;
}

// "GPU 0 (NVIDIA H200, 140.0 GiB, 00000000:19:00.0): 139.8 GiB used 2.1 s before the end,
// peak 140.1 GiB; the job asked for 2.00 GiB more" (the last reading while the job
// ran: its memory is freed once it exits), or "" without GPU facts.
std::string failing_gpu_line(const report::RunReport& r) {
  if (!r.gpus || !r.gpus->is_array() || r.gpus->empty()) {
    return "";
  }
  const nlohmann::json* pick = nullptr;
  std::string named;
  if (r.verdict) {
    if (auto it = r.verdict->fields.find("gpu"); it != r.verdict->fields.end()) {
      named = it->second;
    }
  }
  for (const auto& g : *r.gpus) {
    if (!g.is_object()) {
      continue;
    }
    if (!named.empty() && std::to_string(gpu_number(g, "job_index")) == named) {
      pick = &g;
      break;
    }
    // Else one with an Xid or that was lost, else the fullest.
    auto trouble = [](const nlohmann::json& x) {
      return x.contains("lost_at") || !gpu_xids(x).empty();
    };
    if (pick == nullptr || (trouble(g) && !trouble(*pick)) ||
        (trouble(g) == trouble(*pick) &&
         gpu_number(g, "memory_used_last") > gpu_number(*pick, "memory_used_last"))) {
      pick = &g;
    }
  }
  if (pick == nullptr) {
    return "";
  }
  const auto& g = *pick;
  std::string line = "GPU " + std::to_string(gpu_number(g, "job_index")) + " (" +
                     gpu_text(g, "name") + ", " + util::human_size(gpu_number(g, "memory_total")) +
                     (g.contains("pci") ? ", " + gpu_text(g, "pci") : "") + ")";
  if (g.contains("memory_used_last")) {
    char before[48] = "";
    if (auto it = g.find("last_reading_s_before_end"); it != g.end() && it->is_number()) {
      std::snprintf(before, sizeof before, " %.1f s before the end", it->get<double>());
    }
    line += ": " + util::human_size(gpu_number(g, "memory_used_last")) + " used" + before +
            ", peak " + util::human_size(gpu_number(g, "memory_used_peak"));
  }
  if (r.verdict) {
    if (auto it = r.verdict->fields.find("requested"); it != r.verdict->fields.end()) {
      line += "; the job asked for " + one_line(it->second) + " more";
    }
  }
  if (std::string x = gpu_xids(g); !x.empty()) {
    line += "; Xid " + x;
  }
  if (g.contains("lost_at")) {
    line += "; lost at " + gpu_text(g, "lost_at");
  }
  return line;
}

// Slurm's --mem in the job's environment ("200M"), or "".
std::string slurm_mem(const std::map<std::string, std::string>& env) {
  for (const char* k : {"SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU", "SLURM_MEM_PER_GPU"}) {
    if (auto it = env.find(k); it != env.end() && !it->second.empty()) {
      std::string v = it->second;
      bool digits = v.find_first_not_of("0123456789") == std::string::npos;
      return (digits ? v + "M" : v) + (std::string(k) == "SLURM_MEM_PER_NODE"  ? ""
                                       : std::string(k) == "SLURM_MEM_PER_CPU" ? " per CPU"
                                                                               : " per GPU");
    }
  }
  return "";
}

// The value of KEY= in a scheduler line, or "".
std::string scheduler_value(const std::vector<std::string>& lines, const std::string& key) {
  for (const auto& l : lines) {
    size_t at = l.find(" " + key + "=");
    if (at != std::string::npos) {
      size_t from = at + key.size() + 2;
      return l.substr(from, l.find(' ', from) - from);
    }
  }
  return "";
}

// What the scheduler knows of the job, for the first screen: where it ran, how long
// against its limit, how much memory it asked for, whether it was requeued.
std::vector<Fact> scheduler_facts(const report::RunReport& r) {
  std::vector<Fact> f;
  auto env = [&](const char* k) {
    auto it = r.env.find(k);
    return it == r.env.end() ? std::string() : it->second;
  };
  std::string id = scheduler_job_id(r.env);
  if (id.empty()) {
    return f;
  }
  auto add = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) {
      f.push_back({k, one_line(v)});
    }
  };
  add("Job", id + (env("SLURM_JOB_NAME").empty() ? "" : " (" + env("SLURM_JOB_NAME") + ")"));
  add("Partition", env("SLURM_JOB_PARTITION"));
  add("Nodes", env("SLURM_JOB_NODELIST"));
  if (!env("SLURM_PROCID").empty() && env("SLURM_NTASKS") != "" && env("SLURM_NTASKS") != "1") {
    add("Task", env("SLURM_PROCID") + " of " + env("SLURM_NTASKS"));
  }
  std::string run_time = scheduler_value(r.scheduler_lines, "RunTime");
  std::string limit = scheduler_value(r.scheduler_lines, "TimeLimit");
  if (!run_time.empty() || !limit.empty()) {
    add("Run time", (run_time.empty() ? "?" : run_time) + " of " +
                        (limit.empty()          ? "?"
                         : limit == "UNLIMITED" ? "no limit"
                                                : limit));
  }
  add("Memory asked (--mem)", slurm_mem(r.env));
  if (r.cgroup_memory_peak) {
    add("Memory peak (its cgroup)", util::human_size(*r.cgroup_memory_peak));
  }
  if (std::string rc = env("SLURM_RESTART_COUNT"); !rc.empty() && rc != "0") {
    add("Restarts before this run", rc);
  }
  return f;
}

std::string group_str(const nlohmann::json& g, const char* key) {
  auto it = g.find(key);
  return it != g.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Which member of a job's group this notice is, and what it stands for
// (report/job_group.hpp): the paragraph and the other members' lines.
struct GroupText {
  std::string lead;
  std::vector<std::string> others;
};

// A heading and one line per item, in the text part and as a list in the HTML part.
void add_list(std::string& t, std::string& h, const std::string& heading,
              const std::vector<std::string>& lines) {
  if (lines.empty()) {
    return;
  }
  t += heading + "\n";
  h += "<ul style=\"margin:4px 0;padding-left:18px;font-size:13px\">";
  for (const auto& l : lines) {
    t += "  " + l + "\n";
    h += "<li>" + html_escape(l) + "</li>";
  }
  h += "</ul>";
}

std::optional<GroupText> group_text(const report::RunReport& r) {
  if (!r.job_group || !r.job_group->is_object()) {
    return std::nullopt;
  }
  const auto& g = *r.job_group;
  GroupText t;
  std::string noun = group_str(g, "noun");
  std::string me =
      group_str(g, "rank").empty() ? "this " + noun : noun + " " + group_str(g, "rank");
  std::string size = g.contains("size") && g["size"].is_number_integer()
                         ? std::to_string(g["size"].get<int>()) + " " + noun + "s"
                         : "its " + noun + "s";
  std::string role = group_str(g, "role");
  std::string why = group_str(g, "own_why");
  if (role == "first_failure") {
    t.lead = "One notice for the job (" + size + ", group " + group_str(g, "key") + "): " + me +
             " failed first.";
  } else if (role == "all_succeeded") {
    t.lead = "One notice for the job: all " + size + " succeeded.";
  } else {
    t.lead = "This is " + me + "'s own notice";
  }
  if (!why.empty()) {
    t.lead += (role == "own" ? ": " : " Own notice: ") + why + ".";
  } else if (role == "own") {
    t.lead += ".";
  }
  if (auto it = g.find("others"); it != g.end() && it->is_array()) {
    for (const auto& l : *it) {
      if (l.is_string()) {
        t.others.push_back(one_line(l.get<std::string>()));
      }
    }
  }
  return t;
}

// The summary of a Slurm array in `array = digest` mode (report.json "array_digest").
struct DigestText {
  std::string head;    // "2 of 4 members failed"
  std::string counts;  // "script_error 2, success 2"
  std::vector<std::string> failing, unseen;
};

std::optional<DigestText> digest_text(const report::RunReport& r) {
  if (!r.array_digest || !r.array_digest->is_object()) {
    return std::nullopt;
  }
  const auto& d = *r.array_digest;
  DigestText t;
  int size = d.value("size", 0), failed = d.value("failed", 0);
  t.head = failed > 0 ? std::to_string(failed) + " of " + std::to_string(size) + " members failed"
                      : "all " + std::to_string(size) + " members succeeded";
  if (auto it = d.find("labels"); it != d.end() && it->is_object()) {
    for (auto l = it->begin(); l != it->end(); ++l) {
      if (l.value().is_number_integer()) {
        t.counts +=
            (t.counts.empty() ? "" : ", ") + l.key() + " " + std::to_string(l.value().get<int>());
      }
    }
  }
  std::string array = group_str(d, "array_job_id");
  if (auto it = d.find("members"); it != d.end() && it->is_array()) {
    for (const auto& m : *it) {
      if (!m.is_object() || !m.value("failed", false)) {
        continue;
      }
      std::string line = array + "_" + group_str(m, "index") + ": " + group_str(m, "label") + " (" +
                         group_str(m, "ending") + ")";
      if (std::string c = group_str(m, "cause"); !c.empty()) {
        line += ": " + c;
      }
      t.failing.push_back(one_line(line + "; run dir " + group_str(m, "run_dir")));
    }
  }
  t.counts = one_line(t.counts);
  return t;
}

}  // namespace

std::string first_action(const report::RunReport& r) {
  if (!r.verdict) {
    return "";
  }
  const auto& v = *r.verdict;
  // A memory cgroup's OOM kill under Slurm: the limit is the job's own request.
  if (v.label == "host_oom") {
    if (std::string mem = slurm_mem(r.env); !mem.empty()) {
      return "the job's --mem=" + mem +
             " limit was hit: ask for more memory (or fewer loader "
             "workers, a smaller prefetch); " +
             v.action;
    }
  }
  if (v.label == "time_limit") {
    std::string limit = scheduler_value(r.scheduler_lines, "TimeLimit");
    if (!limit.empty() && limit != "UNLIMITED") {
      return "the job reached its " + limit + " time limit: " + v.action;
    }
  }
  return v.action;
}

std::string ending_phrase(const report::RunReport& r) {
  std::string s;
  if (r.state == "stalled") {
    return "running for " + util::human_duration(r.duration_s);
  }
  if (r.signal) {
    s = "killed by " + *r.signal;
  } else if (r.exit_code) {
    s = "exit " + std::to_string(*r.exit_code);
  } else {
    s = "ended";
  }
  return s + " after " + util::human_duration(r.duration_s);
}

std::string scheduler_job_id(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  if (!get("SLURM_ARRAY_JOB_ID").empty() && !get("SLURM_ARRAY_TASK_ID").empty()) {
    return get("SLURM_ARRAY_JOB_ID") + "_" + get("SLURM_ARRAY_TASK_ID");
  }
  for (const char* k : {"SLURM_JOB_ID", "LSB_JOBID", "PBS_JOBID"}) {
    if (!get(k).empty()) {
      return get(k);
    }
  }
  return "";
}

std::string decisive_line(const report::RunReport& r) {
  if (!r.verdict) {
    return "";
  }
  for (const auto& e : r.verdict->evidence) {
    if (e.source == "log" || e.source == "kernel" || e.source == "scheduler" || e.source == "gpu") {
      std::string text = mask_secrets(clean_log_line(std::string(util::trim_blanks(e.text))));
      if (text.size() > 90) {
        size_t cut = 87;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
          --cut;  // not inside a UTF-8 sequence
        }
        text = text.substr(0, cut) + "...";
      }
      return text;
    }
  }
  return "";
}

std::string build_subject(const report::RunReport& r) {
  std::string name = sanitize_header_value(r.name.empty() ? "job" : r.name, 80);
  std::string host = sanitize_header_value(r.host.empty() ? "unknown host" : r.host, 64);
  if (auto d = digest_text(r)) {
    // One notice for the whole array: its id with the range of indices, then the counts.
    std::string array = group_str(*r.array_digest, "array_job_id");
    bool failed = r.array_digest->value("failed", 0) > 0;
    return sanitize_header_value("[gpualert] " + std::string(failed ? "FAILED " : "succeeded: ") +
                                     d->head + " (" + d->counts + ") | array job " + array + "_* " +
                                     name + " on " + host,
                                 300);
  }
  std::string head;
  bool ok = is_success(r);
  const bool stalled = r.state == "stalled" && r.stall;
  if (stalled) {
    head = r.stall->action == "kill" ? "STALLED, stopping it" : "STALLED";
  } else if (ok && r.verdict && !r.verdict->caveats.empty()) {
    head = "succeeded, but " + sanitize_header_value(r.verdict->caveats.front(), 80);
  } else if (ok) {
    head = "succeeded";
  } else if (r.verdict && !r.verdict->label.empty()) {
    head = "FAILED " + sanitize_header_value(r.verdict->label, 40);
  } else {
    head = "FAILED";
  }
  // Readable on a phone: the outcome, the cause's own words, then which job.
  std::string what = stalled ? "no output for " + util::human_duration(r.stall->after_s)
                     : ok    ? ""
                             : decisive_line(r);
  std::string who;
  if (std::string id = scheduler_job_id(r.env); !id.empty()) {
    who += "job " + id + " ";
  }
  who += name;
  bool ranked = false;
  for (const char* k : {"RANK", "SLURM_PROCID"}) {
    if (auto it = r.env.find(k); it != r.env.end() && !it->second.empty() && it->second != "0") {
      who += " rank " + it->second;
      ranked = true;
      break;
    }
  }
  if (r.job_group && r.job_group->is_object()) {
    std::string rank = group_str(*r.job_group, "rank");
    if (!ranked && !rank.empty() && rank != "0") {
      who += " rank " + sanitize_header_value(rank, 20);
    }
    if (!group_str(*r.job_group, "own_why").empty()) {
      who += " (own notice)";  // the other ranks could not be seen: they send theirs
    } else if (group_str(*r.job_group, "role") == "all_succeeded") {
      who += " (all ranks)";
    }
  }
  return sanitize_header_value("[gpualert] " + head + ": " + (what.empty() ? "" : what + " | ") +
                                   who + " on " + host + " (" + ending_phrase(r) + ")",
                               300);
}

std::string stall_summary(const report::RunReport& r) {
  if (!r.stall || r.state == "stalled") {
    return "";
  }
  const auto& s = *r.stall;
  std::string line = "Stalled " + util::human_duration(s.at_s) + " into the run (no output for " +
                     util::human_duration(s.after_s) + ")";
  if (s.killed) {
    line += "; gpualert --stall-action kill stopped it";
  } else if (s.resumed_at_s) {
    line += "; output resumed at " + util::human_duration(*s.resumed_at_s) +
            " and the job went on by itself";
  } else {
    line += "; it printed nothing more before it ended";
  }
  if (!s.notice.empty()) {
    line += " (stall notice: " + s.notice + ")";
  }
  return line;
}

Bodies build_bodies(const report::RunReport& r, const LogExcerpt& ex,
                    const std::vector<Attachment>& attachments, uint64_t budget, bool gpu_chart,
                    const std::vector<std::string>& gpus_now) {
  std::string t, h;
  std::string title = one_line(headline(r));
  bool ok = is_success(r);
  const bool stalled = r.state == "stalled" && r.stall;
  bool banner_ok = ok;  // a digest's colour is the array's
  if (auto d = digest_text(r)) {
    banner_ok = r.array_digest->value("failed", 0) == 0;
    title = one_line("Array job " + group_str(*r.array_digest, "array_job_id") + ": " + d->head +
                     " (" + r.name + ")");
  }
  t += title + "\n";
  h += "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head>"
       "<body style=\"font-family:-apple-system,Segoe "
       "UI,Helvetica,Arial,sans-serif;font-size:14px;color:#24292f;max-width:900px\">";
  h += "<div style=\"font-size:18px;font-weight:bold;padding:8px 12px;color:#fff;background:" +
       std::string(stalled     ? "#9a6700"
                   : banner_ok ? "#1a7f37"
                               : "#cf222e") +
       "\">" + html_escape(title) + "</div>";
  if (stalled) {
    const auto& s = *r.stall;
    std::vector<std::string> lines = {
        "No output for " + util::human_duration(s.after_s) + ": the job's last output came " +
            util::human_duration(std::max(0.0, s.at_s - s.after_s)) +
            " into the run, and nothing since.",
        s.action == "kill"
            ? "gpualert --stall-action kill is stopping it (SIGTERM, then SIGKILL after "
              "--kill-after); the final notice says how it ended."
            : "The job was left running; its final notice comes when it ends. A job that prints "
              "nothing for long stretches needs a larger --stall."};
    for (const auto& l : lines) {
      t += l + "\n";
      h += "<p style=\"margin:8px 0 4px 0\">" + html_escape(l) + "</p>";
    }
    if (!gpus_now.empty()) {
      t += "\nGPUs at the last reading\n";
      h += "<h2 style=\"" + std::string(k_h2) + "\">GPUs at the last reading</h2><ul>";
      for (const auto& g : gpus_now) {
        t += "  " + g + "\n";
        h += "<li>" + html_escape(g) + "</li>";
      }
      h += "</ul>";
    }
  }
  if (std::string s = stall_summary(r); !s.empty()) {
    t += s + "\n";
    h += "<p style=\"margin:10px 0 4px 0;color:#9a6700\"><b>" + html_escape(one_line(s)) +
         "</b></p>";
  }

  if (r.verdict) {
    const auto& v = *r.verdict;
    std::string what = "Verdict: " + v.label +
                       (v.group.empty() || v.group == "-" ? "" : " (" + v.group + ")") +
                       (v.rule.empty() ? "" : ", rule " + v.rule);
    t += what + "\n";
    h += "<p style=\"margin:10px 0 4px 0\"><b>" + html_escape(what) + "</b></p>";
    for (const auto& c : v.caveats) {
      std::string but = "But: " + mask_secrets(c);
      t += but + "\n";
      h += "<p style=\"margin:4px 0;color:#9a6700\"><b>" + html_escape(but) + "</b></p>";
    }
    if (!v.confidence.empty()) {
      std::string sure = "How sure: " + mask_secrets(v.confidence);
      t += sure + "\n";
      h += "<p style=\"margin:4px 0;color:#57606a\">" + html_escape(sure) + "</p>";
    }
    if (std::string action = first_action(r); !action.empty() && action != "none") {
      t += "First action: " + action + "\n";
      h += "<p style=\"margin:4px 0\">First action: <b>" + html_escape(action) + "</b></p>";
    }
    if (auto sched = scheduler_facts(r); !sched.empty()) {
      t += "Scheduler:";
      for (const auto& fact : sched) {
        t += (&fact == &sched.front() ? " " : "; ") + fact.key + " " + fact.value;
      }
      t += "\n";
      h += html_table(sched);
    }
  }
  if (std::string g = ok ? "" : failing_gpu_line(r); !g.empty()) {
    t += g + "\n";
    h += "<p style=\"margin:4px 0\">" + html_escape(g) + "</p>";
  }
  if (auto d = digest_text(r)) {
    std::string lead = "Array job " + group_str(*r.array_digest, "array_job_id") + ": " + d->head +
                       " (" + d->counts + ").";
    t += "\n" + lead + "\n";
    h += "<p style=\"margin:10px 0 4px 0\"><b>" + html_escape(lead) + "</b></p>";
    add_list(t, h, "Failing members:", d->failing);
    std::string rest = "Below: the last member to end, " + scheduler_job_id(r.env) + ".";
    t += rest + "\n";
    h += "<p style=\"margin:4px 0;color:#57606a\">" + html_escape(rest) + "</p>";
  }
  if (auto g = group_text(r)) {
    t += "\n" + g->lead + "\n";
    h += "<p style=\"margin:10px 0 4px 0\"><b>" + html_escape(g->lead) + "</b></p>";
    add_list(t, h, "The others:", g->others);
  }

  if (!ex.evidence.empty()) {
    t += "\nEvidence\n";
    h += "<h2 style=\"" + std::string(k_h2) + "\">Evidence</h2>";
    for (const auto& w : ex.evidence) {
      t += "  " + where_label(w) + ":\n";
      h += "<div style=\"font-size:13px;color:#57606a\">" + html_escape(where_label(w)) +
           "</div><pre style=\"" + k_pre + "\">";
      if (w.context.empty()) {
        t += "    " + w.text + "\n";
        h += html_escape(w.text);
      }
      for (const auto& q : w.context) {
        char num[32];
        std::snprintf(num, sizeof num, "%7llu", static_cast<unsigned long long>(q.number));
        bool hit = q.number == w.hit;
        t += std::string(hit ? "  > " : "    ") + num + " | " + q.text + "\n";
        std::string line = std::string(num) + " | " + html_escape(q.text);
        h += hit ? "<span style=\"background:#ffebe9;font-weight:bold\">" + line + "</span>\n"
                 : line + "\n";
      }
      h += "</pre>";
    }
  }

  if (r.verdict && !r.verdict->fields.empty()) {
    std::vector<Fact> fields;
    t += "\nExtracted\n";
    for (const auto& [k, v] : r.verdict->fields) {
      fields.push_back({one_line(k), one_line(v)});
      t += "  " + k + ": " + fields.back().value + "\n";
    }
    h += "<h2 style=\"" + std::string(k_h2) + "\">Extracted</h2>" + html_table(fields);
  }

  if (auto rows = gpu_rows(r); !rows.empty()) {
    const std::vector<std::string> head = {"GPU",       "Name",      "PCI",
                                           "Memory",    "Peak used", "Last used",
                                           "Last util", "Xids",      "ECC uncorrected (+)"};
    t += "\nGPUs\n";
    h += "<h2 style=\"" + std::string(k_h2) +
         "\">GPUs</h2><table style=\"border-collapse:collapse\"><tr>";
    for (const auto& c : head) {
      h += "<th style=\"" + std::string(k_td) + ";text-align:left\">" + html_escape(c) + "</th>";
    }
    h += "</tr>";
    for (const auto& row : rows) {
      t += "  GPU " + row[0] + ": " + row[1] + " (" + row[2] + "), " + row[3] + ", peak " + row[4] +
           ", last " + row[5] + ", util " + row[6] + ", Xids " + row[7] + ", ECC uncorrected +" +
           row[8] + "\n";
      h += "<tr>";
      for (const auto& c : row) {
        h += "<td style=\"" + std::string(k_td) + "\">" + html_escape(c) + "</td>";
      }
      h += "</tr>";
    }
    h += "</table>";
    if (gpu_chart) {
      h +=
          std::string("<p style=\"margin:6px 0 0 0\"><img src=\"cid:") + k_gpu_chart_cid +
          "\" width=\"640\" height=\"160\" alt=\"GPU memory and utilisation over the run\"></p>"
          "<div style=\"font-size:12px;color:#57606a\">Memory used of each GPU's total (solid) and "
          "utilisation (light), 0-100 %, from the start to the job's end (red line).</div>";
    }
  }

  auto facts = run_facts(r);
  t += "\nRun\n";
  for (const auto& f : facts) {
    t += "  " + f.key + ": " + f.value + "\n";
  }
  h += "<h2 style=\"" + std::string(k_h2) + "\">Run</h2>" + html_table(facts);

  if (!r.warnings.empty()) {
    t += "\nWarnings\n";
    h += "<h2 style=\"" + std::string(k_h2) + "\">Warnings</h2><ul>";
    for (const auto& w : r.warnings) {
      std::string clean = one_line(w);
      t += "  - " + clean + "\n";
      h += "<li>" + html_escape(clean) + "</li>";
    }
    h += "</ul>";
  }

  std::string tail_title = "Last " + std::to_string(ex.tail.size()) + " lines of the log";
  t += "\n" + tail_title + (ex.tail_cut ? "" : " (all of it)") + "\n";
  h += "<h2 style=\"" + std::string(k_h2) + "\">" + html_escape(tail_title) + "</h2><pre style=\"" +
       k_pre + "\">";
  if (!ex.error.empty()) {
    t += "  (" + ex.error + ")\n";
    h += html_escape("(" + ex.error + ")");
  }
  for (const auto& line : ex.tail) {
    t += "  " + line + "\n";
    h += html_escape(line) + "\n";
  }
  h += "</pre>";

  // The signature line, last in both parts.
  auto ending = [&](const std::string& footer) {
    t += "\n-- \n" + one_line(footer) + "\n";
    h += "<p style=\"margin-top:18px;font-size:12px;color:#57606a\">" +
         html_escape(one_line(footer)) + "</p></body></html>\n";
    return Bodies{t, h};
  };
  if (stalled) {  // no attachments: the final notice carries them
    return ending("Log so far: " + r.log_path + " on " + r.host + ". Sent by gpualert --stall.");
  }
  std::vector<Fact> rows;
  std::string att_title = "Attachments (budget " + util::human_size(budget) + ")";
  t += "\n" + att_title + "\n";
  h += "<h2 style=\"" + std::string(k_h2) + "\">" + html_escape(att_title) + "</h2>";
  h += "<table style=\"border-collapse:collapse\"><tr><th style=\"" + std::string(k_td) +
       ";text-align:left\">file</th><th style=\"" + k_td +
       ";text-align:left\">size</th><th style=\"" + k_td +
       ";text-align:left\">status</th><th style=\"" + k_td + ";text-align:left\">path</th></tr>";
  for (const auto& a : attachments) {
    std::string status = a.attached ? "attached" : "NOT attached";
    if (!a.note.empty()) {
      status += ": " + a.note;
    }
    std::string path = one_line(a.path);
    t += "  " + one_line(a.name) + "  " + util::human_size(a.size) + "  " + one_line(status) +
         "\n    " + path + "\n";
    h += "<tr><td style=\"" + std::string(k_td) + "\">" + html_escape(one_line(a.name)) +
         "</td><td style=\"" + k_td + ";white-space:nowrap\">" + util::human_size(a.size) +
         "</td><td style=\"" + k_td + (a.attached ? "" : ";color:#cf222e") + "\">" +
         html_escape(one_line(status)) + "</td><td style=\"" + k_td + "\">" + html_escape(path) +
         "</td></tr>";
  }
  h += "</table>";

  return ending("Full log: " + r.log_path + " on " + r.host + ". Sent by gpualert.");
}

}  // namespace notify
