#include "notify/policy.hpp"

#include <dirent.h>

namespace notify {

bool is_success(const report::RunReport& r) {
  if (r.verdict) {
    return r.verdict->label == "success";
  }
  return !r.signal && r.exit_code && *r.exit_code == 0;
}

bool should_notify(const Config& config, const report::RunReport& r) {
  if (config.notify_when == "never") {
    return false;
  }
  if (config.notify_when == "failure") {
    return !is_success(r);
  }
  return true;
}

bool outbox_has_pending(const Config& config) {
  DIR* dir = ::opendir((outbox_dir(config) + "/new").c_str());
  if (dir == nullptr) {
    return false;
  }
  bool found = false;
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') {
      found = true;
      break;
    }
  }
  ::closedir(dir);
  return found;
}

}  // namespace notify
