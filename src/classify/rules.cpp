// classify/rules.cpp: loading, checking and merging rule tables (TOML).
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "classify/compiled_rules.hpp"
#include "classify/default_rules.hpp"
#include "classify/hs_compile.hpp"
#include "classify/rule_set_impl.hpp"
#include "classify/taxonomy.hpp"

namespace classify {

std::string_view tier_name(Tier tier) {
  switch (tier) {
    case Tier::decisive:
      return "decisive";
    case Tier::cause:
      return "cause";
    case Tier::symptom:
      return "symptom";
    case Tier::weak:
      return "weak";
    case Tier::fallback:
      return "fallback";
  }
  return "?";
}

std::optional<Tier> parse_tier(std::string_view name) {
  for (Tier t : {Tier::decisive, Tier::cause, Tier::symptom, Tier::weak, Tier::fallback}) {
    if (tier_name(t) == name) {
      return t;
    }
  }
  return std::nullopt;
}

namespace {

// Collects "FILE:LINE: message" errors while one table is read.
class Loader {
 public:
  // Files from users pay for one compile per pattern and extractor (which is what
  // gives them an error naming the rule and line); so does the default table, once,
  // when gpualert-rulegen turns it into C++ at build time.
  Loader(std::string name, bool check_each_pattern)
      : m_name(std::move(name)), m_check_each(check_each_pattern) {}

  void error(const toml::source_region& where, const std::string& message) {
    error_at(where.begin.line, message);
  }
  void error_at(size_t line, const std::string& message) {
    m_errors.emplace_back(line, m_name + ":" + std::to_string(line) + ": " + message);
  }
  bool failed() const { return !m_errors.empty(); }
  // In the file's order: Hyperscan's checks come in one batch after the whole file.
  std::string errors() const {
    auto sorted = m_errors;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string s;
    for (const auto& [line, message] : sorted) {
      s += (s.empty() ? "" : "\n") + message;
    }
    return s;
  }

  // A rule's pattern, checked by both engines: RE2's verdict now, Hyperscan's with
  // the file's other patterns in check_patterns() (one helper run for `gpualert`).
  void check(const toml::source_region& where, const std::string& prefix,
             const std::string& pattern, bool caseless) {
    if (!m_check_each) {
      return;
    }
    if (pattern.empty()) {
      error(where, prefix + "empty pattern");
      return;
    }
    m_pending.push_back(
        Pending{where.begin.line, prefix, pattern, caseless, check_pattern(pattern, caseless)});
  }
  void check_patterns() {
    if (m_pending.empty()) {
      return;
    }
    std::vector<HsExpression> expressions;
    for (const auto& p : m_pending) {
      expressions.push_back(check_expression(p.pattern, p.caseless));
    }
    auto hs = check_expressions(expressions);
    if (!hs) {
      error_at(m_pending.front().line, "the patterns could not be checked: " + hs.error());
      m_pending.clear();
      return;
    }
    for (size_t i = 0; i < m_pending.size(); ++i) {
      const Pending& p = m_pending[i];
      if (i < hs->size() && !(*hs)[i].empty()) {
        error_at(p.line, p.prefix + "pattern '" + p.pattern + "': " + (*hs)[i]);
      } else if (!p.re2_error.empty()) {
        error_at(p.line, p.prefix + p.re2_error);
      }
    }
    m_pending.clear();
  }
  std::string origin(const toml::node& n) const {
    return m_name + ":" + std::to_string(n.source().begin.line);
  }

  bool read_strings(const toml::node& node, const std::string& what,
                    std::vector<std::string>& out) {
    const toml::array* arr = node.as_array();
    if (!arr) {
      if (auto s = node.value<std::string>()) {
        out.push_back(*s);
        return true;
      }
      error(node.source(), what + ": expected a string or an array of strings");
      return false;
    }
    for (const auto& item : *arr) {
      auto s = item.value<std::string>();
      if (!s) {
        error(item.source(), what + ": expected a string");
        return false;
      }
      out.push_back(*s);
    }
    return true;
  }

  bool read_bool(const toml::node& node, const std::string& what, bool& out) {
    auto b = node.value<bool>();
    if (!b) {
      error(node.source(), what + ": expected true or false");
      return false;
    }
    out = *b;
    return true;
  }

