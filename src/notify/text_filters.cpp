#include "notify/text_filters.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "report/secrets.hpp"
#include "util/text.hpp"

namespace notify {

std::string collapse_redraws(std::string_view line) {
  while (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  size_t cr = line.rfind('\r');
  while (cr != std::string_view::npos) {
    std::string_view last = line.substr(cr + 1);
    if (!last.empty()) {
      return std::string(last);
    }
    line = line.substr(0, cr);
    cr = line.rfind('\r');
  }
  return std::string(line);
}

std::string clean_log_line(std::string_view raw) {
  std::string scratch;
  return util::sanitize_utf8(collapse_redraws(util::strip_ansi(raw, scratch)),
                             util::Controls::drop);
}

std::string mask_secrets(std::string_view line) { return report::mask_secrets(line); }

std::string markup_escape(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += quotes ? "&quot;" : "\"";
        break;
      case '\'':
        out += quotes ? "&#39;" : "'";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string html_escape(std::string_view text) { return markup_escape(text, true); }

std::string sanitize_header_value(std::string_view text, size_t max_chars) {
  std::string flat;
  bool space = false;
  for (char c : util::valid_utf8(text)) {
    unsigned char u = static_cast<unsigned char>(c);
    bool ws = u < 0x20 || u == 0x7f || c == ' ';
    if (ws) {
      space = !flat.empty();
      continue;
    }
    if (space) {
      flat += ' ';
      space = false;
    }
    flat += c;
  }
  if (flat.size() > max_chars) {
    size_t cut = max_chars > 3 ? max_chars - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(flat[cut]) & 0xc0) == 0x80) {
      --cut;  // never split a UTF-8 sequence
    }
    flat = flat.substr(0, cut) + "...";
  }
  return flat;
}

std::string rfc2047_encode(std::string_view value) {
  bool plain = value.find("=?") == std::string_view::npos;
  for (char c : value) {
    unsigned char u = static_cast<unsigned char>(c);
    plain = plain && u >= 0x20 && u < 0x7f;
  }
  if (plain) {
    return std::string(value);
  }
  // Q encoding; each word holds whole characters so it decodes on its own.
  static constexpr size_t k_payload = 54;
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out, word;
  auto flush = [&] {
    if (!word.empty()) {
      out += (out.empty() ? "" : "\r\n ") + ("=?UTF-8?Q?" + word) + "?=";
      word.clear();
    }
  };
  size_t i = 0;
  while (i < value.size()) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
    len = std::min(len, value.size() - i);
    std::string enc;
    for (size_t k = 0; k < len; ++k) {
      unsigned char b = static_cast<unsigned char>(value[i + k]);
      if (b == ' ') {
        enc += '_';
      } else if (std::isalnum(b) && b < 0x80) {
        enc += static_cast<char>(b);
      } else if (b == '!' || b == '*' || b == '+' || b == '-' || b == '/') {
        enc += static_cast<char>(b);
      } else {
        enc += '=';
        enc += k_hex[b >> 4];
        enc += k_hex[b & 15];
      }
    }
    if (word.size() + enc.size() > k_payload) {
      flush();
    }
    word += enc;
    i += len;
  }
  flush();
  return out;
}

}  // namespace notify
