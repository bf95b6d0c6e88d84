#include "report/job_group.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>

#include "util/fd.hpp"
#include "util/text.hpp"

namespace report {

namespace {

constexpr const char* k_claim = "notice";

std::string env_of(const std::map<std::string, std::string>& env, const char* k) {
  auto it = env.find(k);
  return it == env.end() ? std::string() : it->second;
}

std::optional<int> positive(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) {
    return std::nullopt;
  }
  int n = std::atoi(s.c_str());
  return n > 0 ? std::optional<int>(n) : std::nullopt;
}

nlohmann::json record_json(const MemberRecord& r) {
  nlohmann::json j = {{"member", r.member},   {"rank", r.rank}, {"host", r.host},
                      {"run_dir", r.run_dir}, {"pid", r.pid},   {"ended", r.ended}};
  if (r.ended) {
    j["failed"] = r.failed;
    j["label"] = r.label;
    j["cause"] = r.cause;
    j["ending"] = r.ending;
  }
  return j;
}

std::optional<MemberRecord> parse_record(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("member") || !j["member"].is_string()) {
    return std::nullopt;
  }
  auto str = [&](const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  MemberRecord r;
  r.member = str("member");
  r.rank = str("rank");
  r.host = str("host");
  r.run_dir = str("run_dir");
  r.pid = j.contains("pid") && j["pid"].is_number_integer() ? j["pid"].get<long>() : 0;
  r.ended = j.contains("ended") && j["ended"].is_boolean() && j["ended"].get<bool>();
  r.failed = j.contains("failed") && j["failed"].is_boolean() && j["failed"].get<bool>();
  r.label = str("label");
  r.cause = str("cause");
  r.ending = str("ending");
  return r;
}

// Every member the directory knows of, by member id: the start record, replaced by the
// ending where there is one.
std::map<std::string, MemberRecord> read_members(const std::string& dir) {
  std::map<std::string, MemberRecord> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return out;
  }
  std::vector<std::string> names;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if ((n.rfind("m.", 0) == 0 || n.rfind("e.", 0) == 0) && n.find(".tmp.") == std::string::npos) {
      names.push_back(n);
    }
  }
  ::closedir(d);
  for (const auto& n : names) {
    auto text = util::read_file(dir + "/" + n);
    if (!text) {
      continue;  // an ending renamed over nothing, or a record being written: skipped
    }
    auto r = parse_record(*text);
    if (!r) {
      continue;
    }
    auto& slot = out[r->member];
    if (!slot.ended) {
      slot = *r;
    }
  }
  return out;
}

// The claim: created once, by one member, with O_EXCL. `mine` when this member made it
// (now, or before: its own run reported again), else what the file says of its maker.
struct Claim {
  bool mine = false;
  std::string member, kind;
  std::string error;
  std::shared_ptr<util::UniqueFd> lock;  // held while mine and not yet sent
};

Claim claim(const std::string& dir, const std::string& member, const std::string& kind) {
  Claim c;
  std::string path = dir + "/" + k_claim;
  util::UniqueFd fd(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.valid()) {
    (void)::flock(fd.get(), LOCK_EX);  // new, so nobody else holds it
    c.mine = true;
    (void)util::write_all(fd.get(), nlohmann::json{{"member", member}, {"kind", kind}}.dump());
    c.lock = std::make_shared<util::UniqueFd>(std::move(fd));
    return c;
  }
  if (errno != EEXIST) {
    c.error = util::errno_error("create " + path).message;
    return c;
  }
  // Its maker may not have written it yet: an empty claim is a claim all the same.
  if (auto text = util::read_file(path)) {
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_object()) {
      c.member = j.value("member", "");
      c.kind = j.value("kind", "");
    }
  }
  // This member's own claim, made by its wrapper, which died before sending the notice:
  // the sweep that reports the run sends it.
  c.mine = c.member == member && c.kind == kind;
  if (c.mine) {
    auto held = std::make_shared<util::UniqueFd>(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (held->valid()) {
      (void)::flock(held->get(), LOCK_EX | LOCK_NB);
      c.lock = held;
    }
  }
  return c;
}

