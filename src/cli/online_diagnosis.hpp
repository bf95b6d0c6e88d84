// cli/online_diagnosis.hpp: the classifier as `run` drives it, beside the capture.
//
// prepare() runs on `run`'s thread right after the spawn: loading the embedded
// default rules and building the scanner happen while the job starts, not before
// it (a thread busy allocating before the spawn makes posix_spawn's vfork child
// exec several times slower). A user's rules file is loaded and checked before
// anything runs (a broken file is a usage error), then handed in already loaded.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "classify/classifier.hpp"

namespace cli {

class OnlineDiagnosis {
 public:
  explicit OnlineDiagnosis(std::optional<classify::RuleSet> preloaded);
  ~OnlineDiagnosis();
  void prepare();
  void feed(std::string_view bytes);
  void skip(uint64_t bytes, uint64_t newlines);
  // After the feed finished: the verdict on everything fed.
  model::Verdict verdict(const model::ExitInfo& exit, const model::HostEvidence& host);
  // Why there is no real verdict (the rules could not be loaded), or "".
  const std::string& error() const { return m_error; }

 private:
  std::optional<classify::RuleSet> m_rules;
  std::unique_ptr<classify::Scanner> m_scanner;
  std::string m_error;
};

}  // namespace cli
