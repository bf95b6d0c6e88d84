#include "notify/text_filters.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

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

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (size_t len = util::utf8_sequence_length(s, i); len > 0) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += util::k_replacement_character;
      ++i;
    }
  }
  return out;
}

std::string clean_log_line(std::string_view raw) {
  std::string scratch;
  std::string text = valid_utf8(collapse_redraws(util::strip_ansi(raw, scratch)));
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 || c == '\t') {
      out += c != 0x7f ? c : '?';
    }
  }
  return out;
}

std::string mask_secrets(std::string_view line) {
  // RE2, not std::regex: this runs on untrusted log text (linear time, no recursion).
  static const RE2::Options k_options = [] {
    RE2::Options o;
    o.set_case_sensitive(false);
    o.set_log_errors(false);
    return o;
  }();
  // Names that end in a secret word, then '=' or ':' (env, YAML, JSON, INI, logs).
  static const RE2 k_assign(
      R"(([A-Za-z0-9_.-]*(token|secret|password|passwd|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key)["']?\s*[:=]\s*["']?))"
      R"(([^\s"',;]+))",
      k_options);
  // Command-line flags: --hf-token VALUE, --password=VALUE.
  static const RE2 k_flag(
      R"((--?[A-Za-z0-9_-]*(token|secret|password|passwd|api[_-]?key)(=|\s+)["']?)([^\s"',;-][^\s"',;]*))",
      k_options);
  static const RE2 k_auth(
      R"((authorization["']?\s*[:=]\s*["']?((bearer|basic|token|bot)\s+)?)([^\s"',;]+))",
      k_options);
  static const RE2 k_bearer(R"((\bbearer\s+)([A-Za-z0-9._~+/=-]{8,}))", k_options);
  static const RE2 k_url_creds(R"((://[^/\s:@]+:)([^/\s@]+)(@))", k_options);
  // Token shapes are case-sensitive (AKIA..., hf_...).
  static const RE2 k_shapes(
      R"(\b(hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b)");
  std::string s(line);
  const std::string mask(k_mask);
  RE2::GlobalReplace(&s, k_auth, "\\1" + mask);
  RE2::GlobalReplace(&s, k_bearer, "\\1" + mask);
  RE2::GlobalReplace(&s, k_assign, "\\1" + mask);
  RE2::GlobalReplace(&s, k_flag, "\\1" + mask);
  RE2::GlobalReplace(&s, k_url_creds, "\\1" + mask + "\\3");
  RE2::GlobalReplace(&s, k_shapes, mask);
  return s;
}

std::string html_escape(std::string_view text) {
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
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string sanitize_header_value(std::string_view text, size_t max_chars) {
  std::string flat;
  bool space = false;
  for (char c : valid_utf8(text)) {
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
