#include "report/run_report.hpp"

#include "util/fd.hpp"

namespace report {

using nlohmann::json;

namespace {

json verdict_json(const classify::Verdict& v) {
  json ev = json::array();
  for (const auto& e : v.evidence) {
    ev.push_back({{"line", e.line}, {"text", e.text}, {"source", e.source}});
  }
  return {{"label", v.label},   {"rule", v.rule}, {"group", v.group},
          {"action", v.action}, {"evidence", ev}, {"fields", v.fields}};
}

template <typename T>
void get_if(const json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) {
    out = it->get<T>();
  }
}

}  // namespace

json to_json(const RunReport& r) {
  json j = {
      {"name", r.name},
      {"command", r.command},
      {"argv", r.argv},
      {"cwd", r.cwd},
      {"host", r.host},
      {"user", r.user},
      {"started", r.started},
      {"ended", r.ended},
      {"duration_s", r.duration_s},
      {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
      {"signal", r.signal ? json(*r.signal) : json(nullptr)},
      {"core_dumped", r.core_dumped},
      {"wrapper_timeout", r.wrapper_timeout},
      {"run_dir", r.run_dir},
      {"log", r.log_path},
      {"log_bytes", r.log_bytes},
      {"log_fallback", r.log_fallback ? json(*r.log_fallback) : json(nullptr)},
      {"env", r.env},
      {"sources", r.sources},
      {"kernel_log_read", r.kernel_log_read},
      {"warnings", r.warnings},
      {"state", r.state},
  };
  if (r.reconstructed) {
    j["reconstructed"] = *r.reconstructed;
  }
  if (!r.held_notices.empty()) {
    j["held_notices"] = r.held_notices;
  }
  // Only when the counter could be read, so that `gpualert classify` on the run
  // directory sees the host facts the run saw.
  if (!r.scheduler_lines.empty()) {
    j["scheduler_lines"] = r.scheduler_lines;
  }
  if (r.cgroup_oom_kills) {
    j["cgroup_oom_kills"] = *r.cgroup_oom_kills;
  }
  // Diagnosis keys are present only once a classifier decided: absent, not invented.
  if (r.verdict) {
    json v = verdict_json(*r.verdict);
    for (auto it = v.begin(); it != v.end(); ++it) {
      j[it.key()] = it.value();
    }
  }
  return j;
}

util::Result<RunReport> from_json(const json& j) {
  try {
    RunReport r;
    get_if(j, "name", r.name);
    get_if(j, "command", r.command);
    get_if(j, "argv", r.argv);
    get_if(j, "cwd", r.cwd);
    get_if(j, "host", r.host);
    get_if(j, "user", r.user);
    get_if(j, "started", r.started);
    get_if(j, "ended", r.ended);
    get_if(j, "duration_s", r.duration_s);
    if (j.contains("exit_code") && !j["exit_code"].is_null()) {
      r.exit_code = j["exit_code"].get<int>();
    }
    if (j.contains("signal") && !j["signal"].is_null()) {
      r.signal = j["signal"].get<std::string>();
    }
    get_if(j, "core_dumped", r.core_dumped);
    get_if(j, "wrapper_timeout", r.wrapper_timeout);
    get_if(j, "run_dir", r.run_dir);
    get_if(j, "log", r.log_path);
    get_if(j, "log_bytes", r.log_bytes);
    if (j.contains("log_fallback") && !j["log_fallback"].is_null()) {
      r.log_fallback = j["log_fallback"].get<std::string>();
    }
    get_if(j, "env", r.env);
    get_if(j, "sources", r.sources);
    get_if(j, "kernel_log_read", r.kernel_log_read);
    if (j.contains("scheduler_lines") && j["scheduler_lines"].is_array()) {
      for (const auto& l : j["scheduler_lines"]) {
        if (l.is_string()) {
          r.scheduler_lines.push_back(l.get<std::string>());
        }
      }
    }
    if (j.contains("cgroup_oom_kills") && j["cgroup_oom_kills"].is_number_integer()) {
      r.cgroup_oom_kills = j["cgroup_oom_kills"].get<int64_t>();
    }
    get_if(j, "warnings", r.warnings);
    get_if(j, "state", r.state);
    if (j.contains("reconstructed") && j["reconstructed"].is_string()) {
      r.reconstructed = j["reconstructed"].get<std::string>();
    }
    get_if(j, "held_notices", r.held_notices);
    // Reports written before "state" existed said "provisional:" in a warning.
    if (!j.contains("state")) {
      for (const auto& w : r.warnings) {
        if (w.rfind("provisional:", 0) == 0) {
          r.state = "provisional";
        }
      }
    }
    if (j.contains("label") && j["label"].is_string()) {
      classify::Verdict v;
      get_if(j, "label", v.label);
      get_if(j, "rule", v.rule);
      get_if(j, "group", v.group);
      get_if(j, "action", v.action);
      get_if(j, "fields", v.fields);
      if (auto it = j.find("evidence"); it != j.end() && it->is_array()) {
        for (const auto& e : *it) {
          classify::EvidenceLine line;
          get_if(e, "line", line.line);
          get_if(e, "text", line.text);
          get_if(e, "source", line.source);
          v.evidence.push_back(std::move(line));
        }
      }
      r.verdict = std::move(v);
    }
    return r;
  } catch (const json::exception& e) {
    return util::Error{std::string("report.json: ") + e.what()};
  }
}

util::Result<RunReport> load(const std::string& path) {
  auto text = util::read_file(path);
  if (!text) {
    return util::Error{text.error()};
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return util::Error{path + ": not valid JSON"};
  }
  auto r = from_json(j);
  if (!r) {
    return util::Error{path + ": " + r.error()};
  }
  return r;
}

}  // namespace report
