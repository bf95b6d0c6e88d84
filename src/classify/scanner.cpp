// classify/scanner.cpp: the streaming pass over a log.
//
// Each line (segment) is normalised (ANSI codes and launcher prefixes removed) and
// appended to a block; when the block holds about 1 MiB, one Hyperscan scan finds
// every pattern in it. Only the rare lines that matched get bookkeeping, an RE2
// check of the match on that line alone, and field extraction. Scanning blocks
// instead of lines matters: a training log is mostly short progress lines, and a
// call per line would cost more than the matching itself. Everything about the
// verdict is decided at the end (decide.cpp).
#include <hs.h>

#include <algorithm>

#include "classify/classifier.hpp"
#include "classify/rule_hits.hpp"
#include "classify/rule_set_impl.hpp"
#include "classify/taxonomy.hpp"
#include "classify/text.hpp"
#include "report/run_dir.hpp"
#include "util/line_splitter.hpp"
#include "util/text.hpp"

namespace classify {

namespace {

using report::k_marker;  // the wrapper's own lines in output.log
constexpr size_t k_max_wrapper_lines = 64;
constexpr size_t k_block_bytes = 1 << 20;

struct Match {
  unsigned long long to;
  unsigned id;
  bool operator<(const Match& o) const { return to != o.to ? to < o.to : id < o.id; }
};

int on_match(unsigned id, unsigned long long, unsigned long long to, unsigned, void* ctx) {
  static_cast<std::vector<Match>*>(ctx)->push_back(Match{to, id});
  return 0;
}

// Lines waiting to be scanned: their normalised text joined by '\n' (what the
// patterns see), and the prefixes that were cut off (kept for the evidence text).
struct Block {
  struct Line {
    size_t offset;  // of the normalised text in `text`
    size_t length;
    size_t prefix_offset;
    size_t prefix_length;
    int rank;
    uint64_t number;
  };
  std::string text;
  std::string prefixes;
  std::vector<Line> lines;
  const char* source = nullptr;  // the evidence's source name, when not the origin's

  void clear() {
    text.clear();
    prefixes.clear();
    lines.clear();
  }
};

// "warn" in any case: UserWarning, WARNING, NCCL WARN, [W:onnxruntime...].
bool mentions_warning(std::string_view s) {
  for (size_t i = 0; i + 4 <= s.size(); ++i) {
    if ((s[i] | 0x20) == 'w' && (s[i + 1] | 0x20) == 'a' && (s[i + 2] | 0x20) == 'r' &&
        (s[i + 3] | 0x20) == 'n') {
      return true;
    }
  }
  return false;
}

}  // namespace

struct Scanner::Impl {
  std::shared_ptr<const CompiledRules> rules;
  hs_scratch_t* scratch = nullptr;
  util::LineSplitter splitter;
  Block block;
  std::vector<RuleHits> hits;
  Scanner::LineObserver observer;  // eval's baselines only; empty for run and classify
  std::vector<std::string> wrapper_lines;
  bool finished = false;
  bool warmed_up = false;
  uint64_t skipped = 0;
  uint64_t last_line = k_no_position;  // the last line of job output with text, if any

  // Scratch, reused.
  std::vector<Match> matches;
  std::vector<unsigned> line_ids;
  std::vector<uint8_t> matched, excluded;
  std::vector<uint32_t> touched;
  std::vector<const Rule*> observed;
  std::string ansi;

  ~Impl() { hs_free_scratch(scratch); }

  void on_segment(std::string_view seg, uint64_t line) {
    if (seg.substr(0, k_marker.size()) == k_marker) {
      if (wrapper_lines.size() < k_max_wrapper_lines) {
        wrapper_lines.push_back(printable(seg));
      }
      return;
    }
    add(block, seg, line);
    if (!warmed_up) {
      warm_up();
    }
    if (block.text.size() >= k_block_bytes) {
      flush(block, Origin::log, hits);
    }
  }

  void add(Block& b, std::string_view raw, uint64_t line) {
    std::string_view text = util::strip_ansi(raw, ansi);
    Stripped stripped = strip_prefixes(text);
    if (stripped.text.empty()) {
      return;
    }
    const size_t prefix_length = static_cast<size_t>(stripped.text.data() - text.data());
    if (&b == &block) {
      last_line = line;
    }
    b.lines.push_back(Block::Line{b.text.size(), stripped.text.size(), b.prefixes.size(),
                                  prefix_length, stripped.rank, line});
    b.prefixes.append(text.data(), prefix_length);
    b.text.append(stripped.text);
    b.text.push_back('\n');
  }

