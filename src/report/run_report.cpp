#include "report/run_report.hpp"

#include "report/secrets.hpp"
#include "util/fd.hpp"
#include "util/signals.hpp"
#include "util/text.hpp"

namespace report {

using nlohmann::json;

namespace {

// Paths, arguments and names are bytes on Linux, and JSON strings are UTF-8: a
// value that is not valid UTF-8 is written readable under `key` (U+FFFD for each
// byte that is not) and exactly, in base64, under `key`_b64, which readers prefer.
void put_bytes(json& j, const std::string& key, const std::string& value) {
  if (util::is_valid_utf8(value)) {
    j[key] = value;
    return;
  }
  j[key] = util::valid_utf8(value);
  j[key + "_b64"] = util::base64_encode(value);
}

void put_bytes(json& j, const std::string& key, const std::vector<std::string>& values) {
  json readable = json::array(), exact = json::array();
  bool all_valid = true;
  for (const auto& v : values) {
    all_valid = all_valid && util::is_valid_utf8(v);
    readable.push_back(util::valid_utf8(v));
    exact.push_back(util::base64_encode(v));
  }
  j[key] = readable;
  if (!all_valid) {
    j[key + "_b64"] = exact;
  }
}

std::optional<std::string> exact_bytes(const json& j, const std::string& key) {
  if (auto it = j.find(key + "_b64"); it != j.end() && it->is_string()) {
    return util::base64_decode(it->get<std::string>());
  }
  return std::nullopt;
}

void get_bytes(const json& j, const std::string& key, std::string& out) {
  if (auto exact = exact_bytes(j, key)) {
    out = std::move(*exact);
  } else if (auto it = j.find(key); it != j.end() && it->is_string()) {
    out = it->get<std::string>();
  }
}

void get_bytes(const json& j, const std::string& key, std::vector<std::string>& out) {
  if (auto it = j.find(key + "_b64"); it != j.end() && it->is_array()) {
    std::vector<std::string> values;
    for (const auto& e : *it) {
      auto v = e.is_string() ? util::base64_decode(e.get<std::string>()) : std::nullopt;
      if (!v) {
        values.clear();
        break;
      }
      values.push_back(std::move(*v));
    }
    if (values.size() == it->size()) {
      out = std::move(values);
      return;
    }
  }
  if (auto it = j.find(key); it != j.end() && it->is_array()) {
    out = it->get<std::vector<std::string>>();
  }
}

// Text quoted from the job or its environment: masked, and made valid UTF-8.
std::string masked_text(std::string_view text) { return util::valid_utf8(mask_secrets(text)); }

json verdict_json(const model::Verdict& v) {
  json fields = json::object();
  for (const auto& [k, value] : v.fields) {
    fields[util::valid_utf8(k)] = masked_text(value);
  }
  json ev = json::array();
  for (const auto& e : v.evidence) {
    ev.push_back({{"line", e.line}, {"text", masked_text(e.text)}, {"source", e.source}});
  }
  json j = {{"label", v.label},   {"rule", v.rule}, {"group", v.group},
            {"action", v.action}, {"evidence", ev}, {"fields", fields}};
  if (!v.confidence.empty()) {
    j["confidence"] = masked_text(v.confidence);
  }
  if (!v.caveats.empty()) {
    json c = json::array();
    for (const auto& x : v.caveats) {
      c.push_back(masked_text(x));
    }
    j["caveats"] = c;
  }
  return j;
}

template <typename T>
void get_if(const json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) {
    out = it->get<T>();
  }
}

}  // namespace

