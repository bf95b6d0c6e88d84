// classify/compiled_rules.hpp: a rule table turned into matchers.
//
// One Hyperscan database holds every pattern of every rule and marker (positive
// and exclusion patterns alike), in multi-line mode: the scanner joins normalised
// lines into blocks of about 1 MiB and scans each block once, whatever the number
// of rules; a match's pattern id maps back to its rule and its end offset to its
// line. RE2 is used only on the few lines that matched, to confirm the match on
// that line alone and to extract fields. Both engines run in time linear in
// the input, which matters because logs are untrusted text.
//
// A CompiledRules is shared by every Scanner of a RuleSet, possibly in different
// threads; each Scanner allocates its own Hyperscan scratch. Its regexes are built
// on first use (LazyRegex) and its marker databases per subset (marker_database),
// both thread-safely; nothing else changes after build().
#pragma once

#include <re2/re2.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "classify/hs_compile.hpp"
#include "classify/rules.hpp"
#include "util/result.hpp"

struct hs_database;
struct hs_scratch;

namespace classify {

// An RE2 compiled on first use. `run` builds a CompiledRules before the job starts,
// and compiling the ~300 verifiers and extractors up front added ~5 ms to every
// job's start-up, although a log matches few of them. Safe to share between threads.
// The pattern is not copied: it lives in the CompiledRules that owns the LazyRegex.
class LazyRegex {
 public:
  LazyRegex(std::string_view pattern, bool caseless) : m_pattern(pattern), m_caseless(caseless) {}
  // The compiled regex; null when it does not compile (load_*() reject such tables,
  // except for the embedded default, which the unit tests check).
  const RE2* get() const;
  std::string_view pattern() const { return m_pattern; }

 private:
  std::string_view m_pattern;
  bool m_caseless;
  mutable std::once_flag m_once;
  mutable std::unique_ptr<RE2> m_re;
};

struct PatternRef {
  uint32_t rule = 0;     // index into rules
  bool exclude = false;  // an exclusion pattern of that rule
  // Markers only need to know that (and roughly where) they matched, so Hyperscan
  // reports them once per scanned block; a progress marker would otherwise report
  // on most lines of a training log.
  bool once = false;
  uint32_t index = 0;  // in the rule's patterns (or exclude) list
  // Re-checks a match on its own line: the database scans blocks of lines, and a
  // pattern such as \s* could otherwise match across a line break. Null for markers.
  const LazyRegex* verify = nullptr;
};

class CompiledRules {
 public:
  ~CompiledRules();
  // Resolves the rules; the Hyperscan database is built (or loaded from the cache)
  // on first use, and RE2 regexes too: a job that prints nothing never pays for them.
  // The rules are kept (moved in, or copied by the caller).
  static util::Result<std::shared_ptr<const CompiledRules>> build(
      std::vector<Rule> rules, const std::vector<std::string>& global_extract);

  const std::vector<Rule>& rules() const { return m_rules; }
  // Every pattern except those of the "once" markers; built on first call (thread
  // safe); null when there are no such patterns or the build failed.
  const hs_database* database() const;
  // Why database() is null although there are patterns ("" when it is not).
  const std::string& database_error() const { return m_db_error; }
  // Builds the database now; the error names the rule's origin and the pattern.
  util::Status compile_database() const;
  // Markers that only need their first match (ids into rules(), at most 32). A
  // progress marker matches most lines of a training log; once it was seen, the
  // scanner stops paying for it by scanning with a database of the markers still
  // unseen (bit i of `unseen` stands for once_markers()[i]). Built on first use and
  // cached; null when `unseen` is 0 or the build failed.
  const std::vector<uint32_t>& once_markers() const { return m_once; }
  const hs_database* marker_database(uint32_t unseen) const;
  const PatternRef& pattern(unsigned id) const { return m_patterns[id]; }
  size_t pattern_count() const { return m_patterns.size(); }
  // Index of a rule or marker by id; -1 when absent.
  int index_of(const std::string& id) const;
  const std::vector<const LazyRegex*>& extractors(uint32_t rule) const { return m_extract[rule]; }
  const std::vector<const LazyRegex*>& global_extractors() const { return m_global; }
  // Condition references resolved to rule indexes (unknown ids dropped from
  // `after`/`cleared_by`/`not_after`/`unless`; an unknown id in `needs` can never be met).
  struct Refs {
    std::vector<int> needs, unless, after, cleared_by, not_after;
  };
  const Refs& refs(uint32_t rule) const { return m_refs[rule]; }

 private:
  CompiledRules() = default;
  std::vector<Rule> m_rules;
  // The database's inputs (pointing into m_rules), kept for the build on first use.
  std::vector<const char*> m_expressions;
  std::vector<unsigned> m_flags, m_ids;
  mutable std::once_flag m_db_once;
  mutable hs_database* m_db = nullptr;
  mutable std::string m_db_error;
  std::vector<uint32_t> m_once;
  mutable std::mutex m_mutex;
  mutable std::map<uint32_t, hs_database*> m_marker_dbs;
  std::vector<PatternRef> m_patterns;
  std::unordered_map<std::string, int> m_index;
  // Every LazyRegex, made in place (a deque never moves its elements), pointing
  // into m_rules and m_global_patterns, which are not changed after build().
  std::deque<LazyRegex> m_regexes;
  std::vector<std::string> m_global_patterns;
  std::vector<std::vector<const LazyRegex*>> m_extract;
  std::vector<const LazyRegex*> m_global;
  std::vector<Refs> m_refs;
};

// Checks one pattern with RE2 (and that it is not empty); empty string when it is usable.
std::string check_pattern(const std::string& pattern, bool caseless);
// Hyperscan's check of a rules file's patterns, all at once (for `gpualert` the compiler
// is a helper process, hs_compile.hpp): a message per expression, "" when it compiles
// alone. A set found good is remembered in the cache, so that a job with a site rules
// file pays for the check once, not every time. check_expression gives the expression.
util::Result<std::vector<std::string>> check_expressions(
    const std::vector<HsExpression>& expressions);
HsExpression check_expression(const std::string& pattern, bool caseless);
// Checks an extraction regex (RE2, at least one named group).
std::string check_extractor(const std::string& pattern);
RE2::Options re2_options(bool caseless);

}  // namespace classify
