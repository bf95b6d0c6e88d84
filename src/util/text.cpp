#include "util/text.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/line_splitter.hpp"

namespace util {

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) {
      return false;
    }
  }
  return true;
}

std::optional<size_t> whole_number(std::string_view s) {
  size_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    return std::nullopt;
  }
  return v;
}

std::optional<long> leading_number(std::string_view s) {
  long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data() || v <= 0) {
    return std::nullopt;
  }
  return v;
}

std::string shell_quote(std::string_view word) {
  if (word.empty()) {
    return "''";
  }
  bool plain = true;
  bool control = false;
  for (unsigned char c : word) {
    if (c < 0x20 || c == 0x7f) {
      control = true;
    }
    if (!(std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '=' || c == ':' ||
          c == ',' || c == '+' || c == '@' || c == '%' || c >= 0x80)) {
      plain = false;
    }
  }
  if (plain) {
    return std::string(word);
  }
  if (!control) {
    std::string out = "'";
    for (char c : word) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    return out + "'";
  }
  std::string out = "$'";
  for (unsigned char c : word) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) {
      out += ' ';
    }
    out += shell_quote(a);
  }
  return out;
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text, bool allow_zero) {
  std::string bad = "invalid duration '" + std::string(text) +
                    "' (expected e.g. 90s, 30m, 2h, 1h30m, 1.5h, 500ms)";
  if (text.empty()) {
    return Error{bad};
  }
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (i == start) {
      return Error{bad};
    }
    std::string num(text.substr(start, i - start));
    char* end = nullptr;
    double value = std::strtod(num.c_str(), &end);
    if (end == num.c_str() || *end != '\0') {
      return Error{bad};
    }
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit.empty() || unit == "s") {
      scale = 1000;
      if (unit.empty() && i != text.size()) {
        return Error{bad};
      }
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "m" || unit == "min") {
      scale = 60e3;
    } else if (unit == "h") {
      scale = 3600e3;
    } else if (unit == "d") {
      scale = 86400e3;
    } else {
      return Error{bad};
    }
    total_ms += value * scale;
  }
  if (!std::isfinite(total_ms) || total_ms > 1e15 || (total_ms <= 0 && !allow_zero)) {
    return Error{bad};
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

Result<uint64_t> parse_size(std::string_view text) {
  std::string bad = "invalid size '" + std::string(text) + "' (expected e.g. 10MiB, 512k, 2G)";
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) {
    return Error{bad};
  }
  std::string num(text.substr(0, i));
  char* end = nullptr;
  double value = std::strtod(num.c_str(), &end);
  if (*end != '\0') {
    return Error{bad};
  }
  std::string unit;
  for (char c : text.substr(i)) {
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  double scale = 0;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kib") {
    scale = 1024.0;
  } else if (unit == "m" || unit == "mib") {
    scale = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gib") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "kb") {
    scale = 1e3;
  } else if (unit == "mb") {
    scale = 1e6;
  } else if (unit == "gb") {
    scale = 1e9;
  } else {
    return Error{bad};
  }
  double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes > 1e18) {
    return Error{bad};
  }
  return static_cast<uint64_t>(bytes);
}

std::string human_duration(double seconds) {
  if (seconds < 0) {
    seconds = 0;
  }
  auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[64];
  if (s < 60) {
    if (seconds < 10) {
      std::snprintf(buf, sizeof buf, "%.1fs", seconds);
    } else {
      std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
    }
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s % 3600) / 60));
  }
  return buf;
}

std::string human_size(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

std::string iso8601_local(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf - 1, "%Y-%m-%dT%H:%M:%S%z", &tm);
  // %z gives +0100; ISO 8601 extended form wants +01:00 (done in the buffer: GCC 12
  // warns falsely about std::string::insert here).
  if (n >= 5) {
    std::memmove(buf + n - 1, buf + n - 2, 3);  // the last two digits and the NUL
    buf[n - 2] = ':';
  }
  return buf;
}

