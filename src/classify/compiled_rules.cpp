#include "classify/compiled_rules.hpp"

#include <hs.h>  // pkg-config's include dir: Hyperscan or Vectorscan, wherever installed

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "classify/hs_compile.hpp"
#include "util/fd.hpp"

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

// Compiling a few hundred patterns costs Hyperscan ~0.2 s, which every `run`
// would pay before the job starts. The compiled database is kept in the user's
// cache dir, keyed by the Hyperscan version and the exact expressions, flags and
// ids, so only the first run with a given rule set compiles. A file that can't be
// read, or was made for another CPU (deserialisation checks the platform), is
// simply compiled again; caching is best effort and never an error.
std::string cache_dir() {
  if (const char* d = std::getenv("GPUALERT_CACHE_DIR"); d != nullptr && *d != '\0') {
    return d;
  }
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d != nullptr && *d == '/') {
    return std::string(d) + "/gpualert";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h == '/') {
    return std::string(h) + "/.cache/gpualert";
  }
  return {};
}

uint64_t fnv1a(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

std::string cache_path(const std::vector<HsExpression>& expressions, const char* kind = "db") {
  std::string dir = cache_dir();
  if (dir.empty()) {
    return {};
  }
  uint64_t h = fnv1a(1469598103934665603ull, hs_version());
  for (const auto& e : expressions) {
    h = fnv1a(h, e.pattern);
    std::string meta = "\x1f" + std::to_string(e.flags) + "\x1f" + std::to_string(e.id) + "\x1e";
    h = fnv1a(h, meta);
  }
  char name[40];
  std::snprintf(name, sizeof name, "/hs-%016llx.%s", static_cast<unsigned long long>(h), kind);
  return dir + name;
}

hs_database_t* deserialize(std::string_view bytes) {
  hs_database_t* db = nullptr;
  if (bytes.empty() || hs_deserialize_database(bytes.data(), bytes.size(), &db) != HS_SUCCESS) {
    return nullptr;
  }
  return db;
}

hs_database_t* load_cached(const std::string& path) {
  if (path.empty()) {
    return nullptr;
  }
  auto bytes = util::read_file(path);
  return bytes ? deserialize(*bytes) : nullptr;
}

void store_cached(const std::string& path, std::string_view bytes) {
  if (path.empty()) {
    return;
  }
  std::string dir = path.substr(0, path.rfind('/'));
  if (util::make_dirs(dir, 0700)) {
    (void)util::write_file_atomic(path, bytes, 0600);
  }
}

// The expressions' database, from the cache, else compiled (hs_compile.hpp) and cached.
// Null when they don't compile, with `failed` saying why.
hs_database_t* compile_cached(const std::vector<HsExpression>& expressions, HsCompiled& failed) {
  std::string path = cache_path(expressions);
  if (hs_database_t* db = load_cached(path)) {
    return db;
  }
  HsCompiled compiled = hs_compile_serialized(expressions);
  if (!compiled.error.empty()) {
    failed = std::move(compiled);
    return nullptr;
  }
  hs_database_t* db = deserialize(compiled.database);
  if (db == nullptr) {
    failed.error = "the compiled database could not be loaded";
    return nullptr;
  }
  store_cached(path, compiled.database);
  return db;
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
  RE2 re(pattern, re2_options(caseless));
  if (!re.ok()) {
    return "pattern '" + pattern + "': " + re.error();
  }
  return {};
}

HsExpression check_expression(const std::string& pattern, bool caseless) {
  return HsExpression{pattern, hs_flags(caseless), 0};
}

util::Result<std::vector<std::string>> check_expressions(
    const std::vector<HsExpression>& expressions) {
  // The file's content is checked like a database's: anything else is not trusted.
  constexpr std::string_view k_checked = "checked by hs_compile\n";
  std::string good = cache_path(expressions, "ok");
  if (!good.empty()) {
    if (auto bytes = util::read_file(good); bytes && *bytes == k_checked) {
      return std::vector<std::string>(expressions.size());
    }
  }
  auto checks = hs_check_each(expressions);
  if (checks &&
      std::all_of(checks->begin(), checks->end(), [](const auto& m) { return m.empty(); })) {
    store_cached(good, k_checked);  // nothing without a cache dir
  }
  return checks;
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

const RE2* LazyRegex::get() const {
  std::call_once(m_once, [this] {
    auto re = std::make_unique<RE2>(m_pattern, re2_options(m_caseless));
    if (re->ok()) {
      m_re = std::move(re);
    }
  });
  return m_re.get();
}

CompiledRules::~CompiledRules() {
  hs_free_database(m_db);
  for (auto& [mask, db] : m_marker_dbs) {
    hs_free_database(db);
  }
}

const hs_database* CompiledRules::database() const {
  std::call_once(m_db_once, [this] {
    if (m_expressions.empty()) {
      return;
    }
    std::vector<HsExpression> expressions;
    for (size_t i = 0; i < m_expressions.size(); ++i) {
      expressions.push_back(HsExpression{m_expressions[i], m_flags[i], m_ids[i]});
    }
    HsCompiled failed;
    m_db = compile_cached(expressions, failed);
    if (m_db == nullptr) {
      std::string message = "hyperscan: " + failed.error;
      if (failed.expression >= 0 && static_cast<size_t>(failed.expression) < m_expressions.size()) {
        const size_t e = static_cast<size_t>(failed.expression);
        const PatternRef& ref = m_patterns[m_ids[e]];
        const Rule& rule = m_rules[ref.rule];
        message = rule.origin + ": rule '" + rule.id + "': pattern '" + m_expressions[e] +
                  "': " + failed.error;
      }
      m_db_error = message;
    }
  });
  return m_db;
}

util::Status CompiledRules::compile_database() const {
  database();
  if (!m_db_error.empty()) {
    return util::Error{m_db_error};
  }
  return util::ok_status();
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
  std::vector<HsExpression> expressions;
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
    expressions.push_back(HsExpression{list[ref.index], db_flags(rule.caseless, true), id});
  }
  // Cached on disk like the main database: each subset compiles once per user, not
  // once per job as markers are first seen.
  HsCompiled failed;
  hs_database_t* db = expressions.empty() ? nullptr : compile_cached(expressions, failed);
  m_marker_dbs[unseen] = db;
  return db;
}

int CompiledRules::index_of(const std::string& id) const {
  auto it = m_index.find(id);
  return it == m_index.end() ? -1 : it->second;
}

util::Result<std::shared_ptr<const CompiledRules>> CompiledRules::build(
    std::vector<Rule> moved_rules, const std::vector<std::string>& global_extract) {
  std::shared_ptr<CompiledRules> out(new CompiledRules());
  out->m_rules = std::move(moved_rules);
  const std::vector<Rule>& rules = out->m_rules;
  std::vector<const char*> expressions;
  std::vector<unsigned> flags;
  std::vector<unsigned> ids;
  // A marker that clears another rule, or that must match the log's last line
  // (at_end), must say where it last matched, so it is reported on every line like a rule.
  std::unordered_map<std::string, bool> clears;
  for (const Rule& rule : rules) {
    for (const auto& id : rule.cleared_by) {
      clears[id] = true;
    }
  }
  out->m_extract.reserve(rules.size());
  for (uint32_t r = 0; r < out->m_rules.size(); ++r) {
    // The expressions point into out->m_rules: the database is built later.
    const Rule& rule = out->m_rules[r];
    out->m_index[rule.id] = static_cast<int>(r);
    const bool once =
        rule.is_marker && !rule.at_end && !clears.count(rule.id) && out->m_once.size() < 32;
    if (once) {
      out->m_once.push_back(r);
    }
    auto add = [&](const std::string& p, bool exclude, uint32_t index) {
      PatternRef ref{r, exclude, once, index, nullptr};
      if (!once) {
        expressions.push_back(p.c_str());
        flags.push_back(db_flags(rule.caseless, false));
        ids.push_back(static_cast<unsigned>(out->m_patterns.size()));
        ref.verify = &out->m_regexes.emplace_back(p, rule.caseless);
      }
      out->m_patterns.push_back(std::move(ref));
    };
    for (uint32_t i = 0; i < rule.patterns.size(); ++i) {
      add(rule.patterns[i], false, i);
    }
    for (uint32_t i = 0; i < rule.exclude.size(); ++i) {
      add(rule.exclude[i], true, i);
    }
    // Loading checked the extractors (the unit tests, the embedded table's).
    std::vector<const LazyRegex*> extractors;
    extractors.reserve(rule.extract.size());
    for (const auto& e : rule.extract) {
      extractors.push_back(&out->m_regexes.emplace_back(e, false));
    }
    out->m_extract.push_back(std::move(extractors));
  }
  out->m_global_patterns = global_extract;
  for (const auto& e : out->m_global_patterns) {
    out->m_global.push_back(&out->m_regexes.emplace_back(e, false));
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
    resolve(rule.not_after, refs.not_after, false);
    out->m_refs.push_back(std::move(refs));
  }
  out->m_expressions = std::move(expressions);
  out->m_flags = std::move(flags);
  out->m_ids = std::move(ids);
  return std::shared_ptr<const CompiledRules>(std::move(out));
}

}  // namespace classify
