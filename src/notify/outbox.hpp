// notify/outbox.hpp: the durable queue of notices not yet delivered.
//
// FORMAT (Maildir-style, under <state_dir>/outbox):
//   tmp/            entries being written (never read by anyone else)
//   new/ID.eml      the payload: a complete RFC 5322 message (SMTP channel), or
//   new/ID.json     the JSON body to POST (webhook channel), or the push message
//                   (ntfy channel: notify/payloads.hpp)
//   new/ID.meta     sidecar JSON: channel, webhook format, recipients, subject,
//                   run dir, created, attempts, last_attempt, last_error
// add() writes both files in tmp/, fsyncs them, renames the payload then the
// sidecar into new/ and fsyncs new/: an entry exists (is listed) once its
// sidecar is in new/, and is complete from that moment.
//
// Delivery claims an entry with flock() on its payload file (which is never
// rewritten, unlike the sidecar), so `outbox flush`, the background flush and
// notify_run never send the same entry twice at the same time. On success the
// sidecar is removed and the payload moved to <state_dir>/sent/ (the last
// k_sent_keep are kept, for the record); on failure the sidecar is rewritten
// atomically with the attempt count and the reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"
#include "util/result.hpp"

namespace notify {

struct EntryMeta {
  std::string id;
  std::string channel;          // "smtp" | "webhook" | "ntfy"
  std::string format;           // webhook: "slack" | "json"
  std::string url;              // webhook, ntfy: where it goes (empty: the config's at flush)
  std::vector<std::string> to;  // smtp: recipients at queue time (empty: use the config's at flush)
  std::string subject;
  std::string run_dir;
  std::string created;  // ISO 8601
  int attempts = 0;
  std::string last_attempt;
  std::string last_error;
  // Not to be sent before this time (seconds since the epoch; 0: at once): a notice
  // kept in case its run's wrapper is killed, which the wrapper withdraws if it is not.
  int64_t not_before = 0;
};

// An entry held for delivery by this process (flock on its payload).
class ClaimedEntry {
 public:
  ClaimedEntry() = default;
  ClaimedEntry(EntryMeta meta, util::UniqueFd lock)
      : m_meta(std::move(meta)), m_lock(std::move(lock)) {}
  bool valid() const { return m_lock.valid(); }
  EntryMeta& meta() { return m_meta; }
  const EntryMeta& meta() const { return m_meta; }

 private:
  EntryMeta m_meta;
  util::UniqueFd m_lock;
};

inline constexpr size_t k_sent_keep = 50;
// An entry is given up (moved to dead/) after this many failed attempts, or when
// it failed once more after k_max_age_s: a notice that old is no longer news, and
// retrying it for ever against a server that refuses it helps nobody.
inline constexpr int k_max_attempts = 20;
inline constexpr int64_t k_max_age_s = 7 * 24 * 3600;

class Outbox {
 public:
  // dir: <state_dir>/outbox; sent: <state_dir>/sent.
  Outbox(std::string dir, std::string sent);

  // Writes a new entry atomically; fills meta.id and meta.created.
  util::Result<EntryMeta> add(EntryMeta meta, std::string_view payload);
  // Entries in new/, oldest first. Unreadable sidecars come back with last_error set.
  util::Result<std::vector<EntryMeta>> list() const;
  // Locks the entry for delivery. Not valid (and no error) when another
  // process holds it, it is gone, or its not_before has not come. An entry whose
  // payload is missing is moved to dead/ and reported as an error.
  util::Result<ClaimedEntry> claim(const std::string& id) const;
  // Removes an entry that was never sent (a held notice its run superseded). False
  // when it is gone already, or being delivered right now.
  bool withdraw(const std::string& id) const;
  util::Result<std::string> payload(const EntryMeta& meta) const;
  // After a failed attempt: attempts+1, reason, time; the entry stays.
  util::Status record_failure(ClaimedEntry& entry, const std::string& reason) const;
  // After success: the entry leaves new/ for sent/.
  util::Status mark_sent(ClaimedEntry& entry) const;
  // Moves an entry (sidecar and payload, whichever exist) to dead/, with the reason
  // in its sidecar's last_error. Nothing sends or lists it as pending after that.
  void bury(const std::string& id, const std::string& reason) const;
  // Gives up payloads left without their sidecar (older than a minute, so not one
  // that add() is writing): they would never be listed or sent.
  void tidy() const;
  // The entries given up, oldest first (last_error says why).
  std::vector<EntryMeta> dead() const;

  std::string payload_path(const EntryMeta& meta) const;
  const std::string& dir() const { return m_dir; }

 private:
  std::string meta_path(const std::string& id) const;
  util::Status write_meta(const EntryMeta& meta) const;
  std::string m_dir, m_sent;
};

std::string payload_extension(const std::string& channel);

// Whether an entry is held back (its not_before has not come): no flush sends it yet.
bool is_held(const EntryMeta& meta);

}  // namespace notify
