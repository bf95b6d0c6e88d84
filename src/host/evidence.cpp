#include "host/evidence.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "util/text.hpp"

namespace host {

// ---------------------------------------------------------------- cgroups

namespace {

// Calls f(controllers, path) for each "N:controllers:path" line of /proc/self/cgroup.
template <class F>
void each_cgroup_line(const std::string& content, F&& f) {
  for (std::string_view line : util::split_lines(content)) {
    auto c1 = line.find(':');
    auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) {
      continue;
    }
    f(line.substr(0, c1), line.substr(c1 + 1, c2 - c1 - 1), line.substr(c2 + 1));
  }
}

bool has_memory_controller(std::string_view ctrls) {
  for (std::string_view rest = ctrls; !rest.empty();) {
    auto comma = rest.find(',');
    if (rest.substr(0, comma) == "memory") {
      return true;
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

}  // namespace

std::optional<std::string> oom_counter_path(const std::string& content, const std::string& root) {
  std::optional<std::string> v1, v2;
  each_cgroup_line(content, [&](std::string_view id, std::string_view ctrls, std::string_view p) {
    std::string path(p == "/" ? std::string_view() : p);
    if (!v1 && has_memory_controller(ctrls)) {
      v1 = root + "/memory" + path + "/memory.oom_control";
    } else if (ctrls.empty() && id == "0") {
      v2 = path;
    }
  });
  if (v1 || !v2) {
    return v1;
  }
  // Where the unified hierarchy is mounted: cgroup2 itself, or beside v1 (hybrid).
  std::string events = root + *v2 + "/memory.events";
  return ::access(events.c_str(), R_OK) == 0 ? events : root + "/unified" + *v2 + "/memory.events";
}

std::optional<std::string> memory_cgroup_path(const std::string& content) {
  std::optional<std::string> v1, v2;
  each_cgroup_line(content, [&](std::string_view id, std::string_view ctrls, std::string_view p) {
    if (!v1 && has_memory_controller(ctrls)) {
      v1 = std::string(p);
    } else if (ctrls.empty() && id == "0") {
      v2 = std::string(p);
    }
  });
  std::optional<std::string> path = v1 ? v1 : v2;
  while (path && path->size() > 1 && path->back() == '/') {
    path->pop_back();
  }
  // The root holds every process of the machine (or of a container whose cgroup
  // namespace hides the real path): nothing can be told apart by it.
  if (!path || path->empty() || *path == "/" || path->front() != '/') {
    return std::nullopt;
  }
  return path;
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

// ---------------------------------------------------------------- the watch

void EvidenceWatch::open_kernel_log(pid_t job) {
  m_kmsg.reset(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!m_kmsg.valid()) {
    m_sources["kernel_log"] = std::string("not available: /dev/kmsg: ") + std::strerror(errno);
    return;
  }
  ::lseek(m_kmsg.get(), 0, SEEK_END);
  m_kernel_log_read = true;
  m_sources["kernel_log"] = "read (/dev/kmsg)";
  JobScope scope;
  scope.memcg = m_memcg;
  // Asked when the first GPU record arrives, not on every job's start.
  scope.gpus = [] {
    return job_gpu_bus_ids([](const std::string& name) -> std::optional<std::string> {
      const char* v = std::getenv(name.c_str());
      return v ? std::optional<std::string>(v) : std::nullopt;
    });
  };
  m_filter = std::make_unique<KernelRecordFilter>(
      std::move(scope), job > 0 ? std::make_shared<ProcessTree>(job) : nullptr);
}

EvidenceWatch EvidenceWatch::start() {
  EvidenceWatch w;
  w.m_sources["kernel_log"] = "not available: not opened";
  auto content = util::read_file("/proc/self/cgroup");
  if (auto p = content ? oom_counter_path(*content) : std::nullopt) {
    w.m_oom_counter_path = *p;
    w.m_oom_before = read_oom_kill(*p);
  }
  if (content) {
    w.m_memcg = memory_cgroup_path(*content);
  }
  w.m_sources["cgroup_oom"] =
      w.m_oom_before ? "read (" + w.m_oom_counter_path + ")"
                     : std::string("not available: no readable memory cgroup oom_kill counter");
  return w;
}

std::optional<uint64_t> EvidenceWatch::memory_peak_bytes() const {
  if (m_oom_counter_path.empty()) {
    return std::nullopt;
  }
  std::string dir = m_oom_counter_path.substr(0, m_oom_counter_path.rfind('/'));
  const bool v1 =
      m_oom_counter_path.size() >= 18 &&
      m_oom_counter_path.compare(m_oom_counter_path.size() - 18, 18, "memory.oom_control") == 0;
  auto text = util::read_file(dir + (v1 ? "/memory.max_usage_in_bytes" : "/memory.peak"));
  if (!text) {
    return std::nullopt;
  }
  auto n =
      util::whole_number(util::trim_blanks(std::string_view(*text).substr(0, text->find('\n'))));
  return n ? std::optional<uint64_t>(*n) : std::nullopt;
}

void EvidenceWatch::on_readable() {
  if (!m_kmsg.valid()) {
    return;
  }
  // One read is one record, and needs room for the longest (8 KiB, else EINVAL).
  m_record.resize(8192);
  for (;;) {
    ssize_t n = ::read(m_kmsg.get(), m_record.data(), m_record.size());
    if (n < 0 && errno == EPIPE) {
      ++m_overruns;  // records were overwritten before they were read; go on with the next
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    std::string line = format_kmsg_record(m_record.substr(0, static_cast<size_t>(n)));
    auto text_at = line.find("] ");
    if (line.empty() || text_at == std::string::npos) {
      continue;
    }
    std::string_view text = std::string_view(line).substr(text_at + 2);
    if (kernel_line_relevant(text)) {
      m_filter->add(text, line);
    }
  }
}

void EvidenceWatch::finish() {
  if (m_oom_before) {
    m_oom_after = read_oom_kill(m_oom_counter_path);
  }
  if (!m_kmsg.valid()) {
    return;
  }
  on_readable();
  m_filter->finish();
  m_kmsg.reset();
  std::string& said = m_sources["kernel_log"];
  if (m_filter->dropped() > 0) {
    said += "; " + std::to_string(m_filter->dropped()) +
            " record(s) about other processes or GPUs left out";
  }
  if (m_overruns > 0) {
    said += "; the kernel overwrote records before they could be read (" +
            std::to_string(m_overruns) + " time(s))";
  }
}

const std::vector<std::string>& EvidenceWatch::kernel_lines() const {
  static const std::vector<std::string> k_none;
  return m_filter ? m_filter->kept() : k_none;
}

std::optional<int64_t> EvidenceWatch::cgroup_oom_kills() const {
  if (m_oom_before && m_oom_after) {
    return *m_oom_after - *m_oom_before;
  }
  return std::nullopt;
}

}  // namespace host