  void read_rule(const toml::table& t, bool marker, std::vector<Rule>& out) {
    Rule rule;
    rule.is_marker = marker;
    rule.origin = origin(t);
    rule.tier = Tier::cause;
    const char* kind = marker ? "marker" : "rule";
    for (auto&& [key_node, value] : t) {
      std::string key(key_node.str());
      const std::string what = std::string(kind) + " key '" + key + "'";
      if (key == "id" || key == "label" || key == "tier" || key == "source" || key == "action" ||
          key == "note" || key == "caveat") {
        auto s = value.value<std::string>();
        if (!s) {
          error(value.source(), what + ": expected a string");
          continue;
        }
        if (key == "id") {
          rule.id = *s;
        } else if (key == "label") {
          rule.label = *s;
        } else if (key == "tier") {
          auto tier = parse_tier(*s);
          if (!tier) {
            error(value.source(),
                  "unknown tier '" + *s + "' (decisive, cause, symptom, weak, fallback)");
          } else {
            rule.tier = *tier;
          }
        } else if (key == "source") {
          if (*s == "any") {
            rule.source = Source::any;
          } else if (*s == "log") {
            rule.source = Source::log;
          } else if (*s == "kernel") {
            rule.source = Source::kernel;
          } else {
            error(value.source(), "unknown source '" + *s + "' (any, log, kernel)");
          }
        } else if (key == "action") {
          rule.action = *s;
        } else if (key == "caveat") {
          rule.caveat = *s;
        } else {
          rule.note = *s;
        }
      } else if (key == "patterns") {
        read_strings(value, what, rule.patterns);
      } else if (key == "exclude") {
        read_strings(value, what, rule.exclude);
      } else if (key == "extract") {
        read_strings(value, what, rule.extract);
      } else if (key == "needs") {
        read_strings(value, what, rule.needs);
      } else if (key == "unless") {
        read_strings(value, what, rule.unless);
      } else if (key == "after") {
        read_strings(value, what, rule.after);
      } else if (key == "cleared_by") {
        read_strings(value, what, rule.cleared_by);
      } else if (key == "not_after") {
        read_strings(value, what, rule.not_after);
      } else if (key == "examples") {
        read_strings(value, what, rule.examples);
      } else if (key == "not_examples") {
        read_strings(value, what, rule.not_examples);
      } else if (key == "caseless") {
        read_bool(value, what, rule.caseless);
      } else if (key == "on_success") {
        read_bool(value, what, rule.on_success);
      } else if (key == "yields") {
        read_bool(value, what, rule.yields);
      } else if (key == "cgroup_oom") {
        read_bool(value, what, rule.cgroup_oom);
      } else if (key == "wrapper_timeout") {
        read_bool(value, what, rule.wrapper_timeout);
      } else if (key == "stalled") {
        read_bool(value, what, rule.stalled);
      } else if (key == "host_unread") {
        read_bool(value, what, rule.host_unread);
      } else if (key == "host_read") {
        read_bool(value, what, rule.host_read);
      } else if (key == "at_end") {
        read_bool(value, what, rule.at_end);
      } else if (key == "fails_zero_exit") {
        read_bool(value, what, rule.fails_zero_exit);
      } else if (key == "signals" || key == "exit_codes") {
        const toml::array* arr = value.as_array();
        if (!arr) {
          error(value.source(), what + ": expected an array");
          continue;
        }
        for (const auto& item : *arr) {
          if (auto n = item.value<int64_t>()) {
            (key == "signals" ? rule.signals : rule.exit_codes).push_back(static_cast<int>(*n));
          } else if (auto s = item.value<std::string>(); s && key == "signals") {
            int sig = signal_number(*s);
            if (sig == 0) {
              error(item.source(), "unknown signal '" + *s + "'");
            } else {
              rule.signals.push_back(sig);
            }
          } else {
            error(item.source(),
                  what + ": expected " + (key == "signals" ? "signal names" : "integers"));
          }
        }
      } else {
        error(key_node.source().begin.line ? key_node.source() : t.source(),
              "unknown " + what.substr(0, what.find(' ')) + " key '" + key + "'");
      }
    }
    check_rule(t, rule);
    out.push_back(std::move(rule));
  }

