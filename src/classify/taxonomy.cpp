#include "classify/taxonomy.hpp"

#include <csignal>
#include <cstdio>
#include <string>

namespace classify {

namespace {

const std::vector<LabelInfo> k_labels = {
    {"success", "-", "none"},
    {"gpu_lost", "hardware", "drain the node, resubmit elsewhere"},
    {"gpu_ecc", "hardware", "drain node, reset GPU, ticket to hardware team"},
    {"comm_timeout", "distributed",
     "find the rank that failed first (its log has the root cause); check for a straggler"},
    {"comm_error", "distributed", "check fabric and NICs on the named hosts"},
    {"cuda_oom", "gpu software", "smaller batch, activation checkpointing, check fragmentation"},
    {"cuda_illegal_access", "gpu software", "run with CUDA_LAUNCH_BLOCKING=1 / compute-sanitizer"},
    {"cuda_device_assert", "gpu software",
     "usually bad labels/indices: rerun on CPU for a readable error"},
    {"cuda_setup", "environment", "fix the environment/container; resubmit"},
    {"host_oom", "host", "fewer loader workers, smaller prefetch, more host memory"},
    {"shm_exhausted", "host", "raise --shm-size / /dev/shm, or fewer workers"},
    {"disk_full", "host", "free space, move checkpoints, check quota"},
    {"native_crash", "software", "look at the core dump / native stack"},
    {"numerical_divergence", "training", "lower LR, check data, bf16 instead of fp16"},
    {"time_limit", "scheduler", "checkpoint more often, ask for more time, resume"},
    {"cancelled", "scheduler", "nothing, or resubmit"},
    {"preempted", "scheduler",
     "nothing if it was requeued (it will run again); otherwise resubmit, checkpoint more often"},
    {"node_failure", "hardware", "resubmit elsewhere; tell the admins which node"},
    {"script_error", "software", "read the traceback"},
    {"unknown", "-", "read the log"},
};

struct SignalEntry {
  std::string_view name;
  int number;
};

const SignalEntry k_signals[] = {
    {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGILL", SIGILL},
    {"SIGTRAP", SIGTRAP}, {"SIGABRT", SIGABRT}, {"SIGBUS", SIGBUS},   {"SIGFPE", SIGFPE},
    {"SIGKILL", SIGKILL}, {"SIGUSR1", SIGUSR1}, {"SIGSEGV", SIGSEGV}, {"SIGUSR2", SIGUSR2},
    {"SIGPIPE", SIGPIPE}, {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM}, {"SIGXCPU", SIGXCPU},
    {"SIGXFSZ", SIGXFSZ}, {"SIGSYS", SIGSYS},   {"SIGIOT", SIGABRT},
};

}  // namespace

const std::vector<LabelInfo>& labels() { return k_labels; }

const LabelInfo* find_label(std::string_view label) {
  for (const auto& info : k_labels) {
    if (info.label == label) {
      return &info;
    }
  }
  return nullptr;
}

int signal_number(std::string_view name) {
  if (name.empty()) {
    return 0;
  }
  if (name.find_first_not_of("0123456789") == std::string_view::npos) {
    return name.size() <= 3 ? std::stoi(std::string(name)) : 0;
  }
  for (const auto& s : k_signals) {
    if (s.name == name || s.name.substr(3) == name) {
      return s.number;
    }
  }
  return 0;
}

std::string_view signal_name(int signal, char (&buf)[16]) {
  for (const auto& s : k_signals) {
    if (s.number == signal) {
      return s.name;
    }
  }
  int n = std::snprintf(buf, sizeof buf, "SIG%d", signal);
  return std::string_view(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace classify
