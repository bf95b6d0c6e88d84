// notify/attachments.hpp: which files travel with a notice, within a budget.
//
// Message building calls gather_attachments() with the run's log, the job's
// cwd and the --attach globs. The log goes first, gzipped (or, when even that
// is too big, its head and tail with a note of the cut), then each glob's
// matches in order. Every file considered comes back, attached or not, with a
// reason when not: nothing is dropped silently. The budget counts the bytes the
// attachments take in the message as sent (base64: 4 for 3, CRLF every 76), so
// that a 10 MiB budget is a message of about 10 MiB, not 13.7.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace notify {

struct Attachment {
  std::string name;  // file name in the message
  std::string path;  // where the original lives
  std::string content_type;
  uint64_t size = 0;  // bytes attached, or the file's size when not attached
  bool attached = false;
  std::string note;  // why not attached, or what was cut
  std::string data;  // the bytes when attached
};

// A file a glob matched, before budgeting. `rejected` non-empty: cannot be
// attached whatever the budget (symlink outside cwd, not a regular file...).
struct Candidate {
  std::string name, path;
  uint64_t size = 0;
  std::string rejected;
};

// Bytes that `raw` bytes take base64-encoded in a message, and the inverse (at most).
uint64_t encoded_size(uint64_t raw);
uint64_t raw_for_encoded(uint64_t encoded);

// Pure budget planning: in order, each candidate is attached when its encoded
// size fits in what is left (`remaining`, encoded bytes); the rest carry their
// reason. data is not filled.
std::vector<Attachment> plan_budget(uint64_t remaining, const std::vector<Candidate>& candidates);

// When the whole log does not fit: how many bytes of head and tail to keep
// (each at most a quarter of the budget, never overlapping).
struct HeadTail {
  uint64_t head = 0, tail = 0;
};
HeadTail head_tail_sizes(uint64_t log_size, uint64_t budget);

// gzip (RFC 1952) of data; nullopt when the output would exceed limit bytes.
std::optional<std::string> gzip(std::string_view data, uint64_t limit);

// The log as an attachment: whole and gzipped when it fits, else head and
// tail gzipped with a note naming where the full log lives (full_log_where).
Attachment log_attachment(const std::string& log_path, uint64_t budget,
                          const std::string& full_log_where);

// Expands globs relative to cwd (absolute ones as they are), in order, and
// classifies each match. `skip_real` holds real paths already attached. A
// pattern with wildcards may match only files under cwd or run_dir (so that
// '../../*' or '/etc/*' attach nothing); a path named without wildcards is
// taken wherever it is, since the person asked for exactly that file.
std::vector<Candidate> expand_globs(const std::string& cwd, const std::vector<std::string>& globs,
                                    std::vector<std::string> skip_real = {},
                                    const std::string& run_dir = "");

// Everything together: the log, then the globs, read into memory.
std::vector<Attachment> gather_attachments(const std::string& log_path, const std::string& cwd,
                                           const std::vector<std::string>& globs, uint64_t budget,
                                           const std::string& full_log_where);

std::string content_type_for(std::string_view name);

}  // namespace notify