  // The databases and the scratch are built when the job's first line arrives,
  // not when its first block is scanned (at the end, for most short jobs): `run`
  // feeds the scanner on the diagnosis thread while the job is still running.
  void warm_up() {
    warmed_up = true;
    if (!rules) {
      return;
    }
    if (const hs_database_t* db = rules->database()) {
      hs_alloc_scratch(db, &scratch);
    }
    if (const hs_database_t* db = rules->marker_database(unseen_markers(hits))) {
      hs_alloc_scratch(db, &scratch);
    }
  }

  uint32_t unseen_markers(const std::vector<RuleHits>& into) const {
    uint32_t mask = 0;
    const auto& once = rules->once_markers();
    for (size_t i = 0; i < once.size(); ++i) {
      if (into[once[i]].count == 0) {
        mask |= 1u << i;
      }
    }
    return mask;
  }

  // Scans the block and records its evidence into `into`.
  void flush(Block& b, Origin origin, std::vector<RuleHits>& into) {
    if (b.lines.empty()) {
      return;
    }
    if (rules) {
      matches.clear();
      // Usually built by warm_up() already; kernel lines alone may come here first.
      const hs_database_t* main_db = rules->database();
      if (main_db && hs_alloc_scratch(main_db, &scratch) == HS_SUCCESS) {
        hs_scan(main_db, b.text.data(), static_cast<unsigned>(b.text.size()), 0, scratch, on_match,
                &matches);
      }
      if (const hs_database_t* db = rules->marker_database(unseen_markers(into))) {
        // hs_alloc_scratch only grows the scratch when this database needs more.
        if (hs_alloc_scratch(db, &scratch) == HS_SUCCESS) {
          hs_scan(db, b.text.data(), static_cast<unsigned>(b.text.size()), 0, scratch, on_match,
                  &matches);
        }
      }
      std::sort(matches.begin(), matches.end());
      size_t li = 0;
      for (size_t mi = 0; mi < matches.size();) {
        // The line whose text (or final '\n') holds the end of the match.
        while (li + 1 < b.lines.size() && b.lines[li + 1].offset < matches[mi].to) {
          ++li;
        }
        line_ids.clear();
        for (; mi < matches.size() &&
               (li + 1 == b.lines.size() || matches[mi].to <= b.lines[li + 1].offset);
             ++mi) {
          if (line_ids.empty() || line_ids.back() != matches[mi].id) {
            line_ids.push_back(matches[mi].id);
          }
        }
        std::sort(line_ids.begin(), line_ids.end());
        line_ids.erase(std::unique(line_ids.begin(), line_ids.end()), line_ids.end());
        process_line(b, b.lines[li], origin, into);
      }
    }
    b.clear();
  }

  void process_line(const Block& b, const Block::Line& line, Origin origin,
                    std::vector<RuleHits>& into) {
    std::string_view text(b.text.data() + line.offset, line.length);
    touched.clear();
    for (unsigned id : line_ids) {
      const PatternRef& ref = rules->pattern(id);
      if (ref.verify) {
        const RE2* verify = ref.verify->get();
        if (!verify || !RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *verify)) {
          continue;  // matched across a line break only
        }
      }
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
    if (observer) {
      observed.clear();
      for (uint32_t r : touched) {
        if (matched[r]) {
          observed.push_back(&rules->rules()[r]);
        }
      }
      observer(observed);
    }
    for (uint32_t r : touched) {
      const Rule& rule = rules->rules()[r];
      bool source_ok =
          rule.source == Source::any || (rule.source == Source::log) == (origin == Origin::log);
      if (matched[r] && !excluded[r] && source_ok && !(rule.yields && specific)) {
        record(r, b, line, text, origin, into[r]);
      }
    }
    for (uint32_t r : touched) {
      matched[r] = excluded[r] = 0;
    }
  }