std::optional<std::time_t> parse_iso8601(std::string_view text) {
  // Digits at fixed places, not strptime: reports are read by the thousand (`stats`).
  auto digits = [&](size_t at, size_t n) -> std::optional<int> {
    if (at + n > text.size()) {
      return std::nullopt;
    }
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') {
        return std::nullopt;
      }
      v = v * 10 + (text[i] - '0');
    }
    return v;
  };
  auto year = digits(0, 4), mon = digits(5, 2), day = digits(8, 2), hour = digits(11, 2),
       min = digits(14, 2), sec = digits(17, 2);
  if (!year || !mon || !day || !hour || !min || !sec || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != ' ') || text[13] != ':' || text[16] != ':' || *mon < 1 ||
      *mon > 12 || *day < 1 || *day > 31 || *hour > 23 || *min > 59 || *sec > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *mon - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *min;
  tm.tm_sec = *sec;
  std::time_t t = ::timegm(&tm);
  size_t i = 19;
  if (i < text.size() && (text[i] == '.' || text[i] == ',')) {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      ++i;
    }
  }
  if (i == text.size() || (text[i] == 'Z' && i + 1 == text.size())) {
    return t;
  }
  if (text[i] != '+' && text[i] != '-') {
    return std::nullopt;
  }
  auto oh = digits(i + 1, 2);
  size_t m_at = i + 3 < text.size() && text[i + 3] == ':' ? i + 4 : i + 3;
  auto om = digits(m_at, 2);
  if (!oh || !om || m_at + 2 != text.size() || *oh > 23 || *om > 59) {
    return std::nullopt;
  }
  std::time_t off = (*oh * 60 + *om) * 60;
  return text[i] == '+' ? t - off : t + off;
}

std::string compact_local(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    return 1;
  }
  size_t len = 0;
  uint32_t min = 0;
  if ((c & 0xe0) == 0xc0) {
    len = 2;
    min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3;
    min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4;
    min = 0x10000;
  }
  if (len == 0 || i + len > s.size()) {
    return 0;
  }
  uint32_t cp = c & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (cc & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return len;
}

std::string_view strip_ansi(std::string_view in, std::string& scratch) {
  const char* esc = static_cast<const char*>(std::memchr(in.data(), '\x1b', in.size()));
  if (!esc) {
    return in;
  }
  scratch.clear();
  scratch.reserve(in.size());
  size_t i = 0;
  const size_t n = in.size();
  auto byte = [&](size_t k) { return static_cast<unsigned char>(in[k]); };
  while (i < n) {
    if (in[i] != '\x1b') {
      scratch.push_back(in[i]);
      ++i;
      continue;
    }
    if (i + 1 >= n) {
      break;
    }
    char kind = in[i + 1];
    i += 2;
    if (kind == '[') {  // CSI: parameters and intermediates, then one final byte
      while (i < n && byte(i) >= 0x20 && byte(i) <= 0x3f) {
        ++i;
      }
      if (i < n && byte(i) >= 0x40 && byte(i) <= 0x7e) {
        ++i;
      }
    } else if (kind == ']' || kind == 'P' || kind == '_' || kind == '^') {  // to BEL or ST
      while (i < n && in[i] != '\x07' && !(in[i] == '\x1b' && i + 1 < n && in[i + 1] == '\\')) {
        ++i;
      }
      i = std::min(n, i + ((i < n && in[i] == '\x07') ? 1 : 2));
    } else if (kind == '(' || kind == ')' || kind == '#') {  // charset: one more byte
      i = std::min(n, i + 1);
    }
    // any other two-byte escape: both bytes dropped
  }
  return scratch;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      return false;
    }
    i += len;
  }
  return true;
}

std::string sanitize_utf8(std::string_view s, Controls controls, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 8);
  for (size_t i = 0; i < s.size();) {
    if (out.size() >= max_bytes) {
      out += " [...]";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 || c == 0x7f) && controls != Controls::keep) {
      if (controls == Controls::replace) {
        out += c == '\t' ? std::string_view(" ") : k_replacement_character;
      } else if (c == '\t') {
        out += '\t';
      }
      ++i;
    } else if (size_t len = utf8_sequence_length(s, i); len > 0) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += k_replacement_character;
      ++i;
    }
  }
  return out;
}

