// classify/scanner.cpp: the streaming pass over a log.
//
// Per line: strip ANSI codes and launcher prefixes, one Hyperscan scan for all
// patterns, and, only for the rare lines that matched, bookkeeping and RE2 field
// extraction. Everything else about the verdict is decided at the end (decide.cpp).
#include <hs/hs.h>

#include "classify/classifier.hpp"
#include "classify/line_splitter.hpp"
#include "classify/rule_hits.hpp"
#include "classify/rule_set_impl.hpp"
#include "classify/taxonomy.hpp"
#include "classify/text.hpp"

namespace classify {

namespace {

constexpr std::string_view k_marker = "#gpualert# ";
constexpr size_t k_max_wrapper_lines = 64;

int on_match(unsigned id, unsigned long long, unsigned long long, unsigned, void* ctx) {
  static_cast<std::vector<unsigned>*>(ctx)->push_back(id);
  return 0;
}

}  // namespace

struct Scanner::Impl {
  std::shared_ptr<const CompiledRules> rules;
  hs_scratch_t* scratch = nullptr;
  LineSplitter splitter;
  std::vector<RuleHits> hits;
  std::vector<uint64_t> label_lines;  // keyword baseline, by index into labels()
  std::vector<int> rule_label;        // index into labels(), -1 for markers
  std::vector<std::string> wrapper_lines;
  bool finished = false;

  // Per-line scratch, reused.
  std::vector<unsigned> matched_ids;
  std::vector<uint8_t> matched, excluded, label_seen;
  std::vector<uint32_t> touched;
  std::string ansi;

  ~Impl() { hs_free_scratch(scratch); }

  void on_segment(std::string_view seg, uint64_t line) {
    if (seg.substr(0, k_marker.size()) == k_marker) {
      if (wrapper_lines.size() < k_max_wrapper_lines) {
        wrapper_lines.push_back(printable(seg));
      }
      return;
    }
    scan_line(seg, line, Origin::log, hits);
  }

  // Scans one line and records its evidence into `into`.
  void scan_line(std::string_view raw, uint64_t line, Origin origin,
                 std::vector<RuleHits>& into) {
    if (!rules || !rules->database()) {
      return;
    }
    std::string_view text = strip_ansi(raw, ansi);
    Stripped stripped = strip_prefixes(text);
    if (stripped.text.empty()) {
      return;
    }
    matched_ids.clear();
    hs_scan(rules->database(), stripped.text.data(), static_cast<unsigned>(stripped.text.size()),
            0, scratch, on_match, &matched_ids);
    if (matched_ids.empty()) {
      return;
    }
    touched.clear();
    for (unsigned id : matched_ids) {
      const PatternRef& ref = rules->pattern(id);
      if (!matched[ref.rule] && !excluded[ref.rule]) {
        touched.push_back(ref.rule);
      }
      (ref.exclude ? excluded : matched)[ref.rule] = 1;
    }
    // A generic rule ("some Python exception") gives way on a line that a specific
    // rule explains, whatever their tiers.
    bool specific = false;
    for (uint32_t r : touched) {
      const Rule& rule = rules->rules()[r];
      specific |= matched[r] && !excluded[r] && !rule.is_marker && !rule.yields;
    }
    for (uint32_t r : touched) {
      const Rule& rule = rules->rules()[r];
      if (matched[r] && rule_label[r] >= 0 && !label_seen[static_cast<size_t>(rule_label[r])]) {
        label_seen[static_cast<size_t>(rule_label[r])] = 1;
        ++label_lines[static_cast<size_t>(rule_label[r])];
      }
      bool source_ok = rule.source == Source::any ||
                       (rule.source == Source::log) == (origin == Origin::log);
      if (matched[r] && !excluded[r] && source_ok && !(rule.yields && specific)) {
        record(r, text, stripped, line, origin, into[r]);
      }
    }
    for (uint32_t r : touched) {
      matched[r] = excluded[r] = 0;
      if (rule_label[r] >= 0) {
        label_seen[static_cast<size_t>(rule_label[r])] = 0;
      }
    }
  }

  void record(uint32_t r, std::string_view text, const Stripped& stripped, uint64_t line,
              Origin origin, RuleHits& h) {
    uint64_t pos = position(origin, line);
    ++h.count;
    if (h.first == k_no_position) {
      h.first = pos;
    }
    h.last = pos;
    if (h.evidence.size() >= k_max_evidence) {
      return;
    }
    h.evidence.push_back(
        EvidenceLine{line, printable(text), origin == Origin::kernel ? "kernel" : "log"});
    if (stripped.rank >= 0 && !h.fields.count("rank")) {
      h.fields["rank"] = std::to_string(stripped.rank);
    }
    for (const auto& re : rules->extractors(r)) {
      extract(*re, stripped.text, h.fields);
    }
  }

