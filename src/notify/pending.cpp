#include "notify/pending.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "util/fd.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

using nlohmann::json;

std::string file_of(const config::Config& config, const std::string& id) {
  return pending_dir(config) + "/" + id + ".json";
}

std::string taking_of(const config::Config& config, const std::string& id) {
  return file_of(config, id) + ".taking." + std::to_string(::getpid());
}

}  // namespace

std::string pending_dir(const config::Config& config) {
  return config::outbox_dir(config) + "/pending";
}

util::Result<std::string> queue_pending(const config::Config& config, PendingNotice n) {
  std::time_t now = std::time(nullptr);
  n.created = util::iso8601_local(now);
  // Sortable by time, unique per process and call.
  static int s_count = 0;
  char id[64];
  std::snprintf(id, sizeof id, "%lld.P%d_%d", static_cast<long long>(now),
                static_cast<int>(::getpid()), s_count++);
  n.id = id;
  // Paths are bytes: kept exactly in base64 (readable beside them).
  json j = {{"run_dir", util::valid_utf8(n.run_dir)},
            {"run_dir_b64", util::base64_encode(n.run_dir)},
            {"report_b64", util::base64_encode(n.report_path)},
            {"attach_b64", json::array()},
            {"to", n.to},
            {"budget", n.budget_bytes},
            {"created", n.created},
            {"reason", util::valid_utf8(n.reason)}};
  for (const auto& a : n.attach) {
    j["attach_b64"].push_back(util::base64_encode(a));
  }
  if (auto st = util::make_dirs(pending_dir(config), 0700); !st) {
    return util::Error{st.error()};
  }
  std::string path = file_of(config, n.id);
  if (auto st = util::write_file_atomic(
          path, j.dump(2, ' ', false, json::error_handler_t::replace) + "\n", 0600);
      !st) {
    return util::Error{st.error()};
  }
  return path;
}

std::vector<PendingNotice> list_pending(const config::Config& config) {
  std::vector<PendingNotice> out;
  DIR* dir = ::opendir(pending_dir(config).c_str());
  if (dir == nullptr) {
    return out;
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
      names.push_back(name.substr(0, name.size() - 5));
    }
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const auto& id : names) {
    auto text = util::read_file(file_of(config, id));
    if (!text) {
      continue;
    }
    json j = json::parse(*text, nullptr, false);
    if (!j.is_object()) {
      continue;
    }
    PendingNotice n;
    n.id = id;
    auto bytes = [&](const char* key) {
      auto it = j.find(key);
      auto v = it != j.end() && it->is_string() ? util::base64_decode(it->get<std::string>())
                                                : std::nullopt;
      return v ? *v : std::string();
    };
    n.run_dir = bytes("run_dir_b64");
    n.report_path = bytes("report_b64");
    if (auto it = j.find("attach_b64"); it != j.end() && it->is_array()) {
      for (const auto& a : *it) {
        auto v = a.is_string() ? util::base64_decode(a.get<std::string>()) : std::nullopt;
        if (v) {
          n.attach.push_back(*v);
        }
      }
    }
    if (auto it = j.find("to"); it != j.end() && it->is_array()) {
      for (const auto& t : *it) {
        if (t.is_string()) {
          n.to.push_back(t.get<std::string>());
        }
      }
    }
    n.budget_bytes = j.value("budget", uint64_t{0});
    n.created = j.value("created", "");
    n.reason = j.value("reason", "");
    if (!n.run_dir.empty()) {
      out.push_back(std::move(n));
    }
  }
  return out;
}

bool take_pending(const config::Config& config, const PendingNotice& n) {
  return ::rename(file_of(config, n.id).c_str(), taking_of(config, n.id).c_str()) == 0;
}

void finish_pending(const config::Config& config, const PendingNotice& n, bool done) {
  if (done) {
    ::unlink(taking_of(config, n.id).c_str());
  } else {
    ::rename(taking_of(config, n.id).c_str(), file_of(config, n.id).c_str());
  }
}

}  // namespace notify
