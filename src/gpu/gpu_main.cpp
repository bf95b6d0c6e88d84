// gpualert-gpu: the GPU helper `run` starts beside the job (see gpu/watch.hpp).
//
// Loads NVML at run time, takes an inventory of the job's GPUs, samples them every
// --interval seconds into gpus.jsonl (bounded: every sample for the first hour,
// then one a minute, then one every ten minutes, and never more than 32 MiB),
// waits for Xid events on another thread, reads the ECC counters at start and end,
// and on SIGTERM (or when `run` is gone) writes gpus-summary.json for `run`.
#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpu/nvml_api.h"
#include "gpu/visible.hpp"
#include "gpu/watch.hpp"

extern char** environ;

namespace {

using json = nlohmann::json;

// NVML's entry points, resolved by name from the loaded library.
struct Nvml {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*parent_of_mig)(nvmlDevice_t, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*serial)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*index)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*ecc_total)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*remapped)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*cuda_version)(int*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;

  std::string err(nvmlReturn_t r) const {
    const char* s = error_string != nullptr ? error_string(r) : nullptr;
    return (s != nullptr ? std::string(s) : "NVML error") + " (" + std::to_string(r) + ")";
  }
};

template <typename F>
void sym(void* lib, F& f, const char* name) {
  f = reinterpret_cast<F>(::dlsym(lib, name));
}