bool rank_less(const MemberRecord& a, const MemberRecord& b) {
  auto ra = positive(a.rank), rb = positive(b.rank);
  int na = a.rank == "0" ? 0 : ra.value_or(-1), nb = b.rank == "0" ? 0 : rb.value_or(-1);
  if (na != nb) {
    return na < nb;
  }
  return a.member < b.member;
}

std::string who(const GroupIdentity& id, const MemberRecord& r) {
  std::string s = r.rank.empty() ? r.host + " (pid " + std::to_string(r.pid) + ")"
                                 : id.noun + " " + r.rank + " on " + r.host;
  return s;
}

std::vector<std::string> other_lines(const GroupIdentity& id, const std::string& dir,
                                     const std::map<std::string, MemberRecord>& members) {
  std::vector<MemberRecord> sorted;
  for (const auto& [m, r] : members) {
    if (m != id.member) {
      sorted.push_back(r);
    }
  }
  std::sort(sorted.begin(), sorted.end(), rank_less);
  std::vector<std::string> lines;
  for (const auto& r : sorted) {
    std::string l = who(id, r) + ": ";
    if (!r.ended) {
      l += "still running";
    } else {
      l += (r.failed ? "failed, " : "") + r.label + " (" + r.ending + ")";
      if (!r.cause.empty()) {
        l += ": " + r.cause;
      }
    }
    lines.push_back(l + "; run dir " + r.run_dir);
  }
  // Ranks the group should have that never wrote here (numbered ones only).
  if (id.size && !id.rank.empty()) {
    std::vector<std::string> missing;
    for (int n = 0; n < *id.size && n < 100000; ++n) {
      std::string rank = std::to_string(n);
      bool seen = rank == id.rank;
      for (const auto& [m, r] : members) {
        seen = seen || r.rank == rank;
      }
      if (!seen) {
        missing.push_back(rank);
      }
    }
    if (!missing.empty()) {
      std::string list;
      for (size_t i = 0; i < missing.size() && i < 32; ++i) {
        list += (i ? ", " : "") + missing[i];
      }
      if (missing.size() > 32) {
        list += ", ... (" + std::to_string(missing.size()) + " in all)";
      }
      lines.push_back(id.noun + (missing.size() > 1 ? "s " : " ") + list + ": not seen in " + dir);
    }
  }
  return lines;
}

// Members the group should have but that never wrote here: a log directory local to each
// node (or a member that never started). Empty when all were seen or the size is unknown.
std::string unseen_why(const GroupIdentity& id, const std::string& dir, size_t seen) {
  if (!id.size || seen >= static_cast<size_t>(*id.size)) {
    return "";
  }
  return "only " + std::to_string(seen) + " of the group's " + std::to_string(*id.size) + " " +
         id.noun + "s wrote to " + dir +
         " (a log directory local to each node?): the others send their own notices";
}

