#include "notify/log_excerpt.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#include "notify/text_filters.hpp"
#include "report/run_dir.hpp"
#include "util/fd.hpp"
#include "util/line_splitter.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

constexpr size_t k_max_line = 4096;  // a progress bar can be megabytes on one line

std::string quote(std::string_view raw) {
  if (raw.size() > k_max_line) {
    raw = raw.substr(raw.size() - k_max_line);  // the last redraw is at the end
  }
  return mask_secrets(clean_log_line(raw));
}

// Calls fn(number, raw_line) for each line of path until fn returns false. A line
// is its last non-empty '\r' segment (a progress bar's last redraw, what the scanner
// saw last of it), at most k_max_line bytes of it; lines with no text are left out.
bool for_each_line(const std::string& path,
                   const std::function<bool(uint64_t, std::string_view)>& fn) {
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return false;
  }
  util::LineSplitter splitter(k_max_line);
  std::string last;  // the line in progress: its last segment so far
  uint64_t number = 0;
  bool more = true;
  auto on_segment = [&](std::string_view segment, uint64_t line) {
    if (line != number && number != 0 && more) {
      more = fn(number, last);
    }
    number = line;
    last.assign(segment);
  };
  std::vector<char> buf(1 << 16);
  while (more) {
    ssize_t n = util::read_retry(fd.get(), buf.data(), buf.size());
    if (n <= 0) {
      break;
    }
    splitter.feed(std::string_view(buf.data(), static_cast<size_t>(n)), on_segment);
  }
  splitter.finish(on_segment);
  if (number != 0 && more) {
    fn(number, last);
  }
  return true;
}

// Fills the context of every window whose file is `path`. A window whose line
// number does not hold its text (a log rotated or renumbered) is moved to the
// first line that does.
void fill_windows(const std::string& path, std::vector<EvidenceWindow*> windows) {
  if (windows.empty()) {
    return;
  }
  std::map<uint64_t, std::optional<std::string>> wanted;
  uint64_t last = 0;
  for (auto* w : windows) {
    for (uint64_t n = w->hit > k_context_lines ? w->hit - k_context_lines : 1;
         n <= w->hit + k_context_lines; ++n) {
      wanted[n];
    }
    last = std::max(last, w->hit + k_context_lines);
  }
  bool read = for_each_line(path, [&](uint64_t n, std::string_view line) {
    if (auto it = wanted.find(n); it != wanted.end()) {
      it->second = quote(line);
    }
    return n < last;
  });
  if (!read) {
    return;
  }
  for (auto* w : windows) {
    auto at = wanted.find(w->hit);
    bool holds = at != wanted.end() && at->second && at->second->find(w->text) != std::string::npos;
    if (!w->text.empty() && !holds) {
      // Relocate by content: one more pass, only for this rare case.
      uint64_t found = 0;
      for_each_line(path, [&](uint64_t n, std::string_view line) {
        if (quote(line).find(w->text) != std::string::npos) {
          found = n;
          return false;
        }
        return true;
      });
      if (found != 0) {
        w->hit = found;
        fill_windows(path, {w});
        continue;
      }
    }
    for (uint64_t n = w->hit > k_context_lines ? w->hit - k_context_lines : 1;
         n <= w->hit + k_context_lines; ++n) {
      auto it = wanted.find(n);
      bool wrapper_line =
          it != wanted.end() && it->second && it->second->rfind(report::k_marker, 0) == 0;
      if (it != wanted.end() && it->second && (n == w->hit || !wrapper_line)) {
        w->context.push_back({n, *it->second});
      }
    }
  }
}

}  // namespace

std::vector<std::string> tail_lines(std::string_view raw, size_t keep, bool* cut) {
  std::vector<std::string> out;
  for (std::string_view line : util::split_lines(raw)) {
    if (line.substr(0, report::k_marker.size()) == report::k_marker) {
      continue;
    }
    out.push_back(quote(line));
  }
  if (cut) {
    *cut = out.size() > keep;
  }
  if (out.size() > keep) {
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(keep));
  }
  return out;
}

LogExcerpt read_excerpt(const std::string& log_path, const std::string& kernel_path,
                        const std::vector<model::EvidenceLine>& evidence) {
  LogExcerpt ex;
  std::vector<EvidenceWindow*> log_windows, kernel_windows;
  ex.evidence.reserve(evidence.size());
  for (const auto& e : evidence) {
    EvidenceWindow w;
    w.source = e.source;
    w.hit = e.line;
    w.text = mask_secrets(clean_log_line(e.text));
    if (e.line > 0 && (e.source == "log" || e.source.empty())) {
      w.file = "output.log";
    } else if (e.line > 0 && e.source == "kernel") {
      w.file = "kernel.log";
    }
    ex.evidence.push_back(std::move(w));
  }
  for (auto& w : ex.evidence) {
    if (w.file == "output.log") {
      log_windows.push_back(&w);
    } else if (w.file == "kernel.log") {
      kernel_windows.push_back(&w);
    }
  }
  fill_windows(log_path, log_windows);
  fill_windows(kernel_path, kernel_windows);

  util::UniqueFd fd(::open(log_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    ex.error = "open " + log_path + ": " + std::strerror(errno);
    return ex;
  }
  struct stat st {};
  ::fstat(fd.get(), &st);
  off_t start = st.st_size > static_cast<off_t>(k_tail_window)
                    ? st.st_size - static_cast<off_t>(k_tail_window)
                    : 0;
  std::string raw(static_cast<size_t>(st.st_size - start), '\0');
  ssize_t n = ::pread(fd.get(), raw.data(), raw.size(), start);
  raw.resize(n > 0 ? static_cast<size_t>(n) : 0);
  // The first line is partial when the window starts inside it. It is kept all
  // the same: when it is the job's last line (a progress bar redrawn with '\r'
  // for 256 KiB and killed mid-epoch), its end, the last redraw, is what matters,
  // and quote() shows just that.
  ex.tail = tail_lines(raw, k_tail_lines, &ex.tail_cut);
  ex.tail_cut = ex.tail_cut || start > 0;
  return ex;
}

}  // namespace notify