// "" when loaded, else why not. Functions an old driver lacks stay null (optional).
std::string load(Nvml& n) {
  const char* over = std::getenv("GPUALERT_NVML_LIBRARY");
  std::string path = over != nullptr && *over != '\0' ? over : "libnvidia-ml.so.1";
  n.lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (n.lib == nullptr) {
    const char* e = ::dlerror();
    return "cannot load " + path + ": " + (e != nullptr ? e : "dlopen failed");
  }
  sym(n.lib, n.init, "nvmlInit_v2");
  sym(n.lib, n.shutdown, "nvmlShutdown");
  sym(n.lib, n.error_string, "nvmlErrorString");
  sym(n.lib, n.count, "nvmlDeviceGetCount_v2");
  sym(n.lib, n.by_index, "nvmlDeviceGetHandleByIndex_v2");
  sym(n.lib, n.by_uuid, "nvmlDeviceGetHandleByUUID");
  sym(n.lib, n.parent_of_mig, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
  sym(n.lib, n.name, "nvmlDeviceGetName");
  sym(n.lib, n.uuid, "nvmlDeviceGetUUID");
  sym(n.lib, n.serial, "nvmlDeviceGetSerial");
  sym(n.lib, n.index, "nvmlDeviceGetIndex");
  sym(n.lib, n.pci, "nvmlDeviceGetPciInfo_v3");
  sym(n.lib, n.memory, "nvmlDeviceGetMemoryInfo");
  sym(n.lib, n.utilization, "nvmlDeviceGetUtilizationRates");
  sym(n.lib, n.temperature, "nvmlDeviceGetTemperature");
  sym(n.lib, n.power, "nvmlDeviceGetPowerUsage");
  sym(n.lib, n.throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  sym(n.lib, n.ecc_mode, "nvmlDeviceGetEccMode");
  sym(n.lib, n.mig_mode, "nvmlDeviceGetMigMode");
  sym(n.lib, n.ecc_total, "nvmlDeviceGetTotalEccErrors");
  sym(n.lib, n.remapped, "nvmlDeviceGetRemappedRows");
  sym(n.lib, n.driver_version, "nvmlSystemGetDriverVersion");
  sym(n.lib, n.cuda_version, "nvmlSystemGetCudaDriverVersion_v2");
  sym(n.lib, n.event_set_create, "nvmlEventSetCreate");
  sym(n.lib, n.register_events, "nvmlDeviceRegisterEvents");
  sym(n.lib, n.event_wait, "nvmlEventSetWait_v2");
  sym(n.lib, n.event_set_free, "nvmlEventSetFree");
  sym(n.lib, n.processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (n.init == nullptr || n.count == nullptr || n.by_index == nullptr || n.memory == nullptr) {
    return path +
           " lacks nvmlInit_v2, nvmlDeviceGetCount_v2, "
           "nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetMemoryInfo";
  }
  return "";
}

struct Gpu {
  nvmlDevice_t dev = nullptr;
  json info;  // inventory and, at the end, the summary
  unsigned long long peak_used = 0;
  std::optional<unsigned long long> job_peak, job_last;  // the job's processes' own memory
  std::optional<unsigned long long> last_used;
  json last;  // the last sample's readings
  json xids = json::array();
  json ecc_start;
  bool lost = false;
  std::string lost_at;
  uint64_t samples = 0;
  double last_t = 0;  // seconds since start of the last reading while the job ran
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string text_of(const Nvml& n, nvmlReturn_t (*f)(nvmlDevice_t, char*, unsigned),
                    nvmlDevice_t d) {
  if (f == nullptr) {
    return "";
  }
  (void)n;
  char buf[128] = {};
  return f(d, buf, sizeof buf) == NVML_SUCCESS ? std::string(buf) : std::string();
}

json ecc_counters(const Nvml& n, nvmlDevice_t d) {
  json j = json::object();
  if (n.ecc_total != nullptr) {
    const char* names[2][2] = {{"volatile_corrected", "aggregate_corrected"},
                               {"volatile_uncorrected", "aggregate_uncorrected"}};
    for (int type = 0; type < 2; ++type) {
      for (int counter = 0; counter < 2; ++counter) {
        unsigned long long v = 0;
        if (n.ecc_total(d, type, counter, &v) == NVML_SUCCESS) {
          j[names[type][counter]] = v;
        }
      }
    }
  }
  if (n.remapped != nullptr) {
    unsigned corr = 0, unc = 0, pending = 0, failed = 0;
    if (n.remapped(d, &corr, &unc, &pending, &failed) == NVML_SUCCESS) {
      j["remapped_rows_corrected"] = corr;
      j["remapped_rows_uncorrected"] = unc;
      j["remap_pending"] = pending != 0;
      j["remap_failed"] = failed != 0;
    }
  }
  return j;
}

// Whether pid is the job or one of its descendants (walks the parents in /proc).
bool in_job(pid_t pid, pid_t job) {
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    if (pid == job) {
      return true;
    }
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) {
      return false;
    }
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) {
      return false;
    }
    pid = ppid;
  }
  return false;
}

// The GPU memory of the job's own processes, and how many other processes use the GPU.
struct ProcessMemory {
  bool known = false;
  unsigned long long job_bytes = 0;
  unsigned others = 0;
};

ProcessMemory process_memory(const Nvml& n, nvmlDevice_t d, pid_t job) {
  ProcessMemory m;
  if (n.processes == nullptr || job <= 0) {
    return m;
  }
  std::vector<nvmlProcessInfo_t> procs(64);
  for (int attempt = 0; attempt < 3; ++attempt) {
    unsigned count = static_cast<unsigned>(procs.size());
    nvmlReturn_t r = n.processes(d, &count, procs.data());
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
      procs.resize(count + 16);
      continue;
    }
    if (r != NVML_SUCCESS) {
      return m;
    }
    m.known = true;
    for (unsigned i = 0; i < count && i < procs.size(); ++i) {
      if (in_job(static_cast<pid_t>(procs[i].pid), job)) {
        if (procs[i].usedGpuMemory != GPUALERT_NVML_VALUE_NOT_AVAILABLE) {
          m.job_bytes += procs[i].usedGpuMemory;
        }
      } else {
        ++m.others;
      }
    }
    return m;
  }
  return m;
}

// The timeline file, bounded for a multi-week job.
class Timeline {
 public:
  explicit Timeline(const std::string& path) : m_out(path, std::ios::app) {}
  // Events (inventory, Xid, a lost GPU) are always kept; samples thinned with age.
  void event(const json& j) { write(j); }
  bool keep_sample(double age_s, double interval_s) {
    double every = age_s < 3600 ? interval_s : age_s < 86400 ? 60 : 600;
    if (age_s - m_last_kept < every - interval_s / 2 && m_kept > 0) {
      return false;
    }
    m_last_kept = age_s;
    ++m_kept;
    return true;
  }
  void sample(const json& j) {
    if (m_bytes < k_cap) {
      write(j);
    } else {
      m_capped = true;
    }
  }
  bool capped() const { return m_capped; }

