#include "cli/job_env.hpp"

#include <unistd.h>

#include <string_view>

namespace cli {

namespace {

bool has_key(std::string_view kv, std::string_view key) {
  return kv.size() > key.size() && kv[key.size()] == '=' && kv.substr(0, key.size()) == key;
}

}  // namespace

std::string find_stdbuf_library() {
  for (const char* p : {"/usr/libexec/coreutils/libstdbuf.so", "/usr/lib/coreutils/libstdbuf.so",
                        "/usr/local/libexec/coreutils/libstdbuf.so"}) {
    if (::access(p, R_OK) == 0) {
      return p;
    }
  }
  return "";
}

std::vector<std::string> job_environment(char** envp, bool line_buffer,
                                         const std::string& run_dir) {
  // A plain copy, searched for the few keys we read or set: no index of every
  // variable (three allocations each), which cost more than the copy itself.
  std::vector<std::string> env;
  size_t count = 0;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    ++count;
  }
  env.reserve(count + 4);
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  // The value the job's getenv() would see: the first entry of that name.
  auto get = [&env](std::string_view key) -> const std::string* {
    for (const auto& kv : env) {
      if (has_key(kv, key)) {
        return &kv;
      }
    }
    return nullptr;
  };
  // Replaces the first entry of that name and drops any later duplicates, so that
  // the job sees our value whichever entry its runtime reads.
  auto set = [&env](std::string_view key, std::string_view value) {
    std::string kv;
    kv.reserve(key.size() + 1 + value.size());
    kv.append(key).append("=").append(value);
    bool placed = false;
    for (auto it = env.begin(); it != env.end();) {
      if (!has_key(*it, key)) {
        ++it;
      } else if (!placed) {
        *it++ = std::move(kv);
        placed = true;
      } else {
        it = env.erase(it);
      }
    }
    if (!placed) {
      env.push_back(std::move(kv));
    }
  };
  if (!run_dir.empty()) {
    set("GPUALERT_RUN_DIR", run_dir);
  }
  if (line_buffer) {
    if (get("PYTHONUNBUFFERED") == nullptr) {
      set("PYTHONUNBUFFERED", "1");
    }
    std::string lib = find_stdbuf_library();
    if (!lib.empty() && get("_STDBUF_O") == nullptr) {
      std::string preload = lib;
      if (const std::string* old = get("LD_PRELOAD");
          old != nullptr && old->size() > sizeof("LD_PRELOAD=") - 1) {
        preload = old->substr(sizeof("LD_PRELOAD=") - 1) + ":" + lib;
      }
      set("LD_PRELOAD", preload);
      set("_STDBUF_O", "L");
    }
  }
  return env;
}

}  // namespace cli
