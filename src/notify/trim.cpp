#include "notify/trim.hpp"

#include <strings.h>

#include <vector>

#include "notify/text_filters.hpp"
#include "util/text.hpp"

namespace notify {

namespace {

// The value of `name` in a header block ("Content-Type: multipart/mixed; boundary=X").
std::string_view header_value(std::string_view headers, std::string_view name) {
  size_t at = 0;
  while (at < headers.size()) {
    size_t eol = headers.find("\r\n", at);
    std::string_view line = headers.substr(at, eol == std::string_view::npos ? eol : eol - at);
    if (line.size() > name.size() && line[name.size()] == ':' &&
        strncasecmp(line.data(), name.data(), name.size()) == 0) {
      return line.substr(name.size() + 1);
    }
    if (eol == std::string_view::npos) {
      break;
    }
    at = eol + 2;
  }
  return {};
}

std::string param(std::string_view value, std::string_view key) {
  size_t at = value.find(std::string(key) + "=");
  if (at == std::string_view::npos) {
    return {};
  }
  std::string_view v = value.substr(at + key.size() + 1);
  if (!v.empty() && v.front() == '"') {
    return std::string(v.substr(1, v.find('"', 1) - 1));
  }
  return std::string(v.substr(0, v.find_first_of("; \r\n")));
}

}  // namespace

std::optional<std::string> trim_attachments(std::string_view message, uint64_t limit,
                                            const std::string& why) {
  size_t head_end = message.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view headers = message.substr(0, head_end + 2);
  std::string boundary = param(header_value(headers, "Content-Type"), "boundary");
  if (boundary.empty()) {
    return std::nullopt;
  }
  const std::string delim = "\r\n--" + boundary;
  // Parts between delimiters; the first (after the preamble) is the body.
  std::vector<std::string_view> parts;
  size_t at = message.find("--" + boundary, head_end);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view preamble = message.substr(0, at);
  at += 2 + boundary.size();
  for (;;) {
    if (message.substr(at, 2) == "--") {
      break;  // the closing delimiter
    }
    size_t next = message.find(delim, at);
    if (next == std::string_view::npos) {
      return std::nullopt;
    }
    parts.push_back(message.substr(at, next - at));  // starts with CRLF, then its headers
    at = next + delim.size();
  }
  if (parts.size() < 2) {
    return std::nullopt;
  }
  auto total = [&](size_t kept, size_t note_size) {
    size_t n = preamble.size() + note_size + boundary.size() + 8;
    for (size_t i = 0; i < kept; ++i) {
      n += parts[i].size() + boundary.size() + 4;
    }
    return n;
  };
  constexpr size_t k_note_reserve = 4096;
  size_t kept = parts.size();
  while (kept > 1 && (limit == 0 || total(kept, k_note_reserve) > limit)) {
    --kept;
  }
  if (kept == parts.size()) {
    return std::nullopt;  // everything fits: the size is not the attachments' doing
  }
  std::string note = "The mail server refused this message for its size (" +
                     sanitize_header_value(why, 300) +
                     "); it was sent again without these attachments:\r\n";
  for (size_t i = kept; i < parts.size(); ++i) {
    size_t hend = parts[i].find("\r\n\r\n");
    std::string_view ph = parts[i].substr(0, hend == std::string_view::npos ? 0 : hend + 2);
    std::string name = param(header_value(ph, "Content-Disposition"), "filename");
    note += "  " + sanitize_header_value(name.empty() ? "(unnamed)" : name, 200) + " (" +
            util::human_size(parts[i].size()) + " encoded)\r\n";
  }
  note += "They are still on the machine the job ran on (see the run directory above).\r\n";
  std::string out(preamble);
  for (size_t i = 0; i < kept; ++i) {
    out += "--" + boundary;
    out += parts[i];
    out += "\r\n";
  }
  out += "--" + boundary + "\r\nContent-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Disposition: inline\r\nContent-Transfer-Encoding: 8bit\r\n\r\n";
  out += util::valid_utf8(note);
  out += "\r\n--" + boundary + "--\r\n";
  return out;
}

}  // namespace notify
