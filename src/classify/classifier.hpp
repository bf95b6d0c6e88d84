// classify/classifier.hpp: the streaming classifier used by `run`, `classify` and `eval`.
//
// CONTRACT (implemented in classify/*.cpp):
// - RuleSet holds the ordered rules (data, TOML). load_default() parses the rules
//   embedded in the binary; load_file() parses a user/site file; merge() lets a
//   later set add rules and override rules with the same id.
// - Scanner is fed the log's bytes in arbitrary chunks (any split, including
//   inside a line or a UTF-8 sequence), in bounded memory whatever the line
//   length. Lines of the gpualert header/footer of output.log (lines that start
//   with report::k_marker, "#gpualert# ") are not job output and are not evidence
//   of a failure; the footer may carry wrapper facts.
// - finish() then verdict(exit, host) decides the label in rule order.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/verdict.hpp"
#include "util/result.hpp"

namespace classify {

// The classifier speaks the shared vocabulary (model/verdict.hpp).
using model::EvidenceLine;
using model::ExitInfo;
using model::HostEvidence;
using model::Verdict;

struct Rule;  // defined in classify/rules.hpp
class CompiledRules;

class RuleSet {
 public:
  RuleSet();
  ~RuleSet();
  RuleSet(RuleSet&&) noexcept;
  RuleSet& operator=(RuleSet&&) noexcept;
  // with_documentation = false leaves out examples and notes (faster; what `run` uses).
  static util::Result<RuleSet> load_default(bool with_documentation = true);
  // Errors carry "FILE:LINE: message".
  static util::Result<RuleSet> load_file(const std::string& path);
  static util::Result<RuleSet> load_string(std::string_view toml, const std::string& name);
  // Adds other's rules; a rule whose id exists replaces it in place.
  util::Status merge(const RuleSet& other);

  const std::vector<Rule>& rules() const;
  // Extraction regexes applied to the deciding evidence of every rule.
  const std::vector<std::string>& global_extract() const;
  // "FILE:LINE: ..." for each condition that names a rule id absent from the set
  // (checked after merging, since a site file may refer to the default markers).
  std::vector<std::string> check_references() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> m_impl;
  friend class Scanner;
  friend util::Result<std::shared_ptr<const CompiledRules>> compiled_rules(const RuleSet& set);
  friend util::Result<std::shared_ptr<const CompiledRules>> compiled_rules(RuleSet&& set);
};

// The default rules with each file of `extra` merged on top, in order, references
// checked: what `run --rules`, `classify --rules` and `eval --rules` use. Without
// `with_defaults` the files alone make the table (`eval --no-default-rules`: an old
// revision's table, measured as it stood).
util::Result<RuleSet> load_rules(const std::vector<std::string>& extra, bool with_defaults = true);

class Scanner {
 public:
  explicit Scanner(const RuleSet& rules);
  // Takes the rules over instead of copying them (for a set used only here).
  explicit Scanner(RuleSet&& rules);
  ~Scanner();
  void feed(std::string_view bytes);
  // The caller did not feed the next `bytes` bytes of the log (a backlog too large to
  // read before the job's end), which hold exactly `newlines` '\n' bytes and end
  // right after one, so the next feed() starts a line; or, when the log ends in a
  // line longer than the backlog's bound, inside that line, and the next feed() is
  // the rest of it. The line in progress ends here, as if the skipped bytes had
  // ended it; later evidence keeps the line number it has in the whole log. Line
  // numbers count '\n' only: '\r' (a progress bar's redraw) ends a segment for
  // matching but not a line, in feed() as in `newlines`. Evidence in the skipped
  // bytes is lost; the verdict stands on what was read.
  void skip(uint64_t bytes, uint64_t newlines);
  // Bytes given to skip() so far.
  uint64_t skipped_bytes() const;
  void finish();
  Verdict verdict(const ExitInfo& exit, const HostEvidence& host) const;
  uint64_t lines_seen() const;
  // Called for each line that matched a pattern, with the rules it matched (exclusions,
  // conditions and order not applied): the log's lines as they are scanned, then the
  // host's in verdict(). `gpualert eval` builds its keyword baseline on it, so the
  // baseline costs `run` and `classify` nothing.
  using LineObserver = std::function<void(const std::vector<const Rule*>& matched)>;
  void observe_lines(LineObserver observer);
  // Ids of the rules and markers that have evidence in the log so far (conditions not
  // applied): lets tests and `rules` tooling ask which rules a line feeds.
  std::vector<std::string> evidence_rules() const;
  // The wrapper's own header/footer lines ("#gpualert# ..."), first few only.
  const std::vector<std::string>& wrapper_lines() const;

 private:
  struct Impl;
  void init(util::Result<std::shared_ptr<const CompiledRules>> compiled);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace classify
