#include "classify/compiled_rules.hpp"

#include <algorithm>

#include <hs/hs.h>

namespace classify {

namespace {

unsigned hs_flags(bool caseless) {
  unsigned flags = HS_FLAG_SINGLEMATCH;
  if (caseless) {
    flags |= HS_FLAG_CASELESS;
  }
  return flags;
}

// Flags in the shared database: ^ and $ at line breaks; every match reported,
// except for markers (once per block is all they need).
unsigned db_flags(bool caseless, bool once) {
  unsigned flags = HS_FLAG_MULTILINE;
  if (once) {
    flags |= HS_FLAG_SINGLEMATCH;
  }
  if (caseless) {
    flags |= HS_FLAG_CASELESS;
  }
  return flags;
}

}  // namespace

RE2::Options re2_options(bool caseless) {
  RE2::Options options;
  // Bytes, as Hyperscan sees them: logs may hold invalid UTF-8.
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_case_sensitive(!caseless);
  options.set_log_errors(false);
  return options;
}

std::string check_pattern(const std::string& pattern, bool caseless) {
  if (pattern.empty()) {
    return "empty pattern";
  }
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile(pattern.c_str(), hs_flags(caseless), HS_MODE_BLOCK, nullptr, &db, &err) !=
      HS_SUCCESS) {
    std::string message = "pattern '" + pattern + "': " + (err ? err->message : "hyperscan error");
    hs_free_compile_error(err);
    return message;
  }
  hs_free_database(db);
  RE2 re(pattern, re2_options(caseless));
  if (!re.ok()) {
    return "pattern '" + pattern + "': " + re.error();
  }
  return {};
}

std::string check_extractor(const std::string& pattern) {
  RE2 re(pattern, re2_options(false));
  if (!re.ok()) {
    return "extract '" + pattern + "': " + re.error();
  }
  if (re.NamedCapturingGroups().empty()) {
    return "extract '" + pattern + "': no named group (?P<name>...)";
  }
  return {};
}

CompiledRules::~CompiledRules() {
  hs_free_database(m_db);
  for (auto& [mask, db] : m_marker_dbs) {
    hs_free_database(db);
  }
}

const hs_database* CompiledRules::marker_database(uint32_t unseen) const {
  if (unseen == 0) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_marker_dbs.find(unseen);
  if (it != m_marker_dbs.end()) {
    return it->second;
  }
  std::vector<const char*> expressions;
  std::vector<unsigned> flags, ids;
  for (unsigned id = 0; id < m_patterns.size(); ++id) {
    const PatternRef& ref = m_patterns[id];
    if (!ref.once) {
      continue;
    }
    auto pos = std::find(m_once.begin(), m_once.end(), ref.rule) - m_once.begin();
    if (!(unseen & (1u << pos))) {
      continue;
    }
    const Rule& rule = m_rules[ref.rule];
    const auto& list = ref.exclude ? rule.exclude : rule.patterns;
    expressions.push_back(list[ref.index].c_str());
    flags.push_back(db_flags(rule.caseless, true));
    ids.push_back(id);
  }
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (!expressions.empty() &&
      hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                       static_cast<unsigned>(expressions.size()), HS_MODE_BLOCK, nullptr, &db,
                       &err) != HS_SUCCESS) {
    hs_free_compile_error(err);
    db = nullptr;
  }
  m_marker_dbs[unseen] = db;
  return db;
}

int CompiledRules::index_of(const std::string& id) const {
  auto it = m_index.find(id);
  return it == m_index.end() ? -1 : it->second;
}

util::Result<std::shared_ptr<const CompiledRules>> CompiledRules::build(
    const std::vector<Rule>& rules, const std::vector<std::string>& global_extract) {
  std::shared_ptr<CompiledRules> out(new CompiledRules());
  out->m_rules = rules;
  std::vector<const char*> expressions;
  std::vector<unsigned> flags;
  std::vector<unsigned> ids;
  // A marker that clears another rule must say where it last matched, so it is
  // reported on every line like a rule.
  std::unordered_map<std::string, bool> clears;
  for (const Rule& rule : rules) {
    for (const auto& id : rule.cleared_by) {
      clears[id] = true;
    }
  }
  for (uint32_t r = 0; r < rules.size(); ++r) {
    const Rule& rule = rules[r];
    out->m_index[rule.id] = static_cast<int>(r);
    const bool once = rule.is_marker && !clears.count(rule.id) && out->m_once.size() < 32;
    if (once) {
      out->m_once.push_back(r);
    }
    auto add = [&](const std::string& p, bool exclude, uint32_t index) {
      PatternRef ref{r, exclude, once, index, nullptr};
      if (!once) {
        expressions.push_back(p.c_str());
        flags.push_back(db_flags(rule.caseless, false));
        ids.push_back(static_cast<unsigned>(out->m_patterns.size()));
        ref.verify = std::make_unique<RE2>(p, re2_options(rule.caseless));
      }
      out->m_patterns.push_back(std::move(ref));
    };
    for (uint32_t i = 0; i < rule.patterns.size(); ++i) {
      add(rule.patterns[i], false, i);
    }
    for (uint32_t i = 0; i < rule.exclude.size(); ++i) {
      add(rule.exclude[i], true, i);
    }
    std::vector<std::unique_ptr<RE2>> extractors;
    for (const auto& e : rule.extract) {
      auto re = std::make_unique<RE2>(e, re2_options(false));
      if (!re->ok()) {
        return util::Error{rule.origin + ": rule '" + rule.id + "': extract: " + re->error()};
      }
      extractors.push_back(std::move(re));
    }
    out->m_extract.push_back(std::move(extractors));
  }
  for (const auto& e : global_extract) {
    auto re = std::make_unique<RE2>(e, re2_options(false));
    if (!re->ok()) {
      return util::Error{"extract '" + e + "': " + re->error()};
    }
    out->m_global.push_back(std::move(re));
  }
  for (const Rule& rule : rules) {
    Refs refs;
    auto resolve = [&](const std::vector<std::string>& names, std::vector<int>& into,
                       bool keep_unknown) {
      for (const auto& n : names) {
        int i = out->index_of(n);
        if (i >= 0 || keep_unknown) {
          into.push_back(i);
        }
      }
    };
    resolve(rule.needs, refs.needs, true);
    resolve(rule.unless, refs.unless, false);
    resolve(rule.after, refs.after, false);
    resolve(rule.cleared_by, refs.cleared_by, false);
    out->m_refs.push_back(std::move(refs));
  }
  if (!expressions.empty()) {
    hs_compile_error_t* err = nullptr;
    if (hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                         static_cast<unsigned>(expressions.size()), HS_MODE_BLOCK, nullptr,
                         &out->m_db, &err) != HS_SUCCESS) {
      std::string message = "hyperscan: ";
      if (err) {
        message += err->message;
        if (err->expression >= 0) {
          const PatternRef& ref = out->m_patterns[ids[static_cast<size_t>(err->expression)]];
          const Rule& rule = rules[ref.rule];
          message = rule.origin + ": rule '" + rule.id + "': pattern '" +
                    expressions[static_cast<size_t>(err->expression)] + "': " + err->message;
        }
      }
      hs_free_compile_error(err);
      return util::Error{message};
    }
  }
  return std::shared_ptr<const CompiledRules>(std::move(out));
}

}  // namespace classify
