#include "host/evidence.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "util/text.hpp"

namespace host {

namespace {
constexpr size_t k_max_kernel_lines = 2000;
}

std::string format_kmsg_record(const std::string& record) {
  // prio,seq,usec,flags;text  (continuation lines start with a space; ignored)
  auto semi = record.find(';');
  if (semi == std::string::npos) {
    return {};
  }
  std::string head = record.substr(0, semi);
  std::string text = record.substr(semi + 1);
  if (auto nl = text.find('\n'); nl != std::string::npos) {
    text.resize(nl);
  }
  unsigned long long usec = 0;
  int prio = 0;
  unsigned long long seq = 0;
  if (std::sscanf(head.c_str(), "%d,%llu,%llu", &prio, &seq, &usec) != 3) {
    return {};
  }
  char stamp[48];
  std::snprintf(stamp, sizeof stamp, "[%5llu.%06llu] ", usec / 1000000, usec % 1000000);
  return stamp + text;
}

bool kernel_line_relevant(const std::string& text) {
  static constexpr const char* k_needles[] = {
      "invoked oom-killer", "Out of memory", "oom-kill:", "oom_reaper", "Killed process",
      "Memory cgroup out of memory", "NVRM:", "Xid", "nvidia", "segfault at", "general protection",
      "memory: usage",
      // AMD's and Intel's GPU drivers: page faults, ring timeouts, resets, hangs.
      "amdgpu", "i915", "GPU HANG"};
  for (const char* n : k_needles) {
    if (text.find(n) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> oom_counter_path(const std::string& content, const std::string& root) {
  std::optional<std::string> v2;
  for (std::string_view line : util::split_lines(content)) {
    // "4:memory:/path" (v1) or "0::/path" (v2)
    auto c1 = line.find(':');
    auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) {
      continue;
    }
    std::string_view ctrls = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path(line.substr(c2 + 1));
    if (path == "/") {
      path.clear();
    }
    for (std::string_view rest = ctrls; !rest.empty();) {
      auto comma = rest.find(',');
      if (rest.substr(0, comma) == "memory") {
        return root + "/memory" + path + "/memory.oom_control";
      }
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    if (ctrls.empty() && line.substr(0, 3) == "0::") {
      v2 = root + path + "/memory.events";
      if (::access(v2->c_str(), R_OK) != 0) {
        v2 = root + "/unified" + path + "/memory.events";
      }
    }
  }
  return v2;
}

std::optional<int64_t> parse_oom_kill(std::string_view counters) {
  std::optional<int64_t> out;
  constexpr std::string_view key = "oom_kill ";
  for (std::string_view line : util::split_lines(counters)) {
    if (line.substr(0, key.size()) != key) {
      continue;
    }
    std::string_view digits = line.substr(key.size());
    int64_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc() && end != digits.data()) {
      out = value;
    }
  }
  return out;
}

std::optional<int64_t> read_oom_kill(const std::string& file) {
  auto text = util::read_file(file);
  if (!text) {
    return std::nullopt;
  }
  return parse_oom_kill(*text);
}

void EvidenceWatch::open_kernel_log() {
  m_kmsg.reset(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (m_kmsg.valid()) {
    ::lseek(m_kmsg.get(), 0, SEEK_END);
    m_kernel_log_read = true;
    m_sources["kernel_log"] = "read (/dev/kmsg)";
  } else {
    m_sources["kernel_log"] = std::string("not available: /dev/kmsg: ") + std::strerror(errno);
  }
}

EvidenceWatch EvidenceWatch::start() {
  EvidenceWatch w;
  w.m_sources["kernel_log"] = "not available: not opened";
  auto content = util::read_file("/proc/self/cgroup");
  if (auto p = content ? oom_counter_path(*content) : std::nullopt) {
    w.m_oom_counter_path = *p;
    w.m_oom_before = read_oom_kill(*p);
  }
  w.m_sources["cgroup_oom"] =
      w.m_oom_before ? "read (" + w.m_oom_counter_path + ")"
                     : std::string("not available: no readable memory cgroup oom_kill counter");
  return w;
}

void EvidenceWatch::finish() {
  if (m_oom_before) {
    m_oom_after = read_oom_kill(m_oom_counter_path);
  }
  if (!m_kmsg.valid()) {
    return;
  }
  std::string rec(8192, '\0');
  for (;;) {
    ssize_t n = ::read(m_kmsg.get(), rec.data(), rec.size());
    if (n < 0 && errno == EPIPE) {
      continue;  // records were overwritten while we were away; go on with the next
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    std::string line = format_kmsg_record(rec.substr(0, static_cast<size_t>(n)));
    if (!line.empty() && kernel_line_relevant(line) && m_kernel_lines.size() < k_max_kernel_lines) {
      m_kernel_lines.push_back(line);
    }
  }
  m_kmsg.reset();
}

std::optional<int64_t> EvidenceWatch::cgroup_oom_kills() const {
  if (m_oom_before && m_oom_after) {
    return *m_oom_after - *m_oom_before;
  }
  return std::nullopt;
}

}  // namespace host
