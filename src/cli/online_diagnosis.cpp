#include "cli/online_diagnosis.hpp"

namespace cli {

OnlineDiagnosis::OnlineDiagnosis(std::optional<classify::RuleSet> preloaded)
    : m_rules(std::move(preloaded)) {}

OnlineDiagnosis::~OnlineDiagnosis() = default;

void OnlineDiagnosis::prepare() {
  if (!m_rules) {
    auto r = classify::RuleSet::load_default(/*with_documentation=*/false);
    if (!r) {
      m_error = "the default rules could not be loaded: " + r.error();
      return;
    }
    m_rules = std::move(*r);
  }
  // The rules are moved into the scanner, not copied: nothing else reads them.
  m_scanner = std::make_unique<classify::Scanner>(std::move(*m_rules));
  m_rules.reset();
}

void OnlineDiagnosis::feed(std::string_view bytes) {
  if (m_scanner) {
    m_scanner->feed(bytes);
  }
}

void OnlineDiagnosis::skip(uint64_t bytes, uint64_t newlines) {
  if (m_scanner) {
    m_scanner->skip(bytes, newlines);
  }
}

model::Verdict OnlineDiagnosis::verdict(const model::ExitInfo& exit,
                                        const model::HostEvidence& host) {
  if (!m_scanner) {
    model::Verdict v;
    v.label = exit.exit_code && *exit.exit_code == 0 ? "success" : "unknown";
    v.rule = "no-rules";
    v.group = "-";
    v.action = exit.exit_code && *exit.exit_code == 0 ? "none" : "read the log";
    return v;
  }
  m_scanner->finish();
  return m_scanner->verdict(exit, host);
}

}  // namespace cli
