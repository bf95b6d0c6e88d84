#include "classify/hs_compile_wire.hpp"

#include <charconv>
#include <cstdint>

namespace classify::wire {

namespace {

// Reads the items of one message: a header line of numbers, then a body of given length.
class Reader {
 public:
  explicit Reader(std::string_view text) : m_text(text) {}

  bool done() const { return m_text.empty(); }

  // The header line's words, or nullopt when there is no whole line.
  std::optional<std::vector<std::string_view>> header() {
    auto nl = m_text.find('\n');
    if (nl == std::string_view::npos) {
      return std::nullopt;
    }
    std::string_view line = m_text.substr(0, nl);
    m_text.remove_prefix(nl + 1);
    std::vector<std::string_view> words;
    while (!line.empty()) {
      auto sp = line.find(' ');
      words.push_back(line.substr(0, sp));
      line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
    }
    return words;
  }

  std::optional<std::string_view> body(int64_t length) {
    if (length < 0 || static_cast<uint64_t>(length) > m_text.size()) {
      return std::nullopt;
    }
    std::string_view b = m_text.substr(0, static_cast<size_t>(length));
    m_text.remove_prefix(static_cast<size_t>(length));
    return b;
  }

  bool skip_newline() {
    if (m_text.empty() || m_text.front() != '\n') {
      return false;
    }
    m_text.remove_prefix(1);
    return true;
  }

 private:
  std::string_view m_text;
};

template <typename T>
std::optional<T> number(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::string encode_request(const std::vector<HsExpression>& expressions) {
  std::string out;
  for (const auto& e : expressions) {
    out += std::to_string(e.flags) + " " + std::to_string(e.id) + " " +
           std::to_string(e.pattern.size()) + "\n";
    out += e.pattern;
    out += '\n';
  }
  return out;
}

std::optional<std::vector<HsExpression>> decode_request(std::string_view text) {
  Reader r(text);
  std::vector<HsExpression> out;
  while (!r.done()) {
    auto h = r.header();
    if (!h || h->size() != 3) {
      return std::nullopt;
    }
    auto flags = number<unsigned>((*h)[0]);
    auto id = number<unsigned>((*h)[1]);
    auto length = number<int64_t>((*h)[2]);
    auto body = length ? r.body(*length) : std::nullopt;
    if (!flags || !id || !body || !r.skip_newline()) {
      return std::nullopt;
    }
    out.push_back(HsExpression{std::string(*body), *flags, *id});
  }
  return out;
}

std::string encode_compiled(const HsCompiled& compiled) {
  if (compiled.error.empty()) {
    return "ok " + std::to_string(compiled.database.size()) + "\n" + compiled.database;
  }
  return "error " + std::to_string(compiled.expression) + " " +
         std::to_string(compiled.error.size()) + "\n" + compiled.error;
}

std::optional<HsCompiled> decode_compiled(std::string_view text) {
  Reader r(text);
  auto h = r.header();
  if (!h || h->empty()) {
    return std::nullopt;
  }
  HsCompiled out;
  if ((*h)[0] == "ok" && h->size() == 2) {
    auto length = number<int64_t>((*h)[1]);
    auto body = length ? r.body(*length) : std::nullopt;
    if (!body || !r.done() || body->empty()) {
      return std::nullopt;
    }
    out.database = std::string(*body);
    return out;
  }
  if ((*h)[0] == "error" && h->size() == 3) {
    auto expression = number<int>((*h)[1]);
    auto length = number<int64_t>((*h)[2]);
    auto body = length ? r.body(*length) : std::nullopt;
    if (!expression || !body || !r.done() || body->empty()) {
      return std::nullopt;
    }
    out.expression = *expression;
    out.error = std::string(*body);
    return out;
  }
  return std::nullopt;
}

std::string encode_checks(const std::vector<std::string>& messages) {
  std::string out;
  for (const auto& m : messages) {
    out += std::to_string(m.size()) + "\n" + m;
  }
  return out;
}

std::optional<std::vector<std::string>> decode_checks(std::string_view text) {
  Reader r(text);
  std::vector<std::string> out;
  while (!r.done()) {
    auto h = r.header();
    auto length = h && h->size() == 1 ? number<int64_t>((*h)[0]) : std::nullopt;
    auto body = length ? r.body(*length) : std::nullopt;
    if (!body) {
      return std::nullopt;
    }
    out.emplace_back(*body);
  }
  return out;
}

}  // namespace classify::wire