  void check_rule(const toml::table& t, const Rule& rule) {
    const auto& where = t.source();
    if (rule.id.empty()) {
      error(where, "rule without an id");
      return;
    }
    const std::string name = "rule '" + rule.id + "': ";
    if (!rule.caveat.empty() && !rule.is_marker) {
      error(where, name + "caveat is for markers (a rule already names its label)");
    }
    if (rule.fails_zero_exit && !rule.is_marker) {
      error(where, name + "fails_zero_exit is for markers (a rule already names its label)");
    }
    if (rule.is_marker) {
      if (!rule.label.empty()) {
        error(where, name + "a marker has no label");
      }
      if (rule.patterns.empty()) {
        error(where, name + "a marker needs patterns");
      }
    } else if (rule.label.empty()) {
      error(where, name + "missing label");
    } else if (!find_label(rule.label)) {
      error(where, name + "unknown label '" + rule.label + "' (see spec/taxonomy.md)");
    }
    bool has_condition = !rule.signals.empty() || !rule.exit_codes.empty() || rule.cgroup_oom ||
                         rule.wrapper_timeout || rule.stalled || rule.host_unread || rule.host_read;
    if (rule.host_read && rule.host_unread) {
      error(where, name + "host_read and host_unread exclude each other");
    }
    if (rule.patterns.empty() && !has_condition && !rule.is_marker) {
      error(where, name + "needs patterns or an exit/host condition");
    }
    for (const auto& p : rule.patterns) {
      check(where, name, p, rule.caseless);
    }
    for (const auto& p : rule.exclude) {
      check(where, name + "exclude ", p, rule.caseless);
    }
    for (const auto& p : rule.extract) {
      if (auto e = m_check_each ? check_extractor(p) : ""; !e.empty()) {
        error(where, name + e);
      }
    }
    if (!rule.examples.empty() && rule.patterns.empty()) {
      error(where, name + "examples given but no patterns");
    }
  }

  util::Result<RuleSet> load(std::string_view text, RuleSet set, RuleSet::Impl& impl) {
    toml::table root;
    try {
      root = toml::parse(text, m_name);
    } catch (const toml::parse_error& e) {
      error(e.source(), std::string(e.description()));
      return util::Error{errors()};
    }
    std::set<std::string> ids;
    for (auto&& [key_node, value] : root) {
      std::string key(key_node.str());
      if (key == "version") {
        if (value.value<int64_t>().value_or(0) != 1) {
          error(value.source(), "unsupported version (expected 1)");
        }
      } else if (key == "extract") {
        std::vector<std::string> extract;
        if (read_strings(value, "extract", extract)) {
          for (const auto& e : extract) {
            if (auto err = m_check_each ? check_extractor(e) : ""; !err.empty()) {
              error(value.source(), err);
            }
          }
          impl.global_extract.insert(impl.global_extract.end(), extract.begin(), extract.end());
        }
      } else if (key == "rule" || key == "marker") {
        const toml::array* arr = value.as_array();
        if (!arr || !arr->is_array_of_tables()) {
          error(value.source(), "'" + key + "' must be an array of tables ([[" + key + "]])");
          continue;
        }
        for (const auto& item : *arr) {
          size_t before = impl.rules.size();
          read_rule(*item.as_table(), key == "marker", impl.rules);
          if (impl.rules.size() > before && !impl.rules.back().id.empty() &&
              !ids.insert(impl.rules.back().id).second) {
            error(item.source(), "duplicate id '" + impl.rules.back().id + "'");
          }
        }
      } else {
        error(value.source(), "unknown top-level key '" + key + "'");
      }
    }
    check_patterns();
    if (failed()) {
      return util::Error{errors()};
    }
    return set;
  }

