#include "cli/job_env.hpp"

#include <unistd.h>

#include <map>

namespace cli {

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
  std::vector<std::string> env;
  std::map<std::string, size_t> index;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    index[kv.substr(0, eq)] = env.size();
    env.push_back(std::move(kv));
  }
  auto set = [&](const std::string& key, const std::string& value) {
    if (auto it = index.find(key); it != index.end()) {
      env[it->second] = key + "=" + value;
    } else {
      index[key] = env.size();
      env.push_back(key + "=" + value);
    }
  };
  if (!run_dir.empty()) {
    set("GPUALERT_RUN_DIR", run_dir);
  }
  if (line_buffer) {
    if (!index.count("PYTHONUNBUFFERED")) {
      set("PYTHONUNBUFFERED", "1");
    }
    std::string lib = find_stdbuf_library();
    if (!lib.empty() && !index.count("_STDBUF_O")) {
      std::string preload = lib;
      if (auto it = index.find("LD_PRELOAD"); it != index.end()) {
        std::string old = env[it->second].substr(sizeof("LD_PRELOAD=") - 1);
        if (!old.empty()) {
          preload = old + ":" + lib;
        }
      }
      set("LD_PRELOAD", preload);
      set("_STDBUF_O", "L");
    }
  }
  return env;
}

}  // namespace cli
