#include "notify/outbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>

#include "util/text.hpp"

namespace notify {

namespace {

// The ids of the entries in an open outbox folder (their .meta files), sorted; closes it.
std::vector<std::string> meta_ids(DIR* d) {
  std::vector<std::string> ids;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".meta") == 0) {
      ids.push_back(name.substr(0, name.size() - 5));
    }
  }
  ::closedir(d);
  std::sort(ids.begin(), ids.end());
  return ids;
}

using nlohmann::json;

json to_json(const EntryMeta& m) {
  return {{"id", m.id},
          {"channel", m.channel},
          {"format", m.format},
          {"url", m.url},
          {"to", m.to},
          {"subject", m.subject},
          {"run_dir", m.run_dir},
          {"created", m.created},
          {"attempts", m.attempts},
          {"last_attempt", m.last_attempt},
          {"last_error", m.last_error},
          {"not_before", m.not_before}};
}

EntryMeta from_json(const json& j) {
  EntryMeta m;
  m.id = j.value("id", "");
  m.channel = j.value("channel", "smtp");
  m.format = j.value("format", "");
  m.url = j.value("url", "");
  m.to = j.value("to", std::vector<std::string>{});
  m.subject = j.value("subject", "");
  m.run_dir = j.value("run_dir", "");
  m.created = j.value("created", "");
  m.attempts = j.value("attempts", 0);
  m.last_attempt = j.value("last_attempt", "");
  m.last_error = j.value("last_error", "");
  m.not_before = j.value("not_before", int64_t{0});
  return m;
}

std::string new_id() {
  std::random_device rd;
  char buf[96];
  std::time_t now = std::time(nullptr);
  std::snprintf(buf, sizeof buf, "%s.%d.%08x", util::compact_local(now).c_str(), ::getpid(), rd());
  return buf;
}

util::Status write_synced(const std::string& path, std::string_view data) {
  util::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return util::errno_error("create " + path);
  }
  if (auto st = util::write_all(fd.get(), data); !st) {
    return util::Error{"write " + path + ": " + st.error()};
  }
  if (::fsync(fd.get()) != 0) {
    return util::errno_error("fsync " + path);
  }
  return util::ok_status();
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The channel an entry id names ("....smtp", "....webhook", "....ntfy"), for a sidecar
// that lacks it.
std::string channel_of(const std::string& id) {
  return ends_with(id, ".webhook") ? "webhook" : ends_with(id, ".ntfy") ? "ntfy" : "smtp";
}

void prune_sent(const std::string& sent) {
  DIR* d = ::opendir(sent.c_str());
  if (!d) {
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') {
      names.emplace_back(e->d_name);
    }
  }
  ::closedir(d);
  if (names.size() <= k_sent_keep) {
    return;
  }
  std::sort(names.begin(), names.end());  // ids start with the time: oldest first
  for (size_t i = 0; i + k_sent_keep < names.size(); ++i) {
    ::unlink((sent + "/" + names[i]).c_str());
  }
}

}  // namespace

bool is_held(const EntryMeta& meta) {
  return meta.not_before > static_cast<int64_t>(std::time(nullptr));
}

std::string payload_extension(const std::string& channel) {
  return channel == "webhook" || channel == "ntfy" ? ".json" : ".eml";
}

Outbox::Outbox(std::string dir, std::string sent)
    : m_dir(std::move(dir)), m_sent(std::move(sent)) {}

std::string Outbox::meta_path(const std::string& id) const {
  return m_dir + "/new/" + id + ".meta";
}

std::string Outbox::payload_path(const EntryMeta& meta) const {
  return m_dir + "/new/" + meta.id + payload_extension(meta.channel);
}