 private:
  static constexpr uint64_t k_cap = 32ull << 20;
  void write(const json& j) {
    std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    m_out << line;
    m_out.flush();
    m_bytes += line.size();
  }
  std::ofstream m_out;
  uint64_t m_bytes = 0;
  double m_last_kept = 0;
  uint64_t m_kept = 0;
  bool m_capped = false;
};

void write_summary(const std::string& run_dir, const json& j) {
  std::string path = run_dir + "/" + gpu::k_summary_file;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) {
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return env;
}

int usage() {
  std::fprintf(stderr,
               "usage: gpualert-gpu --run-dir DIR [--interval SECONDS] [--parent PID] "
               "[--job-pid PID]\n(started by `gpualert run`; see docs/gpu.md)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string run_dir;
  unsigned interval = 5;
  pid_t parent = 0;
  pid_t job = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      return usage();
    }
    std::string v = argv[++i];
    char* end = nullptr;
    unsigned long n = std::strtoul(v.c_str(), &end, 10);
    bool numeric = !v.empty() && *end == '\0';
    if (a == "--run-dir") {
      run_dir = v;
    } else if (a == "--interval" && numeric && n > 0 && n < 86400) {
      interval = static_cast<unsigned>(n);
    } else if (a == "--parent" && numeric) {
      parent = static_cast<pid_t>(n);
    } else if (a == "--job-pid" && numeric) {
      job = static_cast<pid_t>(n);
    } else {
      return usage();
    }
  }
  if (run_dir.empty()) {
    return usage();
  }
  // Ends with `run`, even if `run` is killed before it can say so.
  sigset_t stop;
  sigemptyset(&stop);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&stop, s);
  }
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (parent > 0 && ::getppid() != parent) {
    return 0;
  }

  json summary = {{"gpus", json::array()}, {"warnings", json::array()}};
  Nvml n;
  if (std::string why = load(n); !why.empty()) {
    summary["source"] = "unavailable: " + why;
    write_summary(run_dir, summary);
    return 0;
  }
  if (nvmlReturn_t r = n.init(); r != NVML_SUCCESS) {
    summary["source"] = "unavailable: nvmlInit failed: " + n.err(r);
    write_summary(run_dir, summary);
    return 0;
  }
  std::vector<Gpu> gpus;
  unsigned count = 0;
  if (nvmlReturn_t r = n.count(&count); r != NVML_SUCCESS) {
    summary["source"] = "unavailable: nvmlDeviceGetCount failed: " + n.err(r);
    write_summary(run_dir, summary);
    return 0;
  }
  gpu::Selection sel = gpu::job_gpus(environment());
  std::vector<gpu::Selector> wanted = sel.selectors;
  if (sel.all) {
    for (unsigned i = 0; i < count; ++i) {
      wanted.push_back({false, i, ""});
    }
  }
  for (const auto& s : wanted) {
    nvmlDevice_t d = nullptr;
    nvmlReturn_t r = NVML_ERROR_NOT_FOUND;
    if (s.by_uuid && n.by_uuid != nullptr) {
      r = n.by_uuid(s.uuid.c_str(), &d);
      nvmlDevice_t parent_dev = nullptr;
      if (r == NVML_SUCCESS && s.uuid.rfind("MIG-", 0) == 0 && n.parent_of_mig != nullptr &&
          n.parent_of_mig(d, &parent_dev) == NVML_SUCCESS) {
        d = parent_dev;  // the readings and events are the physical GPU's
      }
    } else if (!s.by_uuid) {
      r = n.by_index(s.index, &d);
    }
    std::string what = s.by_uuid ? s.uuid : "index " + std::to_string(s.index);
    if (r != NVML_SUCCESS) {
      summary["warnings"].push_back("the job's GPU " + what + " (" + sel.from +
                                    ") is not known to NVML: " + n.err(r));
      continue;
    }
    Gpu g;
    g.dev = d;
    g.info["job_index"] = gpus.size();
    if (s.by_uuid) {
      g.info["selected_as"] = s.uuid;
    }
    unsigned idx = 0;
    if (n.index != nullptr && n.index(d, &idx) == NVML_SUCCESS) {
      g.info["index"] = idx;
    }
    g.info["name"] = text_of(n, n.name, d);
    g.info["uuid"] = text_of(n, n.uuid, d);
    if (std::string serial = text_of(n, n.serial, d); !serial.empty()) {
      g.info["serial"] = serial;
    }
    nvmlPciInfo_t pci{};
    if (n.pci != nullptr && n.pci(d, &pci) == NVML_SUCCESS) {
      g.info["pci"] = std::string(pci.busId);
    }
    nvmlMemory_t mem{};
    if (n.memory(d, &mem) == NVML_SUCCESS) {
      g.info["memory_total"] = mem.total;
    }
    int cur = 0, pend = 0;
    if (n.ecc_mode != nullptr && n.ecc_mode(d, &cur, &pend) == NVML_SUCCESS) {
      g.info["ecc_mode"] = cur != 0;
    }
    unsigned mcur = 0, mpend = 0;
    if (n.mig_mode != nullptr && n.mig_mode(d, &mcur, &mpend) == NVML_SUCCESS) {
      g.info["mig_mode"] = mcur != 0;
    }
    g.ecc_start = ecc_counters(n, d);
    gpus.push_back(std::move(g));
  }
  char driver[96] = {};
  if (n.driver_version != nullptr && n.driver_version(driver, sizeof driver) == NVML_SUCCESS) {
    summary["driver"] = driver;
  }
  int cuda = 0;
  if (n.cuda_version != nullptr && n.cuda_version(&cuda) == NVML_SUCCESS) {
    summary["cuda"] = std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10);
  }
  summary["selected_by"] = sel.from.empty() ? "all GPUs (no variable restricts the job)" : sel.from;

  Timeline timeline(run_dir + "/gpus.jsonl");
  const double t0 = now_s();
  for (const auto& g : gpus) {
    json inv = g.info;
    inv["type"] = "inventory";
    inv["ecc"] = g.ecc_start;
    if (summary.contains("driver")) {
      inv["driver"] = summary["driver"];
    }
    timeline.event(inv);
  }

  std::mutex mu;  // guards gpus' xids/lost and the timeline between the two threads
  std::atomic<bool> stopping{false};
  std::thread events;
  nvmlEventSet_t set = nullptr;
  if (n.event_set_create != nullptr && n.register_events != nullptr && n.event_wait != nullptr &&
      !gpus.empty() && n.event_set_create(&set) == NVML_SUCCESS) {
    int registered = 0;
    for (auto& g : gpus) {
      nvmlReturn_t r = n.register_events(g.dev, GPUALERT_NVML_XID_EVENT, set);
      if (r == NVML_SUCCESS) {
        ++registered;
      } else {
        summary["warnings"].push_back("Xid events of GPU " + g.info.value("uuid", "?") +
                                      " can't be watched: " + n.err(r));
      }
    }
    if (registered > 0) {
      events = std::thread([&] {
        while (!stopping.load()) {
          nvmlEventData_t e{};
          // Short, since the helper's end (and so `run`'s) waits for the last one.
          nvmlReturn_t r = n.event_wait(set, &e, 200);
          if (r == NVML_ERROR_TIMEOUT) {
            continue;
          }
          if (r != NVML_SUCCESS) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            continue;
          }
          std::lock_guard<std::mutex> lock(mu);
          for (auto& g : gpus) {
            if (g.dev == e.device) {
              json x = {{"type", "xid"},
                        {"t", now_s() - t0},
                        {"at", iso_now()},
                        {"uuid", g.info["uuid"]},
                        {"pci", g.info.value("pci", "")},
                        {"xid", e.eventData}};
              g.xids.push_back({{"xid", e.eventData}, {"at", iso_now()}});
              timeline.event(x);
            }
          }
        }
      });
    }
  }

  // after_end: the job has exited and its memory is freed; those readings go to the
  // timeline only, never into "last" or the peak.
  auto sample = [&](bool after_end) {
    double age = now_s() - t0;
    bool keep = timeline.keep_sample(age, interval);
    for (auto& g : gpus) {
      if (g.lost) {
        continue;
      }
      json s = {{"type", "sample"}, {"t", age}, {"uuid", g.info["uuid"]}};
      if (after_end) {
        s["after_end"] = true;
      }
      nvmlMemory_t mem{};
      nvmlReturn_t r = n.memory(g.dev, &mem);
      if (r == NVML_ERROR_GPU_IS_LOST) {
        std::lock_guard<std::mutex> lock(mu);
        g.lost = true;
        g.lost_at = iso_now();
        timeline.event(
            {{"type", "lost"}, {"t", age}, {"uuid", g.info["uuid"]}, {"error", n.err(r)}});
        continue;
      }
      if (r == NVML_SUCCESS) {
        s["memory_used"] = mem.used;
        if (!after_end) {
          g.last_used = mem.used;
          g.peak_used = std::max(g.peak_used, mem.used);
        }
      }
      if (ProcessMemory pm = process_memory(n, g.dev, job); pm.known) {
        s["job_memory_used"] = pm.job_bytes;
        s["other_processes"] = pm.others;
        if (!after_end) {
          g.job_last = pm.job_bytes;
          g.job_peak = std::max(g.job_peak.value_or(0), pm.job_bytes);
        }
      }
      nvmlUtilization_t u{};
      if (n.utilization != nullptr && n.utilization(g.dev, &u) == NVML_SUCCESS) {
        s["utilization"] = u.gpu;
        s["memory_utilization"] = u.memory;
      }
      unsigned v = 0;
      if (n.temperature != nullptr && n.temperature(g.dev, 0, &v) == NVML_SUCCESS) {
        s["temperature_c"] = v;
      }
      if (n.power != nullptr && n.power(g.dev, &v) == NVML_SUCCESS) {
        s["power_w"] = v / 1000.0;
      }
      unsigned long long reasons = 0;
      if (n.throttle != nullptr && n.throttle(g.dev, &reasons) == NVML_SUCCESS) {
        s["throttle_reasons"] = reasons;
      }
      if (!after_end) {
        ++g.samples;
        g.last_t = age;
        json readings = s;
        readings.erase("type");
        readings.erase("uuid");
        g.last = readings;
      }
      if (keep || after_end) {
        std::lock_guard<std::mutex> lock(mu);
        timeline.sample(s);
      }
    }
  };

  sample(false);
  for (;;) {
    timespec ts{static_cast<time_t>(interval), 0};
    siginfo_t info;
    int sig = ::sigtimedwait(&stop, &info, &ts);
    if (sig > 0 || (parent > 0 && ::getppid() != parent)) {
      break;
    }
    sample(false);
  }
  const double end_age = now_s() - t0;
  sample(true);  // what the GPUs hold once the job is gone (a leak, another process)
  stopping = true;
  if (events.joinable()) {
    events.join();
  }
  if (set != nullptr && n.event_set_free != nullptr) {
    n.event_set_free(set);
  }

  std::lock_guard<std::mutex> lock(mu);
  for (auto& g : gpus) {
    json o = g.info;
    if (g.samples > 0) {
      o["memory_used_peak"] = g.peak_used;
    }
    if (g.last_used) {
      o["memory_used_last"] = *g.last_used;
      o["last_reading_s_before_end"] = std::max(0.0, end_age - g.last_t);
    }
    if (g.job_peak) {
      o["job_memory_used_peak"] = *g.job_peak;
      o["job_memory_used_last"] = *g.job_last;
    }
    for (const char* k : {"utilization", "memory_utilization", "temperature_c", "power_w",
                          "throttle_reasons", "other_processes"}) {
      if (g.last.contains(k)) {
        o[std::string(k) + "_last"] = g.last[k];
      }
    }
    o["samples"] = g.samples;
    o["xids"] = g.xids;
    if (g.lost) {
      o["lost_at"] = g.lost_at;
    }
    json end = g.lost ? json::object() : ecc_counters(n, g.dev);
    o["ecc_start"] = g.ecc_start;
    if (!end.empty()) {
      o["ecc_end"] = end;
      json delta = json::object();
      for (auto it = end.begin(); it != end.end(); ++it) {
        if (it.value().is_number_unsigned() && g.ecc_start.contains(it.key())) {
          auto a = g.ecc_start[it.key()].get<unsigned long long>();
          auto b = it.value().get<unsigned long long>();
          delta[it.key()] = b >= a ? b - a : 0;
        }
      }
      o["ecc_delta"] = delta;
    }
    summary["gpus"].push_back(o);
  }
  if (timeline.capped()) {
    summary["warnings"].push_back("gpus.jsonl reached its size cap; later samples were not kept");
  }
  summary["source"] = "read";
  summary["timeline"] = "gpus.jsonl";
  write_summary(run_dir, summary);
  if (n.shutdown != nullptr) {
    n.shutdown();
  }
  return 0;
}