// Hand-written: the static gpualert links no library that has it (libcurl's is in
// the helper only), and the report must carry exact bytes of paths and arguments.
namespace {
constexpr char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v =
        (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    out += k_b64[v >> 18];
    out += k_b64[(v >> 12) & 63];
    out += k_b64[(v >> 6) & 63];
    out += k_b64[v & 63];
  }
  if (size_t rest = in.size() - i; rest > 0) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (rest == 2) {
      v |= uint32_t(uint8_t(in[i + 1])) << 8;
    }
    out += k_b64[v >> 18];
    out += k_b64[(v >> 12) & 63];
    out += rest == 2 ? k_b64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = in[i + k];
      const char* at = c == '\0' ? nullptr : std::strchr(k_b64, c);
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      if (at == nullptr || pad > 0) {
        return std::nullopt;
      }
      v = (v << 6) | static_cast<uint32_t>(at - k_b64);
    }
    out += static_cast<char>(v >> 16);
    if (pad < 2) {
      out += static_cast<char>((v >> 8) & 255);
    }
    if (pad < 1) {
      out += static_cast<char>(v & 255);
    }
  }
  return out;
}

std::string safe_file_component(std::string_view text, size_t max_len) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= max_len) {
      break;
    }
    out += (std::isalnum(c) || c == '.' || c == '_' || c == '-') ? static_cast<char>(c) : '_';
  }
  while (!out.empty() && out.front() == '.') {
    out.front() = '_';
  }
  return out.empty() ? std::string("job") : out;
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) {
    return "unknown-host";
  }
  return buf;
}

std::string username() {
  // The login's own variables first, as Python's getpass.getuser() and most tools
  // do: Slurm, sudo, su and cron set them. Then the files source of the passwd
  // database, read a line at a time up to the entry (a site may sync a large one).
  for (const char* var : {"LOGNAME", "USER"}) {
    if (const char* u = std::getenv(var); u != nullptr && *u != '\0') {
      return u;
    }
  }
  const unsigned long uid = ::geteuid();
  std::optional<std::string> name;
  if (FILE* f = std::fopen("/etc/passwd", "re")) {
    char* line = nullptr;
    size_t capacity = 0;
    ssize_t n = 0;
    while (!name && (n = ::getline(&line, &capacity, f)) > 0) {
      name = passwd_name(std::string_view(line, static_cast<size_t>(n)), uid);
    }
    std::free(line);
    std::fclose(f);
  }
  return name ? *name : "uid" + std::to_string(uid);
}

std::optional<std::string> passwd_name(std::string_view text, unsigned long uid) {
  const std::string wanted = std::to_string(uid);
  for (std::string_view line : split_lines(text)) {
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    const size_t c3 = c2 == std::string_view::npos ? c2 : line.find(':', c2 + 1);
    if (c3 == std::string_view::npos || c1 == 0 || line[0] == '#' || line[0] == '+' ||
        line[0] == '-') {
      continue;  // malformed, a comment, or an NIS compat entry
    }
    if (line.substr(c2 + 1, c3 - c2 - 1) == wanted) {
      return std::string(line.substr(0, c1));
    }
  }
  return std::nullopt;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  LineSplitter splitter(std::string_view::npos, LineSplitter::Breaks::lines);
  splitter.feed(text, [&lines](std::string_view line, uint64_t) { lines.push_back(line); });
  // A last line without '\n' waits in the splitter for more input; it is the text's tail.
  const size_t nl = text.rfind('\n');
  const size_t tail = nl == std::string_view::npos ? 0 : nl + 1;
  if (tail < text.size()) {
    lines.push_back(text.substr(tail));
  }
  return lines;
}

}  // namespace util