 private:
  struct Pending {
    size_t line;
    std::string prefix;
    std::string pattern;
    bool caseless;
    std::string re2_error;
  };
  std::string m_name;
  bool m_check_each = true;
  std::vector<std::pair<size_t, std::string>> m_errors;
  std::vector<Pending> m_pending;
};

}  // namespace

template <typename Take>
util::Result<std::shared_ptr<const CompiledRules>> RuleSet::Impl::compile_with(Take take) const {
  std::lock_guard<std::mutex> lock(mutex);
  if (!compiled) {
    auto built = CompiledRules::build(take(), global_extract);
    if (!built) {
      return built;
    }
    compiled = *built;
  }
  return compiled;
}

util::Result<std::shared_ptr<const CompiledRules>> RuleSet::Impl::compile() const {
  return compile_with([this] { return rules; });
}

util::Result<std::shared_ptr<const CompiledRules>> RuleSet::Impl::compile_consuming() {
  return compile_with([this] { return std::exchange(rules, {}); });
}

util::Result<std::shared_ptr<const CompiledRules>> compiled_rules(const RuleSet& set) {
  return set.m_impl->compile();
}

util::Result<std::shared_ptr<const CompiledRules>> compiled_rules(RuleSet&& set) {
  return set.m_impl->compile_consuming();
}

RuleSet::RuleSet() : m_impl(std::make_unique<Impl>()) {}
RuleSet::~RuleSet() = default;
RuleSet::RuleSet(RuleSet&&) noexcept = default;
RuleSet& RuleSet::operator=(RuleSet&&) noexcept = default;

const std::vector<Rule>& RuleSet::rules() const { return m_impl->rules; }
const std::vector<std::string>& RuleSet::global_extract() const { return m_impl->global_extract; }

util::Result<RuleSet> RuleSet::load_string(std::string_view text, const std::string& name) {
  RuleSet set;
  Impl& impl = *set.m_impl;
  Loader loader(name, true);
  return loader.load(text, std::move(set), impl);
}

util::Result<RuleSet> RuleSet::load_default(bool with_documentation) {
  RuleSet set;
  Impl& impl = *set.m_impl;
  if (!embedded_rule_table(impl.rules, impl.global_extract, with_documentation)) {
    return util::Error{"default_rules.toml: this program was built without the default table"};
  }
  return set;
}

util::Result<RuleSet> RuleSet::load_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {  // an ifstream would read it as empty
    return util::Error{path + ": is a directory, not a rules file"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return util::errno_error("open " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return util::errno_error("read " + path);
  }
  return load_string(text.str(), path);
}

util::Status RuleSet::merge(const RuleSet& other) {
  for (const Rule& rule : other.m_impl->rules) {
    bool replaced = false;
    for (Rule& mine : m_impl->rules) {
      if (mine.id == rule.id) {
        mine = rule;
        replaced = true;
        break;
      }
    }
    if (!replaced) {
      m_impl->rules.push_back(rule);
    }
  }
  m_impl->global_extract.insert(m_impl->global_extract.end(), other.m_impl->global_extract.begin(),
                                other.m_impl->global_extract.end());
  std::lock_guard<std::mutex> lock(m_impl->mutex);
  m_impl->compiled.reset();
  return util::ok_status();
}

util::Result<RuleSet> load_rules(const std::vector<std::string>& extra, bool with_defaults) {
  auto rules = with_defaults ? RuleSet::load_default() : util::Result<RuleSet>(RuleSet());
  if (!rules) {
    return rules;
  }
  for (const auto& path : extra) {
    auto more = RuleSet::load_file(path);
    if (!more) {
      return more;
    }
    if (auto st = rules->merge(*more); !st) {
      return util::Error{st.error()};
    }
  }
  auto errors = rules->check_references();
  if (!errors.empty()) {
    std::string all;
    for (const auto& e : errors) {
      all += (all.empty() ? "" : "\n") + e;
    }
    return util::Error{all};
  }
  auto compiled = compiled_rules(*rules);
  if (!compiled) {
    return util::Error{compiled.error()};
  }
  if (auto st = (*compiled)->compile_database(); !st) {
    return util::Error{st.error()};
  }
  return rules;
}

std::vector<std::string> RuleSet::check_references() const {
  std::set<std::string> ids;
  for (const Rule& r : m_impl->rules) {
    ids.insert(r.id);
  }
  std::vector<std::string> errors;
  for (const Rule& r : m_impl->rules) {
    for (const auto* list : {&r.needs, &r.unless, &r.after, &r.cleared_by, &r.not_after}) {
      for (const auto& ref : *list) {
        if (!ids.count(ref)) {
          errors.push_back(r.origin + ": rule '" + r.id + "': refers to unknown rule '" + ref +
                           "'");
        }
      }
    }
  }
  return errors;
}

}  // namespace classify