// The last group of a key used again, renamed away once every member has ended (or its
// wrapper is gone), so that its claim covers none of the new runs. Under a lock beside
// it, so that two new members starting together rename it once, and never the new group
// one of them just made: `lock` is held by the caller until its start record is written.
util::Status rotate_if_over(const std::string& dir, const GroupIdentity& id, long pid,
                            util::UniqueFd& lock) {
  lock.reset(::open((dir + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.valid()) {
    (void)::flock(lock.get(), LOCK_EX);
  }
  auto members = read_members(dir);
  size_t ended = 0;
  for (const auto& [m, r] : members) {
    // A member whose wrapper is gone without an ending (killed, never swept) is over too.
    ended += r.ended || wrapper_gone(r.run_dir) ? 1 : 0;
  }
  if (!members.empty() && ended == members.size() &&
      (!id.size || ended >= static_cast<size_t>(*id.size))) {
    std::string old = dir + ".ended-" + std::to_string(::time(nullptr)) + "-" + std::to_string(pid);
    if (::rename(dir.c_str(), old.c_str()) != 0 && errno != ENOENT) {
      return util::errno_error("rename " + dir + " to " + old);
    }
  }
  return util::ok_status();
}

}  // namespace

bool wrapper_gone(const std::string& run_dir) {
  util::UniqueFd fd(::open((run_dir + "/output.log").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  return !fd.valid() || ::flock(fd.get(), LOCK_SH | LOCK_NB) == 0;
}

std::optional<std::string> member_run_dir(const std::string& dir, const std::string& member) {
  auto text = util::read_file(dir + "/m." + member);
  if (!text) {
    return std::nullopt;
  }
  auto r = parse_record(*text);
  return r ? std::optional<std::string>(r->run_dir) : std::nullopt;
}

std::optional<GroupIdentity> group_identity(const std::map<std::string, std::string>& env,
                                            const std::string& explicit_key,
                                            std::optional<int> explicit_size,
                                            const std::string& host, long pid) {
  GroupIdentity id;
  id.host = host;
  if (!explicit_key.empty()) {
    id.key = explicit_key;
    id.reusable = true;
    for (const char* k : {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                          "NODE_RANK", "GROUP_RANK"}) {
      if (std::string v = env_of(env, k); v == "0" || positive(v)) {
        id.rank = v;
        break;
      }
    }
    id.size = explicit_size;
    if (!id.size) {
      for (const char* k : {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
        if (auto n = positive(env_of(env, k))) {
          id.size = n;
          break;
        }
      }
    }
  } else {
    auto tasks = positive(env_of(env, "SLURM_STEP_NUM_TASKS"));
    std::string job = env_of(env, "SLURM_JOB_ID");
    std::string step = env_of(env, "SLURM_STEP_ID");
    if (step.empty()) {
      step = env_of(env, "SLURM_STEPID");
    }
    std::string rank = env_of(env, "SLURM_PROCID");
    if (!tasks || *tasks < 2 || job.empty() || rank.empty()) {
      return std::nullopt;
    }
    id.key = "slurm-" + job + "." + (step.empty() ? "0" : step);
    id.rank = rank;
    id.noun = "task";
    id.size = tasks;
  }
  id.member =
      id.rank.empty() ? util::safe_file_component(host + "-" + std::to_string(pid), 120) : id.rank;
  return id;
}

std::string group_dir(const std::string& log_dir, const std::string& key) {
  return log_dir + "/.gpualert-groups/" + util::safe_file_component(key, 120);
}

util::Status register_member(const std::string& dir, const GroupIdentity& id,
                             const std::string& run_dir, long pid) {
  // Shared with the job's other members, who may run as the same user only (a log
  // directory is the user's): plain 0755 like the run directories beside it.
  auto slash = dir.find_last_of('/');
  if (auto st = util::make_dirs(dir.substr(0, slash), 0755); !st) {
    return st;
  }
  // A key used again (`--group exp-42` run again tomorrow) starts a new group once every
  // member of the last one has ended. Slurm's keys hold the job id and never come again,
  // so their members skip the reading this takes.
  util::UniqueFd lock;
  if (id.reusable) {
    if (auto st = rotate_if_over(dir, id, pid, lock); !st) {
      return st;
    }
  }
  if (auto st = util::make_dirs(dir, 0755); !st) {
    return st;
  }
  MemberRecord r{id.member, id.rank, id.host, run_dir, pid};
  return util::write_file_atomic(dir + "/m." + id.member, record_json(r).dump() + "\n", 0644,
                                 util::Durability::replace_only);
}

GroupDecision finish_member(const std::string& dir, const GroupIdentity& id,
                            const MemberRecord& ending, const util::Status& registered) {
  GroupDecision d;
  auto own = [&](const std::string& why) {
    d.send = true;
    d.role = "own";
    d.own_why = why;
    return d;
  };
  if (!registered) {
    return own("could not use the group directory: " + registered.error());
  }
  MemberRecord mine = ending;
  mine.member = id.member;
  mine.ended = true;
  if (auto st = util::write_file_atomic(dir + "/e." + id.member, record_json(mine).dump() + "\n",
                                        0644, util::Durability::replace_only);
      !st) {
    return own("could not record this ending in the group directory: " + st.error());
  }
  if (mine.failed) {
    Claim c = claim(dir, id.member, "failure");
    if (!c.error.empty()) {
      d.others = other_lines(id, dir, read_members(dir));
      return own("could not claim the group's notice: " + c.error);
    }
    if (c.mine) {
      // Only the sender reads the others' records: a covered rank of a large job does
      // not read every record at its end.
      auto members = read_members(dir);
      d.others = other_lines(id, dir, members);
      d.send = true;
      d.claim_lock = c.lock;
      d.role = "first_failure";
      d.own_why = unseen_why(id, dir, members.size());
      return d;
    }
    if (c.kind == "success") {
      // Only a group of unknown size: a member that started after the others had ended.
      return own("the group's other members had all succeeded and sent their notice");
    }
    d.role = "covered";
    d.covered_by = c.member;
    return d;
  }
  auto members = read_members(dir);
  d.others = other_lines(id, dir, members);
  for (const auto& [m, r] : members) {
    if (r.ended && r.failed) {
      d.role = "covered";  // that failure's notice is the job's
      d.covered_by = m;
      return d;
    }
  }
  for (const auto& [m, r] : members) {
    if (!r.ended) {
      d.role = "not_last";  // the last member to end decides
      return d;
    }
  }
  Claim c = claim(dir, id.member, "success");
  if (!c.error.empty()) {
    return own("could not claim the group's notice: " + c.error);
  }
  if (!c.mine) {
    d.role = "covered";
    d.covered_by = c.member;
    return d;
  }
  d.send = true;
  d.claim_lock = c.lock;
  d.role = "all_succeeded";
  d.own_why = unseen_why(id, dir, members.size());
  if (!d.own_why.empty()) {
    d.role = "own";
  }
  return d;
}

void mark_sent(const std::string& dir, GroupDecision& d) {
  util::UniqueFd fd(
      ::open((dir + "/sent").c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  d.claim_lock.reset();
}

std::optional<std::string> abandoned_claim_run_dir(const std::string& dir) {
  if (::access((dir + "/sent").c_str(), F_OK) == 0) {
    return std::nullopt;
  }
  util::UniqueFd fd(::open((dir + "/" + k_claim).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid() || ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0) {
    return std::nullopt;  // no claim, or its maker is still at it
  }
  auto text = util::read_file(dir + "/" + k_claim);
  if (!text) {
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("member") || !j["member"].is_string()) {
    return std::nullopt;
  }
  auto members = read_members(dir);
  auto it = members.find(j["member"].get<std::string>());
  if (it == members.end()) {
    return std::nullopt;
  }
  return it->second.run_dir;
}

bool take_over(const std::string& dir) {
  util::UniqueFd fd(::open((dir + "/takeover").c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  return fd.valid();
}

bool first_to_hold(const std::string& dir) {
  if (!util::make_dirs(dir, 0755)) {
    return true;
  }
  std::string path = dir + "/held";
  util::UniqueFd fd(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  return fd.valid() || errno != EEXIST;
}

util::Result<ArrayDigest> finish_array_member(const std::string& dir, int size,
                                              const MemberRecord& ending) {
  if (auto st = util::make_dirs(dir, 0755); !st) {
    return util::Error{st.error()};
  }
  MemberRecord mine = ending;
  mine.ended = true;
  if (auto st = util::write_file_atomic(dir + "/e." + util::safe_file_component(mine.member, 120),
                                        record_json(mine).dump() + "\n", 0644,
                                        util::Durability::replace_only);
      !st) {
    return util::Error{st.error()};
  }
  ArrayDigest digest;
  auto members = read_members(dir);
  if (members.size() < static_cast<size_t>(size)) {
    return digest;  // a later member sends it
  }
  Claim c = claim(dir, mine.member, "digest");
  if (!c.error.empty()) {
    return util::Error{c.error};
  }
  if (!c.mine) {
    return digest;
  }
  digest.send = true;
  for (auto& [m, r] : members) {
    digest.members.push_back(r);
  }
  std::sort(digest.members.begin(), digest.members.end(),
            [](const MemberRecord& a, const MemberRecord& b) {
              return std::atol(a.member.c_str()) < std::atol(b.member.c_str());
            });
  return digest;
}

nlohmann::json decision_json(const GroupIdentity& id, const std::string& dir,
                             const GroupDecision& d) {
  nlohmann::json j = {{"key", id.key}, {"noun", id.noun}, {"rank", id.rank}, {"member", id.member},
                      {"dir", dir},    {"role", d.role},  {"send", d.send},  {"others", d.others}};
  if (id.size) {
    j["size"] = *id.size;
  }
  if (!d.own_why.empty()) {
    j["own_why"] = d.own_why;
  }
  if (!d.covered_by.empty()) {
    j["covered_by"] = d.covered_by;
  }
  return j;
}

}  // namespace report
