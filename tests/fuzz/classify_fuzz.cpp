// Fuzzes the line splitter, the text normalisation and the whole rule engine with
// untrusted log bytes. Besides memory errors (ASan), it checks the streaming
// promise: the verdict and the segments do not depend on how the bytes are chunked.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "classify/classifier.hpp"
#include "classify/text.hpp"
#include "util/line_splitter.hpp"
#include "util/text.hpp"

namespace {

const classify::RuleSet& rules() {
  static classify::RuleSet set = [] {
    auto r = classify::RuleSet::load_default();
    if (!r) {
      std::abort();
    }
    return std::move(*r);
  }();
  return set;
}

model::Verdict run(std::string_view log, size_t chunk, const model::ExitInfo& exit,
                   const model::HostEvidence& host) {
  classify::Scanner scanner(rules());
  for (size_t i = 0; i < log.size(); i += chunk) {
    scanner.feed(log.substr(i, chunk));
  }
  scanner.finish();
  return scanner.verdict(exit, host);
}

std::vector<std::pair<std::string, uint64_t>> segments(std::string_view data, size_t chunk) {
  std::vector<std::pair<std::string, uint64_t>> out;
  util::LineSplitter splitter(64);  // a small cap exercises the long-line path
  auto cb = [&](std::string_view seg, uint64_t line) { out.emplace_back(seg, line); };
  for (size_t i = 0; i < data.size(); i += chunk) {
    splitter.feed(data.substr(i, chunk), cb);
  }
  splitter.finish(cb);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) {
    return 0;
  }
  const size_t chunk = 1 + data[0] % 61;
  model::ExitInfo exit;
  switch (data[1] % 4) {
    case 0:
      exit.exit_code = 0;
      break;
    case 1:
      exit.exit_code = data[1];
      break;
    case 2:
      exit.signal = 1 + data[1] % 31;
      break;
    default:
      exit.wrapper_timeout = true;
      exit.signal = 15;
      break;
  }
  std::string_view log(reinterpret_cast<const char*>(data) + 2, size - 2);
  model::HostEvidence host;
  if (data[0] & 0x80) {
    // Use the first line as a kernel message too.
    host.kernel_lines.emplace_back(log.substr(0, log.find('\n')));
  }

  if (segments(log, chunk) != segments(log, log.size() + 1)) {
    std::abort();
  }
  std::string scratch;
  std::string_view stripped = util::strip_ansi(log, scratch);
  (void)classify::strip_prefixes(stripped);
  (void)classify::printable(log, 256);

  model::Verdict a = run(log, chunk, exit, host);
  model::Verdict b = run(log, log.size() + 1, exit, host);
  if (a.label != b.label || a.rule != b.rule || a.fields != b.fields ||
      a.evidence.size() != b.evidence.size()) {
    std::abort();
  }
  for (size_t i = 0; i < a.evidence.size(); ++i) {
    if (a.evidence[i].line != b.evidence[i].line || a.evidence[i].text != b.evidence[i].text) {
      std::abort();
    }
  }
  return 0;
}
