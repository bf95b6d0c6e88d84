#include "classify/case_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "classify/taxonomy.hpp"
#include "report/run_report.hpp"

namespace classify {

namespace fs = std::filesystem;

namespace {

constexpr size_t k_chunk = 1 << 20;

util::Result<nlohmann::json> read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return util::errno_error("open " + path);
  }
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return util::Error{path + ": invalid JSON: " + e.what()};
  }
}

// Reads exit_code / signal / wrapper_timeout and the host facts from a corpus case's
// case.json (report.json is read by report::load, its one reader).
util::Status read_exit(const nlohmann::json& j, const std::string& path, CaseFacts& facts) {
  if (!j.is_object()) {
    return util::Error{path + ": expected a JSON object"};
  }
  if (j.contains("exit_code") && j["exit_code"].is_number_integer()) {
    facts.exit.exit_code = j["exit_code"].get<int>();
    facts.exit_known = true;
  }
  if (j.contains("signal") && !j["signal"].is_null()) {
    int sig = 0;
    if (j["signal"].is_string()) {
      sig = parse_signal(j["signal"].get<std::string>());
    } else if (j["signal"].is_number_integer()) {
      sig = j["signal"].get<int>();
    }
    if (sig <= 0) {
      return util::Error{path + ": unknown signal " + j["signal"].dump()};
    }
    facts.exit.signal = sig;
    facts.exit.exit_code.reset();
    facts.exit_known = true;
  }
  if (j.contains("wrapper_timeout") && j["wrapper_timeout"].is_boolean()) {
    facts.exit.wrapper_timeout = j["wrapper_timeout"].get<bool>();
  }
  // report.json of a run that --stall-action kill ended.
  if (j.contains("stall") && j["stall"].is_object() && j["stall"].contains("killed") &&
      j["stall"]["killed"].is_boolean()) {
    facts.exit.stalled = j["stall"]["killed"].get<bool>();
  }
  if (j.contains("cgroup_oom_kills") && j["cgroup_oom_kills"].is_number_integer()) {
    facts.host.cgroup_oom_kills = j["cgroup_oom_kills"].get<int64_t>();
  }
  // Whether the run's kernel log could be read (empty or not).
  // What the scheduler said of a job it ended (as report.json has it).
  if (j.contains("scheduler_lines") && j["scheduler_lines"].is_array()) {
    for (const auto& l : j["scheduler_lines"]) {
      if (l.is_string()) {
        facts.host.scheduler_lines.push_back(l.get<std::string>());
      }
    }
  }
  // NVML's Xid events, as `run` gave them to the classifier (HostEvidence::gpu_lines).
  if (j.contains("gpu_lines") && j["gpu_lines"].is_array()) {
    for (const auto& l : j["gpu_lines"]) {
      if (l.is_string()) {
        facts.host.gpu_lines.push_back(l.get<std::string>());
      }
    }
  }
  if (j.contains("kernel_log_read") && j["kernel_log_read"].is_boolean()) {
    facts.host.kernel_log_read = j["kernel_log_read"].get<bool>();
  }
  return util::ok_status();
}

}  // namespace

int parse_signal(const std::string& name) {
  std::string upper;
  for (char c : name) {
    upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return signal_number(upper);
}

util::Status read_kernel_log(const std::string& path, HostEvidence& host) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return util::errno_error("open " + path);
  }
  std::string line;
  // Kernel logs are small; cap them anyway so a wrong file cannot exhaust memory.
  constexpr size_t k_max_lines = 100000;
  while (host.kernel_lines.size() < k_max_lines && std::getline(in, line)) {
    if (line.size() > 4096) {
      line.resize(4096);
    }
    if (!line.empty()) {
      host.kernel_lines.push_back(line);
    }
  }
  if (in.bad()) {
    return util::errno_error("read " + path);
  }
  return util::ok_status();
}

util::Result<CaseFacts> read_case_facts(const std::string& dir) {
  CaseFacts facts;
  const std::string case_json = (fs::path(dir) / "case.json").string();
  const std::string report_json = (fs::path(dir) / "report.json").string();
  std::error_code ec;
  if (fs::exists(report_json, ec)) {
    auto report = report::load(report_json);
    if (!report) {
      return util::Error{report.error()};
    }
    auto exit = report::exit_info(*report);
    if (!exit) {
      return util::Error{report_json + ": " + exit.error()};
    }
    facts.exit = *exit;
    facts.exit_known = report->exit_code.has_value() || report->signal.has_value();
    facts.host = report::host_evidence(*report);
  }
  if (fs::exists(case_json, ec)) {
    auto j = read_json(case_json);
    if (!j) {
      return util::Error{j.error()};
    }
    CaseFacts from_case;
    from_case.host = facts.host;
    if (auto st = read_exit(*j, case_json, from_case); !st) {
      return util::Error{st.error()};
    }
    if (from_case.exit_known) {
      from_case.exit.wrapper_timeout |= facts.exit.wrapper_timeout;
      from_case.exit.stalled |= facts.exit.stalled;
      facts.exit = from_case.exit;
      facts.exit_known = true;
    }
    facts.host = from_case.host;
    if (j->contains("label") && (*j)["label"].is_string()) {
      facts.label = (*j)["label"].get<std::string>();
    }
    if (j->contains("first_verdict") && (*j)["first_verdict"].is_string()) {
      facts.first_verdict = (*j)["first_verdict"].get<std::string>();
    }
    if (j->contains("batch")) {
      const auto& b = (*j)["batch"];
      if (b.is_string()) {
        facts.batch = b.get<std::string>();
      } else if (b.is_number_integer()) {
        facts.batch = std::to_string(b.get<long long>());
      }
    }
  }
  const std::string kernel = (fs::path(dir) / "kernel.log").string();
  if (fs::exists(kernel, ec)) {
    if (auto st = read_kernel_log(kernel, facts.host); !st) {
      return util::Error{st.error()};
    }
    facts.host.kernel_log_read = true;
  }
  return facts;
}

util::Status scan_file(const std::string& path, Scanner& scanner) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return util::errno_error("open " + path);
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<char> buf(k_chunk);
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      int err = errno;
      ::close(fd);
      return util::errno_error("read " + path, err);
    }
    if (n == 0) {
      break;
    }
    scanner.feed(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  ::close(fd);
  scanner.finish();
  return util::ok_status();
}

}  // namespace classify
