#include "ere.hpp"

#include <cctype>

namespace bench {

namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool is_ere_special(char c) {
  return std::string_view(".[]()*+?{}|^$\\").find(c) != std::string_view::npos;
}

}  // namespace

std::optional<std::string> to_gnu_ere(const std::string& p, bool caseless) {
  std::string out;
  size_t i = 0;
  if (p.rfind("(?i)", 0) == 0) {
    caseless = true;
    i = 4;
  }
  // A bracket expression is rebuilt on its own: in POSIX brackets a backslash is a
  // literal, so ']' must come first and '-' last instead of being escaped.
  bool in_bracket = false;
  bool negate = false, has_close = false, has_dash = false;
  std::string inner;
  for (; i < p.size(); ++i) {
    char c = p[i];
    if (in_bracket) {
      if (c == ']' && !(inner.empty() && !has_close && !has_dash && p[i - 1] == '[')) {
        in_bracket = false;
        out.push_back('[');
        if (negate) {
          out.push_back('^');
        }
        if (has_close) {
          out.push_back(']');
        }
        out += inner;
        if (has_dash) {
          out.push_back('-');
        }
        out.push_back(']');
      } else if (c == '\\' && i + 1 < p.size()) {
        char e = p[++i];
        if (e == 'd') {
          inner += "0-9";
        } else if (e == 'w') {
          inner += "[:alnum:]_";
        } else if (e == 's') {
          inner += "[:space:]";
        } else if (e == 'r') {
          inner.push_back('\r');
        } else if (e == 'n') {
          // grep never sees a newline inside a line: nothing to exclude
        } else if (e == 't') {
          inner.push_back('\t');
        } else if (e == 'x' && i + 2 < p.size() && hex(p[i + 1]) >= 0 && hex(p[i + 2]) >= 0) {
          inner.push_back(static_cast<char>(hex(p[i + 1]) * 16 + hex(p[i + 2])));
          i += 2;
        } else if (e == ']') {
          has_close = true;
        } else if (e == '-') {
          has_dash = true;
        } else if (std::ispunct(static_cast<unsigned char>(e)) && e != '[' && e != '^') {
          inner.push_back(e);
        } else {
          return std::nullopt;
        }
      } else if (caseless && std::isalpha(static_cast<unsigned char>(c)) &&
                 !(i + 1 < p.size() && p[i + 1] == '-') && !(i > 0 && p[i - 1] == '-')) {
        inner.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        inner.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
      } else {
        inner.push_back(c);
      }
      continue;
    }
    if (c == '[') {
      in_bracket = true;
      negate = has_close = has_dash = false;
      inner.clear();
      if (i + 1 < p.size() && p[i + 1] == '^') {
        negate = true;
        ++i;
      }
      continue;
    }
    if (c == '(' && i + 2 < p.size() && p[i + 1] == '?') {
      if (p[i + 2] == ':') {
        out.push_back('(');
        i += 2;
        continue;
      }
      return std::nullopt;  // inline flags or named groups mid-pattern
    }
    if ((c == '*' || c == '+' || c == '?' || c == '}') && i + 1 < p.size() && p[i + 1] == '?') {
      return std::nullopt;  // lazy quantifiers
    }
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[++i];
      if (e == 'd') {
        out += "[0-9]";
      } else if (e == 'D') {
        out += "[^0-9]";
      } else if (e == 'w' || e == 'W' || e == 's' || e == 'S' || e == 'b' || e == 'B') {
        out.push_back('\\');
        out.push_back(e);
      } else if (e == 'r') {
        out.push_back('\r');
      } else if (e == 't') {
        out.push_back('\t');
      } else if (e == 'x' && i + 2 < p.size() && hex(p[i + 1]) >= 0 && hex(p[i + 2]) >= 0) {
        char ch = static_cast<char>(hex(p[i + 1]) * 16 + hex(p[i + 2]));
        if (is_ere_special(ch)) {
          out.push_back('\\');
        }
        out.push_back(ch);
        i += 2;
      } else if (is_ere_special(e)) {
        out.push_back('\\');
        out.push_back(e);
      } else if (std::ispunct(static_cast<unsigned char>(e))) {
        out.push_back(e);
      } else {
        return std::nullopt;
      }
      continue;
    }
    if (caseless && std::isalpha(static_cast<unsigned char>(c))) {
      out.push_back('[');
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
      out.push_back(']');
      continue;
    }
    out.push_back(c);
  }
  if (in_bracket) {
    return std::nullopt;
  }
  return out;
}

}  // namespace bench
