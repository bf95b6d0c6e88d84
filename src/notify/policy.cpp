#include "notify/policy.hpp"

#include <dirent.h>

namespace notify {

bool is_success(const report::RunReport& r) {
  if (r.verdict) {
    return r.verdict->label == "success";
  }
  return !r.signal && r.exit_code && *r.exit_code == 0;
}

bool interrupted_at_terminal(const report::RunReport& r) {
  if (!r.interactive || !r.verdict || r.verdict->label != "cancelled") {
    return false;
  }
  if ((r.signal && *r.signal == "SIGINT") || (r.exit_code && *r.exit_code == 130)) {
    return true;
  }
  // Python's KeyboardInterrupt traceback, or a framework's graceful stop on it: the
  // job may then exit 1 or 0.
  for (const auto& e : r.verdict->evidence) {
    if (e.text.find("KeyboardInterrupt") != std::string::npos) {
      return true;
    }
  }
  return false;
}

bool should_notify(const config::Config& config, const report::RunReport& r) {
  if (config.notify_when == "never") {
    return false;
  }
  if (config.notify_when == "failure" || config.notify_when == "failure+warnings") {
    // "failure+warnings": also a success with caveats ("succeeded, but ...").
    bool caveats = r.verdict && !r.verdict->caveats.empty();
    return (!is_success(r) || (caveats && config.notify_when == "failure+warnings")) &&
           !interrupted_at_terminal(r);
  }
  return true;
}

bool outbox_has_pending(const config::Config& config) {
  bool found = false;
  for (const char* sub : {"/new", "/pending"}) {  // pending: notices not built yet
    DIR* dir = ::opendir((config::outbox_dir(config) + sub).c_str());
    if (dir == nullptr) {
      continue;
    }
    while (struct dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.') {
        found = true;
        break;
      }
    }
    ::closedir(dir);
  }
  return found;
}

}  // namespace notify
