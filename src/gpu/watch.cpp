#include "gpu/watch.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "util/child.hpp"
#include "util/fd.hpp"

extern char** environ;

namespace gpu {

namespace {

std::string helper_path() { return util::sibling_program(k_helper_name); }

}  // namespace

Watch start(const std::string& run_dir, pid_t job_pid, unsigned interval_s) {
  Watch w;
  w.run_dir = run_dir;
  if (interval_s == 0) {
    w.unavailable = "off (gpu_sample_seconds = 0)";
    return w;
  }
  const char* over = std::getenv("GPUALERT_NVIDIA_DRIVER_FILE");
  std::string driver = over != nullptr && *over != '\0' ? over : "/proc/driver/nvidia/version";
  struct stat st;
  if (::stat(driver.c_str(), &st) != 0) {
    w.unavailable = "no NVIDIA driver (" + driver + ": " + std::strerror(errno) + ")";
    return w;
  }
  std::string helper = helper_path();
  if (helper.empty()) {
    w.unavailable = std::string(k_helper_name) + " is not installed beside gpualert";
    return w;
  }
  std::vector<std::string> args = {"--run-dir",  run_dir,
                                   "--interval", std::to_string(interval_s),
                                   "--parent",   std::to_string(::getpid()),
                                   "--job-pid",  std::to_string(job_pid)};
  // It starts with the stop signals blocked (it waits for them with sigtimedwait):
  // a job that ends before the helper reached main still gets its summary. Its own
  // session: the terminal's Ctrl-C and job control are the job's business, the
  // helper ends when `run` says so or when `run` is gone.
  sigset_t stops;
  sigemptyset(&stops);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&stops, s);
  }
  w.pid = util::spawn_quiet(helper, k_helper_name, args, -1, true, &stops);
  int rc = w.pid < 0 ? errno : 0;
  if (rc != 0) {
    w.pid = -1;
    w.unavailable = std::string("cannot start ") + k_helper_name + ": " + std::strerror(rc);
  }
  return w;
}

void finish(Watch& w, report::RunReport& rep) {
  if (w.pid <= 0) {
    rep.sources["gpu"] = w.unavailable;
    return;
  }
  ::kill(w.pid, SIGTERM);
  // It reads the end-of-run counters and writes its summary: a few NVML calls, but
  // nvmlInit alone can take seconds on a host without the persistence daemon.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  bool done = false;
  while (!done) {
    pid_t r = ::waitpid(w.pid, &status, WNOHANG);
    if (r == w.pid || (r < 0 && errno != EINTR)) {
      done = true;
    } else if (std::chrono::steady_clock::now() > deadline) {
      ::kill(w.pid, SIGKILL);
      ::waitpid(w.pid, &status, 0);
      rep.warnings.push_back(std::string(k_helper_name) +
                             " did not finish within 10 s of the job's end and was killed");
      done = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  w.pid = -1;
  if (!read_summary(w.run_dir, rep)) {
    rep.sources["gpu"] = std::string(k_helper_name) + " left no readable " + k_summary_file;
  }
}

bool read_summary(const std::string& run_dir, report::RunReport& rep) {
  std::ifstream in(run_dir + "/" + k_summary_file);
  if (!in) {
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("source") || !j["source"].is_string()) {
    return false;
  }
  rep.sources["gpu"] = j["source"].get<std::string>();
  if (rep.sources["gpu"] == "read" && j.contains("gpus") && j["gpus"].is_array()) {
    rep.gpus = j["gpus"];
  }
  if (j.contains("warnings") && j["warnings"].is_array()) {
    for (const auto& x : j["warnings"]) {
      if (x.is_string()) {
        rep.warnings.push_back("gpu: " + x.get<std::string>());
      }
    }
  }
  return true;
}

std::vector<std::string> xid_lines(const report::RunReport& rep) {
  std::vector<std::string> out;
  if (!rep.gpus || !rep.gpus->is_array()) {
    return out;
  }
  for (const auto& g : *rep.gpus) {
    if (!g.is_object() || !g.contains("xids") || !g["xids"].is_array()) {
      continue;
    }
    // NVML's "00000000:19:00.0" is the kernel's "0000:19:00".
    std::string pci = g.value("pci", "");
    if (pci.size() == 16 && pci[8] == ':') {
      pci = pci.substr(4, 10);
    }
    for (const auto& x : g["xids"]) {
      if (x.is_object() && x.contains("xid") && x["xid"].is_number_unsigned()) {
        out.push_back("NVRM: Xid (PCI:" + pci + "): " + std::to_string(x["xid"].get<uint64_t>()) +
                      ", reported by NVML for " + g.value("uuid", "the job's GPU"));
      }
    }
  }
  return out;
}

}  // namespace gpu