  static void extract(const RE2& re, std::string_view text,
                      std::map<std::string, std::string>& fields) {
    const int n = re.NumberOfCapturingGroups();
    std::vector<re2::StringPiece> groups(static_cast<size_t>(n) + 1);
    if (!re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED,
                  groups.data(), n + 1)) {
      return;
    }
    for (const auto& [name, index] : re.NamedCapturingGroups()) {
      const auto& g = groups[static_cast<size_t>(index)];
      if (g.data() != nullptr && !g.empty() && !fields.count(name)) {
        fields[name] = printable(std::string_view(g.data(), g.size()), 200);
      }
    }
  }
};

Scanner::Scanner(const RuleSet& rules) : m_impl(std::make_unique<Impl>()) {
  auto compiled = compiled_rules(rules);
  if (!compiled) {
    return;  // load_*() checked every pattern; nothing is matched if this still fails
  }
  Impl& s = *m_impl;
  s.rules = *compiled;
  const size_t n = s.rules->rules().size();
  s.hits.resize(n);
  s.matched.assign(n, 0);
  s.excluded.assign(n, 0);
  s.label_lines.assign(labels().size(), 0);
  s.label_seen.assign(labels().size(), 0);
  for (const Rule& rule : s.rules->rules()) {
    int index = -1;
    for (size_t i = 0; i < labels().size(); ++i) {
      if (labels()[i].label == rule.label) {
        index = static_cast<int>(i);
      }
    }
    s.rule_label.push_back(index);
  }
  if (s.rules->database() &&
      hs_alloc_scratch(s.rules->database(), &s.scratch) != HS_SUCCESS) {
    s.rules.reset();
  }
}

Scanner::~Scanner() = default;

void Scanner::feed(std::string_view bytes) {
  Impl& s = *m_impl;
  s.splitter.feed(bytes, [&s](std::string_view seg, uint64_t line) { s.on_segment(seg, line); });
}

void Scanner::finish() {
  Impl& s = *m_impl;
  if (s.finished) {
    return;
  }
  s.finished = true;
  s.splitter.finish([&s](std::string_view seg, uint64_t line) { s.on_segment(seg, line); });
}

uint64_t Scanner::lines_seen() const { return m_impl->splitter.lines(); }

const std::vector<std::string>& Scanner::wrapper_lines() const { return m_impl->wrapper_lines; }

std::vector<std::string> Scanner::evidence_rules() const {
  std::vector<std::string> out;
  if (!m_impl->rules) {
    return out;
  }
  for (size_t i = 0; i < m_impl->hits.size(); ++i) {
    if (m_impl->hits[i].count > 0) {
      out.push_back(m_impl->rules->rules()[i].id);
    }
  }
  return out;
}

Verdict Scanner::verdict(const ExitInfo& exit, const HostEvidence& host) const {
  Impl& s = *m_impl;
  if (!s.rules) {
    return Verdict{"unknown", "rules-unusable", "-",
                   "the rule table could not be compiled; run `gpualert rules check`", {}, {}};
  }
  std::vector<RuleHits> hits = s.hits;
  std::vector<uint64_t> saved_counts = s.label_lines;
  uint64_t n = 0;
  for (const auto& line : host.kernel_lines) {
    ++n;
    LineSplitter splitter;
    auto on_seg = [&](std::string_view seg, uint64_t) {
      s.scan_line(seg, n, Origin::kernel, hits);
    };
    splitter.feed(line, on_seg);
    splitter.finish(on_seg);
  }
  s.label_lines = std::move(saved_counts);
  return decide(*s.rules, hits, exit, host);
}

std::map<std::string, uint64_t> Scanner::keyword_counts(const HostEvidence& host) const {
  Impl& s = *m_impl;
  std::vector<uint64_t> saved = s.label_lines;
  std::vector<RuleHits> scratch_hits = s.hits;
  for (const auto& line : host.kernel_lines) {
    s.scan_line(line, 0, Origin::kernel, scratch_hits);
  }
  std::map<std::string, uint64_t> out;
  for (size_t i = 0; i < s.label_lines.size(); ++i) {
    if (s.label_lines[i] > 0) {
      out[std::string(labels()[i].label)] = s.label_lines[i];
    }
  }
  s.label_lines = std::move(saved);
  return out;
}

}  // namespace classify