util::Result<EntryMeta> Outbox::add(EntryMeta meta, std::string_view payload) {
  for (const char* sub : {"/tmp", "/new"}) {
    if (auto st = util::make_dirs(m_dir + sub, 0700); !st) {
      return util::Error{"outbox: " + st.error()};
    }
  }
  meta.id = new_id() + "." + meta.channel;
  meta.created = util::iso8601_local(std::time(nullptr));
  std::string ext = payload_extension(meta.channel);
  std::string tmp_payload = m_dir + "/tmp/" + meta.id + ext;
  std::string tmp_meta = m_dir + "/tmp/" + meta.id + ".meta";
  auto fail = [&](const std::string& why) {
    ::unlink(tmp_payload.c_str());
    ::unlink(tmp_meta.c_str());
    return util::Error{"outbox: " + why};
  };
  if (auto st = write_synced(tmp_payload, payload); !st) {
    return fail(st.error());
  }
  if (auto st = write_synced(
          tmp_meta,
          to_json(meta).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      !st) {
    return fail(st.error());
  }
  if (::rename(tmp_payload.c_str(), payload_path(meta).c_str()) != 0) {
    return fail(util::errno_error("rename " + tmp_payload).message);
  }
  if (::rename(tmp_meta.c_str(), meta_path(meta.id).c_str()) != 0) {
    ::unlink(payload_path(meta).c_str());
    return fail(util::errno_error("rename " + tmp_meta).message);
  }
  if (auto st = util::fsync_dir(m_dir + "/new"); !st) {
    return util::Error{"outbox: " + st.error()};
  }
  return meta;
}

util::Result<std::vector<EntryMeta>> Outbox::list() const {
  std::vector<EntryMeta> out;
  std::string dir = m_dir + "/new";
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) {
      return out;
    }
    return util::errno_error("open " + dir);
  }
  std::vector<std::string> ids = meta_ids(d);
  for (const auto& id : ids) {
    auto text = util::read_file(meta_path(id));
    if (!text) {
      continue;  // delivered meanwhile
    }
    json j = json::parse(*text, nullptr, false);
    EntryMeta m;
    if (j.is_object()) {
      try {
        m = from_json(j);
      } catch (const json::exception& e) {
        m.last_error = std::string("sidecar: ") + e.what();
      }
    } else {
      m.last_error = "sidecar is not valid JSON";
    }
    m.id = id;
    if (m.channel.empty()) {
      m.channel = channel_of(id);
    }
    out.push_back(std::move(m));
  }
  return out;
}

util::Result<ClaimedEntry> Outbox::claim(const std::string& id) const {
  auto text = util::read_file(meta_path(id));
  if (!text) {
    return ClaimedEntry{};
  }
  json j = json::parse(*text, nullptr, false);
  EntryMeta meta;
  try {
    meta = j.is_object() ? from_json(j) : EntryMeta{};
  } catch (const json::exception&) {
  }
  meta.id = id;
  if (meta.channel.empty()) {
    meta.channel = channel_of(id);
  }
  std::string path = payload_path(meta);
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT && ::access(meta_path(id).c_str(), F_OK) == 0) {
      // A sidecar without its payload (or naming another channel than the file
      // it has) can never be sent: not "being delivered by another process".
      std::string why = "its payload " + path + " is missing";
      bury(id, why);
      return util::Error{why + "; moved to " + m_dir + "/dead"};
    }
    return ClaimedEntry{};
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return ClaimedEntry{};
    }
    return util::errno_error("flock " + path);
  }
  // Whoever held the lock before us may have delivered it: the entry must still be there.
  struct stat held {
  }, now{};
  if (::fstat(fd.get(), &held) != 0 || ::stat(path.c_str(), &now) != 0 ||
      held.st_ino != now.st_ino || ::access(meta_path(id).c_str(), F_OK) != 0) {
    return ClaimedEntry{};
  }
  if (is_held(meta)) {
    return ClaimedEntry{};  // its run may still withdraw it
  }
  // Re-read the sidecar now that we hold the lock (attempts may have changed).
  if (auto again = util::read_file(meta_path(id)); again) {
    json j2 = json::parse(*again, nullptr, false);
    if (j2.is_object()) {
      try {
        EntryMeta m2 = from_json(j2);
        m2.id = id;
        m2.channel = meta.channel;
        meta = m2;
      } catch (const json::exception&) {
      }
    }
  }
  return ClaimedEntry(std::move(meta), std::move(fd));
}