  void record(uint32_t r, const Block& b, const Block::Line& line, std::string_view text,
              Origin origin, RuleHits& h) {
    uint64_t pos = position(origin, line.number);
    ++h.count;
    if (h.first == k_no_position) {
      h.first = pos;
    }
    h.last = pos;
    std::string_view prefix(b.prefixes.data() + line.prefix_offset, line.prefix_length);
    // Read by decide() for these rules only: not a second pass over every line that a
    // marker such as training-progress matches.
    h.last_warns =
        can_end_on_cause(rules->rules()[r]) && (mentions_warning(prefix) || mentions_warning(text));
    if (h.evidence.size() >= k_max_evidence) {
      return;
    }
    std::string full(prefix);
    full.append(text);
    h.evidence.push_back(EvidenceLine{line.number, printable(full),
                                      b.source                   ? b.source
                                      : origin == Origin::kernel ? "kernel"
                                                                 : "log"});
    if (line.rank >= 0 && !h.fields.count("rank")) {
      h.fields["rank"] = std::to_string(line.rank);
    }
    for (const auto& lazy : rules->extractors(r)) {
      if (const RE2* re = lazy->get()) {
        extract(*re, text, h.fields);
      }
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

  // Scans the host's lines into `into`: the kernel's (numbered 1.. in their own
  // source), then what the scheduler said about the job's end (numbered after them,
  // source "scheduler"), then NVML's Xid events (source "gpu"). All are host facts,
  // ordered before the log.
  void scan_kernel(const HostEvidence& host, std::vector<RuleHits>& into) {
    uint64_t n = 0;
    auto scan = [&](const std::vector<std::string>& lines, const char* source) {
      Block b;
      b.source = source;
      for (const auto& line : lines) {
        ++n;
        util::LineSplitter splitter;
        auto on_seg = [&](std::string_view seg, uint64_t) { add(b, seg, n); };
        splitter.feed(line, on_seg);
        splitter.finish(on_seg);
        if (b.text.size() >= k_block_bytes) {
          flush(b, Origin::kernel, into);
        }
      }
      flush(b, Origin::kernel, into);
    };
    scan(host.kernel_lines, nullptr);
    scan(host.scheduler_lines, "scheduler");
    scan(host.gpu_lines, "gpu");
  }
};

Scanner::Scanner(const RuleSet& rules) : m_impl(std::make_unique<Impl>()) {
  init(compiled_rules(rules));
}

Scanner::Scanner(RuleSet&& rules) : m_impl(std::make_unique<Impl>()) {
  init(compiled_rules(std::move(rules)));
}

void Scanner::init(util::Result<std::shared_ptr<const CompiledRules>> compiled) {
  if (!compiled) {
    return;  // load_*() checked every pattern; nothing is matched if this still fails
  }
  Impl& s = *m_impl;
  s.rules = *compiled;
  const size_t n = s.rules->rules().size();
  s.hits.resize(n);
  s.matched.assign(n, 0);
  s.excluded.assign(n, 0);
  s.block.text.reserve(k_block_bytes + util::k_line_cap + 1);
}

Scanner::~Scanner() = default;

void Scanner::feed(std::string_view bytes) {
  Impl& s = *m_impl;
  s.splitter.feed(bytes, [&s](std::string_view seg, uint64_t line) { s.on_segment(seg, line); });
}

void Scanner::skip(uint64_t bytes, uint64_t newlines) {
  Impl& s = *m_impl;
  if (bytes == 0) {
    return;
  }
  s.skipped += bytes;
  s.splitter.skip(newlines, [&s](std::string_view seg, uint64_t line) { s.on_segment(seg, line); });
}

uint64_t Scanner::skipped_bytes() const { return m_impl->skipped; }

void Scanner::finish() {
  Impl& s = *m_impl;
  if (s.finished) {
    return;
  }
  s.finished = true;
  s.splitter.finish([&s](std::string_view seg, uint64_t line) { s.on_segment(seg, line); });
  s.flush(s.block, Origin::log, s.hits);
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
    return Verdict{"unknown", "rules-unusable",
                   "-",       "the rule table could not be compiled; run `gpualert rules check`",
                   {},        {}};
  }
  // Kernel lines come first in time order (see rule_hits.hpp), so their evidence
  // leads the evidence of the log.
  std::vector<RuleHits> hits(s.hits.size());
  s.scan_kernel(host, hits);
  for (size_t i = 0; i < hits.size(); ++i) {
    RuleHits& k = hits[i];
    const RuleHits& l = s.hits[i];
    if (l.count == 0) {
      continue;
    }
    if (k.count == 0) {
      k = l;
      continue;
    }
    k.count += l.count;
    k.last = l.last;
    k.last_warns = l.last_warns;
    for (const auto& e : l.evidence) {
      if (k.evidence.size() < k_max_evidence) {
        k.evidence.push_back(e);
      }
    }
    k.fields.insert(l.fields.begin(), l.fields.end());
  }
  Verdict v =
      decide(*s.rules, hits, exit, host,
             s.last_line == k_no_position ? k_no_position : position(Origin::log, s.last_line));
  // Patterns that could not be compiled read nothing: the verdict says so, not silently
  // "unknown" (e.g. gpualert-compile missing with no compiled rules in the cache).
  if (!s.rules->database_error().empty()) {
    v.caveats.push_back("the log was not read by the rules' patterns: " +
                        s.rules->database_error());
  }
  return v;
}

void Scanner::observe_lines(LineObserver observer) { m_impl->observer = std::move(observer); }

}  // namespace classify
