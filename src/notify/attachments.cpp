#include "notify/attachments.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <set>

#include "util/fd.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

// Beyond this ratio to the budget, gzipping the whole log cannot fit (logs
// compress about 10x), so we go straight to head and tail instead of reading it all.
constexpr uint64_t k_max_ratio = 50;

struct Deflater {
  z_stream zs{};
  bool ok = false;
  // Level 1: logs still shrink ~10x and a 200 MB log gzips in about a second, not three.
  Deflater() {
    ok = deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~Deflater() {
    if (ok) {
      deflateEnd(&zs);
    }
  }
  // Appends the compressed form of data to out; false when out passes limit.
  bool feed(std::string_view data, bool finish, std::string& out, uint64_t limit) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    zs.avail_in = static_cast<uInt>(data.size());
    char buf[65536];
    int rc = Z_OK;
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      rc = deflate(&zs, finish ? Z_FINISH : Z_NO_FLUSH);
      out.append(buf, sizeof buf - zs.avail_out);
      if (out.size() > limit || rc == Z_STREAM_ERROR) {
        return false;
      }
    } while (zs.avail_out == 0 || (finish && rc != Z_STREAM_END));
    return true;
  }
};

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

// Lexical normalisation: removes "." and "x/.." without touching the disk.
std::string normalize(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) {
      j = path.size();
    }
    std::string part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) {
        parts.pop_back();
      }
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (const auto& p : parts) {
    out += "/" + p;
  }
  return out.empty() ? "/" : out;
}

bool is_under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         (dir == "/" || path[dir.size()] == '/'));
}

std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

