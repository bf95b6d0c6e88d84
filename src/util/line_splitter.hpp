// util/line_splitter.hpp: cuts a byte stream into lines, in bounded memory; the one
// line splitter (the scanner's stream, a log read for a mail's excerpt, split_lines).
//
// Fed arbitrary chunks (a split may fall anywhere, even inside "\r\n" or a UTF-8
// sequence), it calls back once per segment with the same segments whatever the
// chunking. '\n' ends a line. With Breaks::segments (the classifier's), '\r' also
// ends a segment, because progress bars redraw with '\r' and each redraw is a message
// of its own, and empty segments are not reported; with Breaks::lines, '\r' is text
// and empty lines are reported too. The segments of one line share its 1-based line
// number (the number an editor shows). A segment longer than the cap is passed on cut
// to its first `cap` bytes and the rest is skipped, so a 2 GB line without a newline
// costs `cap` bytes of memory.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace util {

inline constexpr size_t k_line_cap = 64 * 1024;

class LineSplitter {
 public:
  enum class Breaks { segments, lines };
  explicit LineSplitter(size_t cap = k_line_cap, Breaks breaks = Breaks::segments)
      : m_cap(cap), m_lines(breaks == Breaks::lines) {}

  // on_segment(std::string_view text, uint64_t line_number)
  template <typename F>
  void feed(std::string_view bytes, F&& on_segment) {
    const char* p = bytes.data();
    const size_t n = bytes.size();
    size_t pos = 0;
    while (pos < n) {
      const void* nl = std::memchr(p + pos, '\n', n - pos);
      const size_t line_end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - p) : n;
      while (true) {
        const void* cr = m_lines ? nullptr : std::memchr(p + pos, '\r', line_end - pos);
        const size_t seg_end =
            cr ? static_cast<size_t>(static_cast<const char*>(cr) - p) : line_end;
        if (cr || nl) {
          emit(std::string_view(p + pos, seg_end - pos), on_segment, m_lines);
          pos = seg_end + 1;
          if (!cr) {
            ++m_line;  // the '\n' itself
            m_line_open = false;
            break;
          }
          m_line_open = true;
        } else {
          append(std::string_view(p + pos, seg_end - pos));
          pos = seg_end;
          break;
        }
      }
    }
  }

  // Reports the last segment when the stream does not end with a line break.
  template <typename F>
  void finish(F&& on_segment) {
    emit(std::string_view(), on_segment);
    if (m_line_open) {
      ++m_line;
      m_line_open = false;
    }
  }

  // The caller left out bytes of the stream holding `newlines` '\n' bytes and ending
  // right after one. The segment in progress is reported now, as the bytes left out
  // would have ended it, and the line count advances past the skipped lines, so
  // later segments get the numbers they would have had ('\r' in the skipped bytes
  // does not count, as it doesn't in feed()). With `newlines` 0 the gap is inside
  // the current line, which stays open.
  template <typename F>
  void skip(uint64_t newlines, F&& on_segment) {
    emit(std::string_view(), on_segment);
    if (newlines > 0) {
      m_line += newlines;
      m_line_open = false;
    }
  }

  // Lines seen so far; a last line without '\n' counts once finish() ran.
  uint64_t lines() const { return m_line; }

 private:
  void append(std::string_view part) {
    if (!part.empty()) {
      m_line_open = true;
    }
    if (m_buf.size() < m_cap) {
      m_buf.append(part.substr(0, m_cap - m_buf.size()));
    }
  }

  // Ends the current segment with `tail` as its last bytes.
  // An empty segment is reported only when `empty_too` (a whole line, Breaks::lines).
  template <typename F>
  void emit(std::string_view tail, F& on_segment, bool empty_too = false) {
    std::string_view seg;
    if (m_buf.empty()) {
      seg = tail.substr(0, m_cap);  // common case: no copy
    } else {
      append(tail);
      seg = m_buf;
    }
    if (!seg.empty() || empty_too) {
      on_segment(seg, m_line + 1);
    }
    m_buf.clear();
  }

  size_t m_cap;
  bool m_lines;
  std::string m_buf;
  uint64_t m_line = 0;
  bool m_line_open = false;  // bytes of an unfinished line were seen
};

}  // namespace util
