#include "classify/ere.hpp"

#include <cctype>

namespace classify {

namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool is_ere_special(char c) { return std::string_view(".[]()*+?{}|^$\\").find(c) != std::string_view::npos; }

}  // namespace

std::optional<std::string> to_gnu_ere(const std::string& p, bool caseless) {
  std::string out;
  size_t i = 0;
  if (p.rfind("(?i)", 0) == 0) {
    caseless = true;
    i = 4;
  }
  bool in_bracket = false;
  size_t bracket_start = 0;
  for (; i < p.size(); ++i) {
    char c = p[i];
    if (in_bracket) {
      if (c == ']' && i > bracket_start) {
        in_bracket = false;
        out.push_back(c);
      } else if (c == '\\' && i + 1 < p.size()) {
        char e = p[++i];
        if (e == 'd') {
          out += "0-9";
        } else if (e == 'w') {
          out += "[:alnum:]_";
        } else if (e == 's') {
          out += "[:space:]";
        } else if (e == 'r') {
          out.push_back('\r');
        } else if (e == 'n') {
          // grep never sees a newline inside a line: nothing to exclude
        } else if (e == 't') {
          out.push_back('\t');
        } else if (e == 'x' && i + 2 < p.size() && hex(p[i + 1]) >= 0 && hex(p[i + 2]) >= 0) {
          out.push_back(static_cast<char>(hex(p[i + 1]) * 16 + hex(p[i + 2])));
          i += 2;
        } else if (std::ispunct(static_cast<unsigned char>(e)) && e != ']' && e != '-' &&
                   e != '^' && e != '[') {
          out.push_back(e);
        } else {
          return std::nullopt;
        }
      } else {
        if (caseless && std::isalpha(static_cast<unsigned char>(c)) &&
            !(i + 1 < p.size() && p[i + 1] == '-') && !(i > 0 && p[i - 1] == '-')) {
          out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
          out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
        } else {
          out.push_back(c);
        }
      }
      continue;
    }
    if (c == '[') {
      in_bracket = true;
      out.push_back(c);
      bracket_start = i + 1;
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out.push_back('^');
        ++i;
        bracket_start = i + 1;
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

}  // namespace classify