util::Result<std::string> read_prefix(const std::string& path, uint64_t max) {
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return util::errno_error("open " + path);
  }
  std::string out;
  char buf[65536];
  while (out.size() < max) {
    ssize_t n = util::read_retry(fd.get(), buf, std::min<uint64_t>(sizeof buf, max - out.size()));
    if (n < 0) {
      return util::errno_error("read " + path);
    }
    if (n == 0) {
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

uint64_t encoded_size(uint64_t raw) {
  uint64_t chars = (raw + 2) / 3 * 4;
  return chars + (chars + 75) / 76 * 2;
}

uint64_t raw_for_encoded(uint64_t encoded) { return encoded / 78 * 76 / 4 * 3; }

std::vector<Attachment> plan_budget(uint64_t remaining, const std::vector<Candidate>& candidates) {
  std::vector<Attachment> out;
  for (const auto& c : candidates) {
    Attachment a;
    a.name = c.name;
    a.path = c.path;
    a.size = c.size;
    a.content_type = content_type_for(c.name);
    if (!c.rejected.empty()) {
      a.note = c.rejected;
    } else if (encoded_size(c.size) > remaining) {
      a.note = "over budget: needs " + util::human_size(encoded_size(c.size)) + " as sent, " +
               util::human_size(remaining) + " left";
    } else {
      a.attached = true;
      remaining -= encoded_size(c.size);
    }
    out.push_back(std::move(a));
  }
  return out;
}

HeadTail head_tail_sizes(uint64_t log_size, uint64_t budget) {
  HeadTail ht;
  ht.head = std::min(budget / 4, log_size / 2);
  ht.tail = std::min(budget / 4, log_size - ht.head);
  return ht;
}

std::optional<std::string> gzip(std::string_view data, uint64_t limit) {
  Deflater d;
  std::string out;
  if (!d.ok || !d.feed(data, true, out, limit)) {
    return std::nullopt;
  }
  return out;
}

Attachment log_attachment(const std::string& log_path, uint64_t budget,
                          const std::string& full_log_where) {
  Attachment a;
  a.name = "output.log.gz";
  a.path = log_path;
  a.content_type = "application/gzip";
  struct stat st {};
  if (::stat(log_path.c_str(), &st) != 0) {
    a.note = std::string("cannot read the log: ") + std::strerror(errno);
    return a;
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  a.size = size;
  if (size <= budget * k_max_ratio) {
    util::UniqueFd fd(::open(log_path.c_str(), O_RDONLY | O_CLOEXEC));
    Deflater d;
    std::string out;
    bool fits = fd.valid() && d.ok;
    char buf[1 << 16];
    while (fits) {
      ssize_t n = util::read_retry(fd.get(), buf, sizeof buf);
      if (n < 0) {
        fits = false;
        break;
      }
      fits = d.feed(std::string_view(buf, static_cast<size_t>(n)), n == 0, out, budget);
      if (n == 0) {
        break;
      }
    }
    if (fits) {
      a.attached = true;
      a.data = std::move(out);
      a.size = a.data.size();
      a.note = "gzipped, " + util::human_size(size) + " uncompressed";
      return a;
    }
  }
  HeadTail ht = head_tail_sizes(size, budget);
  auto head = read_prefix(log_path, ht.head);
  std::string tail(ht.tail, '\0');
  util::UniqueFd fd(::open(log_path.c_str(), O_RDONLY | O_CLOEXEC));
  ssize_t n = fd.valid()
                  ? ::pread(fd.get(), tail.data(), tail.size(), static_cast<off_t>(size - ht.tail))
                  : -1;
  if (!head || n < 0) {
    a.note = "cannot read the log: " + (head ? std::string(std::strerror(errno)) : head.error());
    return a;
  }
  tail.resize(static_cast<size_t>(n));
  uint64_t cut = size - head->size() - tail.size();
  std::string note = "head and tail only: " + util::human_size(cut) + " (bytes " +
                     std::to_string(head->size()) + ".." + std::to_string(size - tail.size()) +
                     " of " + std::to_string(size) + ") cut; the full log is " + full_log_where;
  std::string body = *head + "\n#gpualert# ---- " + note + " ----\n" + tail;
  auto gz = gzip(body, budget);
  a.name = "output-head-tail.log.gz";
  if (!gz) {
    a.note = "over budget even as head and tail; the full log is " + full_log_where;
    return a;
  }
  a.attached = true;
  a.data = std::move(*gz);
  a.size = a.data.size();
  a.note = note;
  return a;
}

std::vector<Candidate> expand_globs(const std::string& cwd, const std::vector<std::string>& globs,
                                    std::vector<std::string> skip_real,
                                    const std::string& run_dir) {
  std::vector<Candidate> out;
  std::string real_cwd = real_path(cwd);
  std::string real_run = run_dir.empty() ? std::string() : real_path(run_dir);
  std::set<std::string> names;
  for (const auto& pattern : globs) {
    std::string full = !pattern.empty() && pattern[0] == '/' ? pattern : cwd + "/" + pattern;
    glob_t g{};
    int rc = ::glob(full.c_str(), GLOB_BRACE | GLOB_TILDE, nullptr, &g);
    if (rc != 0 || g.gl_pathc == 0) {
      out.push_back({pattern, full, 0, "no file matched"});
      ::globfree(&g);
      continue;
    }
    // A pattern reaches only the job's directory and the run directory; a file
    // anywhere else is attached when it is named as it is, without wildcards.
    const bool wildcard = pattern.find_first_of("*?[{") != std::string::npos;
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      Candidate c;
      c.path = g.gl_pathv[i];
      c.name = util::safe_file_component(base_name(c.path), 100);
      std::string stem = c.name;
      for (int k = 2; names.count(c.name) != 0; ++k) {
        c.name = std::to_string(k) + "-" + stem;
      }
      names.insert(c.name);
      std::string real = real_path(c.path);
      struct stat st {};
      if (real.empty() || ::stat(real.c_str(), &st) != 0) {
        c.rejected = std::string("cannot resolve: ") + std::strerror(errno);
      } else if (wildcard && !(!real_cwd.empty() && is_under(real, real_cwd)) &&
                 !(!real_run.empty() && is_under(real, real_run))) {
        c.rejected =
            "outside the job's directory and the run directory (name it without wildcards "
            "to attach it)";
      } else if (real != normalize(c.path) && !real_cwd.empty() && !is_under(real, real_cwd)) {
        c.rejected = "symlink pointing outside the working directory (to " + real + ")";
      } else if (S_ISDIR(st.st_mode)) {
        c.rejected = "a directory (attach files, e.g. dir/*)";
      } else if (!S_ISREG(st.st_mode)) {
        c.rejected = "not a regular file";
      } else if (std::find(skip_real.begin(), skip_real.end(), real) != skip_real.end()) {
        c.rejected = "already attached";
      } else {
        c.size = static_cast<uint64_t>(st.st_size);
        skip_real.push_back(real);
      }
      out.push_back(std::move(c));
    }
    ::globfree(&g);
  }
  return out;
}

std::vector<Attachment> gather_attachments(const std::string& log_path, const std::string& cwd,
                                           const std::vector<std::string>& globs, uint64_t budget,
                                           const std::string& full_log_where) {
  std::vector<Attachment> out;
  out.push_back(log_attachment(log_path, raw_for_encoded(budget), full_log_where));
  uint64_t used = out[0].attached ? encoded_size(out[0].size) : 0;
  uint64_t remaining = budget > used ? budget - used : 0;
  std::string run_dir = log_path.substr(0, log_path.find_last_of('/') + 1);
  auto planned = plan_budget(remaining, expand_globs(cwd, globs, {real_path(log_path)}, run_dir));
  for (auto& a : planned) {
    if (a.attached) {
      auto data = read_prefix(a.path, a.size + 1);
      if (!data) {
        a.attached = false;
        a.note = data.error();
      } else if (encoded_size(data->size()) > remaining) {
        a.attached = false;
        a.note = "grew past the budget while being read";
      } else {
        a.data = std::move(*data);
        a.size = a.data.size();
        remaining -= encoded_size(a.size);
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::string content_type_for(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".gz") || ends(".tgz")) return "application/gzip";
  if (ends(".json")) return "application/json";
  if (ends(".png")) return "image/png";
  if (ends(".jpg") || ends(".jpeg")) return "image/jpeg";
  if (ends(".pdf")) return "application/pdf";
  for (std::string_view ext : {".txt", ".log", ".csv", ".yaml", ".yml", ".md", ".py", ".cfg",
                               ".toml", ".ini", ".out", ".err"}) {
    if (ends(ext)) {
      return "text/plain";
    }
  }
  return "application/octet-stream";
}

}  // namespace notify
