#include "classify/compiled_rules.hpp"

#include <hs.h>  // pkg-config's include dir: Hyperscan or Vectorscan, wherever installed

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

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

std::string cache_path(const std::vector<const char*>& expressions,
                       const std::vector<unsigned>& flags, const std::vector<unsigned>& ids) {
  std::string dir = cache_dir();
  if (dir.empty()) {
    return {};
  }
  uint64_t h = fnv1a(1469598103934665603ull, hs_version());
  for (size_t i = 0; i < expressions.size(); ++i) {
    h = fnv1a(h, expressions[i]);
    std::string meta = "\x1f" + std::to_string(flags[i]) + "\x1f" + std::to_string(ids[i]) + "\x1e";
    h = fnv1a(h, meta);
  }
  char name[40];
  std::snprintf(name, sizeof name, "/hs-%016llx.db", static_cast<unsigned long long>(h));
  return dir + name;
}

hs_database_t* load_cached(const std::string& path) {
  if (path.empty()) {
    return nullptr;
  }
  auto bytes = util::read_file(path);
  if (!bytes || bytes->empty()) {
    return nullptr;
  }
  hs_database_t* db = nullptr;
  if (hs_deserialize_database(bytes->data(), bytes->size(), &db) != HS_SUCCESS) {
    return nullptr;
  }
  return db;
}

void store_cached(const std::string& path, const hs_database_t* db) {
  if (path.empty()) {
    return;
  }
  char* bytes = nullptr;
  size_t length = 0;
  if (hs_serialize_database(db, &bytes, &length) != HS_SUCCESS) {
    return;
  }
  std::string dir = path.substr(0, path.rfind('/'));
  if (util::make_dirs(dir, 0700)) {
    (void)util::write_file_atomic(path, std::string_view(bytes, length), 0600);
  }
  std::free(bytes);
}

// hs_compile_multi, with the cache in front of it.
hs_error_t compile_multi_cached(const std::vector<const char*>& expressions,
                                const std::vector<unsigned>& flags,
                                const std::vector<unsigned>& ids, hs_database_t** db,
                                hs_compile_error_t** err) {
  std::string path = cache_path(expressions, flags, ids);
  if ((*db = load_cached(path)) != nullptr) {
    return HS_SUCCESS;
  }
  hs_error_t rc =
      hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                       static_cast<unsigned>(expressions.size()), HS_MODE_BLOCK, nullptr, db, err);
  if (rc == HS_SUCCESS) {
    store_cached(path, *db);
  }
  return rc;
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
    hs_compile_error_t* err = nullptr;
    if (compile_multi_cached(m_expressions, m_flags, m_ids, &m_db, &err) != HS_SUCCESS) {
      std::string message = "hyperscan: ";
      if (err) {
        message += err->message;
        if (err->expression >= 0) {
          const size_t e = static_cast<size_t>(err->expression);
          const PatternRef& ref = m_patterns[m_ids[e]];
          const Rule& rule = m_rules[ref.rule];
          message = rule.origin + ": rule '" + rule.id + "': pattern '" + m_expressions[e] +
                    "': " + err->message;
        }
      }
      hs_free_compile_error(err);
      m_db = nullptr;
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
  // Cached on disk like the main database: each subset compiles once per user, not
  // once per job as markers are first seen.
  if (!expressions.empty() &&
      compile_multi_cached(expressions, flags, ids, &db, &err) != HS_SUCCESS) {
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
