// The rule table itself: ids, labels, patterns, examples (style guide rule 8).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "classify/compiled_rules.hpp"
#include "classify/default_rules.hpp"
#include "classify/taxonomy.hpp"
#include "classify/test_support.hpp"
#include "classify/text.hpp"
#include "util/fd.hpp"
#include "util/scoped_env.hpp"
#include "util/text.hpp"

namespace classify {
namespace {

using testing::default_rules;

bool line_feeds_rule(const RuleSet& rules, const std::string& line, const std::string& id) {
  Scanner scanner(rules);
  scanner.feed(line);
  scanner.finish();
  auto ids = scanner.evidence_rules();
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST(RuleTable, DefaultLoads) {
  auto rules = RuleSet::load_default();
  ASSERT_TRUE(rules.ok()) << rules.error();
  EXPECT_GT(rules->rules().size(), 30u);
  EXPECT_TRUE(rules->check_references().empty());
}

TEST(RuleTable, IdsAreUniqueAndLabelsKnown) {
  std::set<std::string> ids;
  for (const Rule& rule : default_rules().rules()) {
    EXPECT_TRUE(ids.insert(rule.id).second) << "duplicate id " << rule.id;
    if (rule.is_marker) {
      EXPECT_TRUE(rule.label.empty()) << rule.id;
    } else {
      EXPECT_NE(find_label(rule.label), nullptr) << rule.id << ": " << rule.label;
    }
  }
}

TEST(Taxonomy, LabelsAreUnique) {
  // The scanner maps a rule to the label of its name (find_label: the first).
  std::set<std::string> seen;
  for (const auto& info : labels()) {
    EXPECT_TRUE(seen.insert(std::string(info.label)).second) << info.label;
  }
}

TEST(RuleTable, EveryFailureLabelHasARule) {
  std::set<std::string> covered;
  for (const Rule& rule : default_rules().rules()) {
    covered.insert(rule.label);
  }
  for (const auto& info : labels()) {
    if (info.label == "success") {
      continue;  // the absence of evidence
    }
    EXPECT_TRUE(covered.count(std::string(info.label))) << info.label;
  }
}

TEST(RuleTable, PatternsCompileInBothEngines) {
  for (const Rule& rule : default_rules().rules()) {
    for (const auto& p : rule.patterns) {
      EXPECT_EQ(check_pattern(p, rule.caseless), "") << rule.id;
    }
    for (const auto& p : rule.exclude) {
      EXPECT_EQ(check_pattern(p, rule.caseless), "") << rule.id;
    }
    for (const auto& e : rule.extract) {
      EXPECT_EQ(check_extractor(e), "") << rule.id;
    }
  }
  // load_default() skips these checks at run time and CompiledRules compiles RE2
  // lazily: this test is what keeps the embedded table valid.
  for (const auto& e : default_rules().global_extract()) {
    EXPECT_EQ(check_extractor(e), "") << e;
  }
  auto compiled = compiled_rules(default_rules());
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  auto database = (*compiled)->compile_database();
  EXPECT_TRUE(database.ok()) << database.error();
}

TEST(RuleTable, ScannersInThreadsShareLazyRegexes) {
  // RE2 verifiers and extractors are compiled on first use, by whichever of the
  // Scanners sharing one CompiledRules needs them first.
  auto rules = RuleSet::load_default();
  ASSERT_TRUE(rules.ok()) << rules.error();
  const std::string log =
      "Epoch 1 | loss 1.2\n"
      "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB\n";
  std::vector<Verdict> verdicts(4);
  std::vector<std::thread> threads;
  for (auto& v : verdicts) {
    threads.emplace_back(
        [&rules, &log, &v] { v = testing::classify_text(log, testing::exit_code(1), {}, *rules); });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.label, "cuda_oom");
    EXPECT_EQ(v.fields.count("requested"), 1u);  // a per-rule extractor
    ASSERT_FALSE(v.evidence.empty());
    EXPECT_EQ(v.evidence[0].line, 2u);
  }
}

TEST(RuleTable, EveryPatternRuleHasExamplesThatMatch) {
  for (const Rule& rule : default_rules().rules()) {
    if (rule.patterns.empty()) {
      continue;
    }
    EXPECT_FALSE(rule.examples.empty()) << rule.id << " has no examples";
    for (const auto& example : rule.examples) {
      EXPECT_TRUE(line_feeds_rule(default_rules(), example, rule.id))
          << rule.id << " does not match its example: " << example;
      // RE2 must agree with Hyperscan (fields and the grep export rely on it).
      std::string scratch;
      auto text = strip_prefixes(util::strip_ansi(example, scratch)).text;
      bool re2_match = std::any_of(rule.patterns.begin(), rule.patterns.end(), [&](auto& p) {
        RE2 re(p, re2_options(rule.caseless));
        return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re);
      });
      EXPECT_TRUE(re2_match) << rule.id << " (RE2) does not match: " << example;
    }
    for (const auto& counter : rule.not_examples) {
      EXPECT_FALSE(line_feeds_rule(default_rules(), counter, rule.id))
          << rule.id << " wrongly matches: " << counter;
    }
  }
}

TEST(RuleTable, ConditionOnlyRulesHaveConditions) {
  for (const Rule& rule : default_rules().rules()) {
    if (rule.patterns.empty() && !rule.is_marker) {
      EXPECT_TRUE(!rule.signals.empty() || !rule.exit_codes.empty() || rule.cgroup_oom ||
                  rule.wrapper_timeout || rule.stalled || rule.host_unread || rule.host_read)
          << rule.id;
    }
  }
}

// ---- loading user files

TEST(RuleLoading, ErrorsCarryFileAndLine) {
  auto r = RuleSet::load_string(
      "version = 1\n"
      "[[rule]]\n"
      "id = \"a\"\n"
      "label = \"not_a_label\"\n"
      "patterns = ['x']\n",
      "site.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("site.toml:2: rule 'a': unknown label 'not_a_label'"), std::string::npos)
      << r.error();
}

TEST(RuleLoading, BadRegexIsReported) {
  auto r = RuleSet::load_string(
      "[[rule]]\nid = \"a\"\nlabel = \"cuda_oom\"\npatterns = ['(unclosed']\n", "f.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("f.toml:1: rule 'a': pattern '(unclosed'"), std::string::npos)
      << r.error();
}

TEST(RuleLoading, BackReferencesAreRejected) {
  auto r = RuleSet::load_string(
      "[[rule]]\nid = \"a\"\nlabel = \"cuda_oom\"\npatterns = ['(a)\\1']\n", "f.toml");
  EXPECT_FALSE(r.ok());
}

TEST(RuleLoading, SyntaxErrorHasLine) {
  auto r = RuleSet::load_string("version = 1\n\n[[rule]\n", "broken.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("broken.toml:3: ", 0), 0u) << r.error();
}

TEST(RuleLoading, UnknownKeyAndDuplicateId) {
  auto r = RuleSet::load_string(
      "[[rule]]\nid = \"a\"\nlabel = \"cuda_oom\"\npatterns = ['x']\npaterns = ['y']\n"
      "[[rule]]\nid = \"a\"\nlabel = \"cuda_oom\"\npatterns = ['z']\n",
      "f.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("unknown rule key 'paterns'"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("f.toml:6: duplicate id 'a'"), std::string::npos) << r.error();
}

TEST(RuleLoading, HostReadAndHostUnreadExcludeEachOther) {
  auto ok = RuleSet::load_string(
      "[[rule]]\nid = \"a\"\nlabel = \"unknown\"\nhost_read = true\nsignals = [\"SIGKILL\"]\n",
      "f.toml");
  ASSERT_TRUE(ok.ok()) << ok.error();
  auto both = RuleSet::load_string(
      "[[rule]]\nid = \"a\"\nlabel = \"unknown\"\nhost_read = true\nhost_unread = true\n",
      "f.toml");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().find("f.toml:1: rule 'a': host_read and host_unread exclude each other"),
            std::string::npos)
      << both.error();
}

TEST(RuleLoading, FailsZeroExitIsForMarkers) {
  auto r = RuleSet::load_string(
      "[[rule]]\nid = \"a\"\nlabel = \"script_error\"\npatterns = ['x']\nfails_zero_exit = true\n",
      "f.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("fails_zero_exit is for markers"), std::string::npos) << r.error();
  EXPECT_TRUE(RuleSet::load_string("[[marker]]\nid = \"m\"\npatterns = ['x']\n"
                                   "fails_zero_exit = true\nat_end = true\n",
                                   "f.toml")
                  .ok());
}

TEST(RuleLoading, MergeOverridesInPlaceAndAppends) {
  auto site = RuleSet::load_string(
      "[[rule]]\nid = \"cuda-oom\"\nlabel = \"cuda_oom\"\npatterns = ['SITE OOM']\n"
      "action = 'ask the site team'\n"
      "[[rule]]\nid = \"site-quota\"\nlabel = \"disk_full\"\npatterns = ['over quota on "
      "/project']\n",
      "site.toml");
  ASSERT_TRUE(site.ok()) << site.error();
  auto rules = RuleSet::load_default();
  ASSERT_TRUE(rules.ok());
  size_t before = rules->rules().size();
  size_t oom_index = 0;
  for (; oom_index < before; ++oom_index) {
    if (rules->rules()[oom_index].id == "cuda-oom") {
      break;
    }
  }
  ASSERT_TRUE(rules->merge(*site).ok());
  ASSERT_EQ(rules->rules().size(), before + 1);
  EXPECT_EQ(rules->rules()[oom_index].patterns, std::vector<std::string>{"SITE OOM"});
  EXPECT_EQ(rules->rules().back().id, "site-quota");

  auto v = testing::classify_text("x\nSITE OOM on gpu 3\n", testing::exit_code(1), {}, *rules);
  EXPECT_EQ(v.label, "cuda_oom");
  EXPECT_EQ(v.action, "ask the site team");
  v = testing::classify_text("user over quota on /project\n", testing::exit_code(1), {}, *rules);
  EXPECT_EQ(v.label, "disk_full");
}

TEST(RuleLoading, UnknownReferenceIsFoundAfterMerge) {
  auto site = RuleSet::load_string(
      "[[rule]]\nid = \"x\"\nlabel = \"cuda_oom\"\npatterns = ['x']\nneeds = ['nope']\n",
      "site.toml");
  ASSERT_TRUE(site.ok()) << site.error();
  auto errors = site->check_references();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("site.toml:1: rule 'x': refers to unknown rule 'nope'"),
            std::string::npos);
}

}  // namespace
}  // namespace classify

// The binary carries the default table only as generated C++: it must be the
// source file as the parser reads it, every field of every rule, in order.
TEST(RuleTable, GeneratedTableIsTheParsedSource) {
  std::ifstream in(GPUALERT_DEFAULT_RULES_TOML, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_TRUE(in) << GPUALERT_DEFAULT_RULES_TOML;
  auto parsed = classify::RuleSet::load_string(text.str(), "default_rules.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  auto full = classify::RuleSet::load_default(true);
  ASSERT_TRUE(full.ok()) << full.error();
  ASSERT_EQ(full->rules().size(), parsed->rules().size());
  for (size_t i = 0; i < full->rules().size(); ++i) {
    EXPECT_TRUE(full->rules()[i] == parsed->rules()[i]) << parsed->rules()[i].id;
  }
  EXPECT_EQ(full->global_extract(), parsed->global_extract());
  EXPECT_FALSE(full->rules()[0].examples.empty() && full->rules()[1].examples.empty());

  // What `run` loads: the same rules without their documentation.
  auto lean = classify::RuleSet::load_default(false);
  ASSERT_TRUE(lean.ok()) << lean.error();
  ASSERT_EQ(lean->rules().size(), parsed->rules().size());
  for (size_t i = 0; i < lean->rules().size(); ++i) {
    classify::Rule undocumented = parsed->rules()[i];
    undocumented.note.clear();
    undocumented.examples.clear();
    undocumented.not_examples.clear();
    EXPECT_TRUE(lean->rules()[i] == undocumented) << undocumented.id;
  }
}

// The compiled Hyperscan database is cached per user: a cache file that is
// garbage, cut short or empty is compiled again and replaced, never trusted.
TEST(RuleCache, BrokenCacheFilesAreRebuilt) {
  char dir_template[] = "/tmp/gpualert-hscache-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  util::ScopedEnv cache_dir("GPUALERT_CACHE_DIR", dir);
  const std::string toml =
      "[[rule]]\nid = \"q\"\nlabel = \"disk_full\"\npatterns = ['quota exceeded on /scratch']\n";
  auto classify_once = [&] {
    auto rules = classify::RuleSet::load_string(toml, "cache.toml");
    EXPECT_TRUE(rules.ok()) << rules.error();
    return classify::testing::classify_text("x\nerror: quota exceeded on /scratch/u1\n",
                                            classify::testing::exit_code(1), {}, *rules)
        .label;
  };
  auto cache_files = [&] {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      files.push_back(e.path().string());
    }
    return files;
  };
  EXPECT_EQ(classify_once(), "disk_full");
  const auto files = cache_files();
  ASSERT_FALSE(files.empty());
  std::map<std::string, std::string> good;
  for (const auto& f : files) {
    auto bytes = util::read_file(f);
    ASSERT_TRUE(bytes.ok());
    good[f] = *bytes;
  }
  for (const std::string& broken :
       {std::string("not a hyperscan database"), std::string(), std::string("half")}) {
    for (const auto& [f, bytes] : good) {
      std::string content = broken == "half" ? bytes.substr(0, bytes.size() / 2) : broken;
      ASSERT_TRUE(util::write_file_atomic(f, content).ok());
    }
    EXPECT_EQ(classify_once(), "disk_full") << "cache files: '" << broken << "'";
    for (const auto& [f, bytes] : good) {
      auto now = util::read_file(f);
      ASSERT_TRUE(now.ok());
      EXPECT_EQ(*now, bytes) << f << " was not rebuilt after '" << broken << "'";
    }
  }
  std::filesystem::remove_all(dir);
}
