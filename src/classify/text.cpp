#include "classify/text.hpp"

#include <cstring>

#include "util/text.hpp"

namespace classify {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Length of a run of digits at s[i...].
size_t digits_at(std::string_view s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && is_digit(s[i + n])) {
    ++n;
  }
  return n;
}

// Small decimal numbers from a prefix (at most 6 digits, checked by the callers).
int to_int(std::string_view digits) {
  int v = 0;
  for (char c : digits) {
    v = v * 10 + (c - '0');
  }
  return v;
}

// Parses "[<word><digits>]" followed by ':' at the start of s; returns the number of
// bytes consumed (0 if absent) and the number in *value.
size_t bracket_word_number(std::string_view s, std::string_view word, int* value) {
  if (s.size() < word.size() + 4 || s[0] != '[' || s.substr(1, word.size()) != word) {
    return 0;
  }
  size_t i = 1 + word.size();
  size_t n = digits_at(s, i);
  if (n == 0 || n > 6 || i + n + 1 >= s.size() || s[i + n] != ']' || s[i + n + 1] != ':') {
    return 0;
  }
  *value = to_int(s.substr(i, n));
  return i + n + 2;
}

bool is_severity(char c) { return c == 'E' || c == 'W' || c == 'I' || c == 'F'; }

// Finds "] " within the first `limit` bytes; returns the offset after it or 0.
size_t close_bracket_space(std::string_view s, size_t from, size_t limit) {
  size_t end = std::min(s.size(), limit);
  for (size_t i = from; i + 1 < end; ++i) {
    if (s[i] == ']' && s[i + 1] == ' ') {
      return i + 2;
    }
  }
  return 0;
}

size_t strip_one(std::string_view s, int* rank) {
  if (s.empty()) {
    return 0;
  }
  int value = -1;
  if (s[0] == '[') {
    if (size_t n = bracket_word_number(s, "rank", &value)) {
      *rank = value;
      return n;
    }
    if (size_t n = bracket_word_number(s, "default", &value)) {
      if (*rank < 0) {
        *rank = value;
      }
      return n;
    }
    // mpirun --tag-output: "[1,0]<stderr>:"
    size_t a = digits_at(s, 1);
    if (a > 0 && a + 1 < s.size() && s[1 + a] == ',') {
      size_t b = digits_at(s, 2 + a);
      size_t i = 2 + a + b;
      if (b > 0 && i < s.size() && s[i] == ']') {
        std::string_view rest = s.substr(i + 1);
        for (std::string_view tag : {"<stdout>:", "<stderr>:"}) {
          if (rest.substr(0, tag.size()) == tag) {
            *rank = to_int(s.substr(2 + a, std::min<size_t>(b, 6)));
            return i + 1 + tag.size();
          }
        }
      }
    }
    // glog: "[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] " or "[E ProcessGroupNCCL.cpp:475]
    // "
    if (s.size() > 3 && is_severity(s[1]) && (is_digit(s[2]) || s[2] == ' ')) {
      return close_bracket_space(s, 2, 160);
    }
    return 0;
  }
  // python-glog: "W0616 00:37:22.876000 4015698 torch/.../api.py:900] "
  if (is_severity(s[0]) && digits_at(s, 1) == 4 && s.size() > 7 && s[5] == ' ' && is_digit(s[6])) {
    return close_bracket_space(s, 6, 200);
  }
  // srun -l: "0: " or " 12: " (right-aligned task ids)
  size_t sp = 0;
  while (sp < s.size() && sp < 4 && s[sp] == ' ') {
    ++sp;
  }
  // The C++ runtime's "  what():  " before an uncaught exception's message: the message
  // is the cause, read as if it stood alone.
  constexpr std::string_view k_what = "what():";
  if (s.substr(sp, k_what.size()) == k_what) {
    size_t i = sp + k_what.size();
    while (i < s.size() && s[i] == ' ') {
      ++i;
    }
    return i;
  }
  size_t n = digits_at(s, sp);
  if (n > 0 && n <= 5 && sp + n + 1 < s.size() && s[sp + n] == ':' && s[sp + n + 1] == ' ') {
    *rank = to_int(s.substr(sp, n));
    return sp + n + 2;
  }
  return 0;
}

}  // namespace

Stripped strip_prefixes(std::string_view line) {
  Stripped out{line, -1};
  // Most lines start with none of '[', a digit, a space, a glog severity letter or the
  // 'w' of "what():".
  if (line.empty() || !(line[0] == '[' || line[0] == ' ' || is_digit(line[0]) ||
                        is_severity(line[0]) || line[0] == 'w')) {
    return out;
  }
  for (int round = 0; round < 6; ++round) {
    size_t n = strip_one(out.text, &out.rank);
    if (n == 0) {
      break;
    }
    out.text.remove_prefix(n);
    if (!out.text.empty() && out.text[0] == ' ') {
      out.text.remove_prefix(1);
    }
  }
  return out;
}

}  // namespace classify