json to_json(const RunReport& r) {
  // Secrets in the command and the environment are masked (report/secrets.hpp):
  // report.json is read by people, attached to webhooks and kept for months.
  std::vector<std::string> masked_argv = mask_argv(r.argv);
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : r.env) {
    env[util::valid_utf8(k)] = masked_text(v);
  }
  std::map<std::string, std::string> sources;
  for (const auto& [k, v] : r.sources) {
    sources[util::valid_utf8(k)] = util::valid_utf8(v);
  }
  std::vector<std::string> warnings;
  for (const auto& w : r.warnings) {
    warnings.push_back(masked_text(w));
  }
  std::vector<std::string> scheduler_lines;
  for (const auto& l : r.scheduler_lines) {
    scheduler_lines.push_back(masked_text(l));
  }
  json j = {
      {"host", util::valid_utf8(r.host)},
      {"started", r.started},
      {"ended", r.ended},
      {"duration_s", r.duration_s},
      {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
      {"signal", r.signal ? json(*r.signal) : json(nullptr)},
      {"core_dumped", r.core_dumped},
      {"wrapper_timeout", r.wrapper_timeout},
      {"log_bytes", r.log_bytes},
      {"log_fallback", r.log_fallback ? json(util::valid_utf8(*r.log_fallback)) : json(nullptr)},
      {"env", env},
      {"sources", sources},
      {"kernel_log_read", r.kernel_log_read},
      {"warnings", warnings},
      {"state", r.state},
  };
  if (r.cgroup_memory_peak) {
    j["cgroup_memory_peak"] = *r.cgroup_memory_peak;
  }
  if (r.reconstructed) {
    j["reconstructed"] = util::valid_utf8(*r.reconstructed);
  }
  if (r.stall) {
    nlohmann::json s = {{"after_s", r.stall->after_s},
                        {"action", r.stall->action},
                        {"at_s", r.stall->at_s},
                        {"killed", r.stall->killed},
                        {"resumed", r.stall->resumed_at_s.has_value()}};
    if (r.stall->resumed_at_s) {
      s["resumed_at_s"] = *r.stall->resumed_at_s;
    }
    if (!r.stall->notice.empty()) {
      s["notice"] = util::valid_utf8(r.stall->notice);
    }
    j["stall"] = s;
  }
  if (!r.held_notices.empty()) {
    j["held_notices"] = r.held_notices;
  }
  if (r.interactive) {
    j["interactive"] = true;
  }
  put_bytes(j, "name", mask_secrets(r.name));
  put_bytes(j, "command", mask_secrets(r.command));
  put_bytes(j, "argv", masked_argv);
  put_bytes(j, "cwd", r.cwd);
  put_bytes(j, "user", r.user);
  put_bytes(j, "run_dir", r.run_dir);
  put_bytes(j, "log", r.log_path);
  // Only when the counter could be read, so that `gpualert classify` on the run
  // directory sees the host facts the run saw.
  if (!scheduler_lines.empty()) {
    j["scheduler_lines"] = scheduler_lines;
  }
  if (r.cgroup_oom_kills) {
    j["cgroup_oom_kills"] = *r.cgroup_oom_kills;
  }
  if (r.gpus) {
    j["gpus"] = *r.gpus;
  }
  if (!r.gpu_lines.empty()) {
    j["gpu_lines"] = r.gpu_lines;
  }
  if (r.job_group) {
    j["job_group"] = *r.job_group;
  }
  if (r.array_digest) {
    j["array_digest"] = *r.array_digest;
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

std::string to_text(const RunReport& r) {
  // Every string was made valid above; `replace` is the last guard, so that writing
  // the report can never throw on the way to the job's exit status.
  return to_json(r).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

util::Result<RunReport> from_json(const json& j) {
  if (!j.is_object()) {
    return util::Error{std::string("report.json: not a JSON object but ") + j.type_name()};
  }
  try {
    RunReport r;
    get_bytes(j, "name", r.name);
    get_bytes(j, "command", r.command);
    get_bytes(j, "argv", r.argv);
    get_bytes(j, "cwd", r.cwd);
    get_if(j, "host", r.host);
    get_bytes(j, "user", r.user);
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
    get_if(j, "interactive", r.interactive);
    get_bytes(j, "run_dir", r.run_dir);
    get_bytes(j, "log", r.log_path);
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
    if (j.contains("gpus") && j["gpus"].is_array()) {
      r.gpus = j["gpus"];
    }
    get_if(j, "gpu_lines", r.gpu_lines);
    if (j.contains("job_group") && j["job_group"].is_object()) {
      r.job_group = j["job_group"];
    }
    if (j.contains("array_digest") && j["array_digest"].is_object()) {
      r.array_digest = j["array_digest"];
    }
    get_if(j, "warnings", r.warnings);
    get_if(j, "state", r.state);
    if (j.contains("cgroup_memory_peak") && j["cgroup_memory_peak"].is_number_unsigned()) {
      r.cgroup_memory_peak = j["cgroup_memory_peak"].get<uint64_t>();
    }
    if (j.contains("reconstructed") && j["reconstructed"].is_string()) {
      r.reconstructed = j["reconstructed"].get<std::string>();
    }
    get_if(j, "held_notices", r.held_notices);
    if (auto it = j.find("stall"); it != j.end() && it->is_object()) {
      StallFacts s;
      auto num = [&](const char* k, double& out) {
        if (auto v = it->find(k); v != it->end() && v->is_number()) {
          out = v->get<double>();
        }
      };
      num("after_s", s.after_s);
      num("at_s", s.at_s);
      if (auto v = it->find("resumed_at_s"); v != it->end() && v->is_number()) {
        s.resumed_at_s = v->get<double>();
      }
      if (auto v = it->find("action"); v != it->end() && v->is_string()) {
        s.action = v->get<std::string>();
      }
      if (auto v = it->find("killed"); v != it->end() && v->is_boolean()) {
        s.killed = v->get<bool>();
      }
      if (auto v = it->find("notice"); v != it->end() && v->is_string()) {
        s.notice = v->get<std::string>();
      }
      r.stall = s;
    }
    // Reports written before "state" existed said "provisional:" in a warning.
    if (!j.contains("state")) {
      for (const auto& w : r.warnings) {
        if (w.rfind("provisional:", 0) == 0) {
          r.state = "provisional";
        }
      }
    }
    if (j.contains("label") && j["label"].is_string()) {
      model::Verdict v;
      get_if(j, "label", v.label);
      get_if(j, "rule", v.rule);
      get_if(j, "group", v.group);
      get_if(j, "action", v.action);
      get_if(j, "confidence", v.confidence);
      get_if(j, "caveats", v.caveats);
      get_if(j, "fields", v.fields);
      if (auto it = j.find("evidence"); it != j.end() && it->is_array()) {
        for (const auto& e : *it) {
          model::EvidenceLine line;
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

util::Status save(const std::string& path, const RunReport& r, util::Durability durability) {
  return util::write_file_atomic(path, to_text(r), 0644, durability);
}

util::Result<model::ExitInfo> exit_info(const RunReport& r) {
  model::ExitInfo exit;
  exit.wrapper_timeout = r.wrapper_timeout;
  if (r.signal) {
    int sig = util::signal_number(*r.signal);
    if (sig <= 0) {
      return util::Error{"unknown signal \"" + *r.signal + "\""};
    }
    exit.signal = sig;
  } else {
    exit.exit_code = r.exit_code;
  }
  return exit;
}

model::HostEvidence host_evidence(const RunReport& r) {
  model::HostEvidence host;
  host.cgroup_oom_kills = r.cgroup_oom_kills;
  host.kernel_log_read = r.kernel_log_read;
  host.scheduler_lines = r.scheduler_lines;
  host.gpu_lines = r.gpu_lines;
  return host;
}

}  // namespace report