bool Outbox::withdraw(const std::string& id) const {
  EntryMeta meta;
  meta.id = id;
  meta.channel = channel_of(id);
  util::UniqueFd fd(::open(payload_path(meta).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid() || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return false;
  }
  // The sidecar first: an entry without one is not listed, so none will send it.
  bool gone = ::unlink(meta_path(id).c_str()) == 0;
  ::unlink(payload_path(meta).c_str());
  return gone;
}

util::Result<std::string> Outbox::payload(const EntryMeta& meta) const {
  return util::read_file(payload_path(meta));
}

util::Status Outbox::write_meta(const EntryMeta& meta) const {
  return util::write_file_atomic(
      meta_path(meta.id),
      to_json(meta).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", 0600);
}

util::Status Outbox::record_failure(ClaimedEntry& entry, const std::string& reason) const {
  EntryMeta& m = entry.meta();
  m.attempts += 1;
  m.last_attempt = util::iso8601_local(std::time(nullptr));
  m.last_error = reason;
  auto st = write_meta(m);
  struct stat ps {};
  bool old = ::stat(payload_path(m).c_str(), &ps) == 0 &&
             std::time(nullptr) - ps.st_mtime > k_max_age_s;  // the payload is never rewritten
  if (m.attempts >= k_max_attempts || old) {
    bury(m.id, "given up after " + std::to_string(m.attempts) + " attempts" +
                   (old ? " over more than 7 days" : "") + "; last: " + reason);
  }
  return st;
}

void Outbox::bury(const std::string& id, const std::string& reason) const {
  std::string dead = m_dir + "/dead";
  if (!util::make_dirs(dead, 0700)) {
    return;
  }
  for (const char* ext : {".eml", ".json"}) {
    ::rename((m_dir + "/new/" + id + ext).c_str(), (dead + "/" + id + ext).c_str());
  }
  EntryMeta m;
  if (auto text = util::read_file(meta_path(id))) {
    json j = json::parse(*text, nullptr, false);
    try {
      m = j.is_object() ? from_json(j) : EntryMeta{};
    } catch (const json::exception&) {
    }
  }
  m.id = id;
  m.channel = m.channel.empty() ? channel_of(id) : m.channel;
  m.last_error = reason;
  if (util::write_file_atomic(
          dead + "/" + id + ".meta",
          to_json(m).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", 0600)) {
    ::unlink(meta_path(id).c_str());
  }
}

void Outbox::tidy() const {
  std::string dir = m_dir + "/new";
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    return;
  }
  std::vector<std::string> orphans;
  const std::time_t now = std::time(nullptr);
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    for (std::string_view ext : {".eml", ".json"}) {
      if (!ends_with(name, ext)) {
        continue;
      }
      std::string id = name.substr(0, name.size() - ext.size());
      struct stat st {};
      if (::access(meta_path(id).c_str(), F_OK) != 0 &&
          ::stat((dir + "/" + name).c_str(), &st) == 0 && now - st.st_mtime > 60) {
        orphans.push_back(id);
      }
    }
  }
  ::closedir(d);
  for (const auto& id : orphans) {
    bury(id, "payload without its sidecar (.meta): not sendable as it is");
  }
}

std::vector<EntryMeta> Outbox::dead() const {
  std::vector<EntryMeta> out;
  std::string dir = m_dir + "/dead";
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    return out;
  }
  std::vector<std::string> ids = meta_ids(d);
  for (const auto& id : ids) {
    EntryMeta m;
    if (auto text = util::read_file(dir + "/" + id + ".meta")) {
      json j = json::parse(*text, nullptr, false);
      try {
        m = j.is_object() ? from_json(j) : EntryMeta{};
      } catch (const json::exception&) {
      }
    }
    m.id = id;
    out.push_back(std::move(m));
  }
  return out;
}

util::Status Outbox::mark_sent(ClaimedEntry& entry) const {
  const EntryMeta& m = entry.meta();
  // The sidecar goes first: from then on nobody lists or claims the entry.
  if (::unlink(meta_path(m.id).c_str()) != 0 && errno != ENOENT) {
    return util::errno_error("unlink " + meta_path(m.id));
  }
  std::string from = payload_path(m);
  if (util::make_dirs(m_sent, 0700) &&
      ::rename(from.c_str(), (m_sent + "/" + m.id + payload_extension(m.channel)).c_str()) == 0) {
    prune_sent(m_sent);
  } else {
    ::unlink(from.c_str());
  }
  return util::fsync_dir(m_dir + "/new");
}

}  // namespace notify
