#include "report/secrets.hpp"

#include <re2/re2.h>

#include <cctype>

namespace report {

namespace {

const RE2::Options& insensitive() {
  static const RE2::Options k_options = [] {
    RE2::Options o;
    o.set_case_sensitive(false);
    o.set_log_errors(false);
    return o;
  }();
  return k_options;
}

bool is_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '+';
}

// Runs of exactly 40 characters of [A-Za-z0-9/+] with a boundary on each side:
// 40 lowercase hex digits (W&B API keys) or a mix of upper, lower and digits (AWS
// secret access keys). RE2 has no look-around, so the shape is checked here.
std::string mask_key_runs(std::string s) {
  size_t i = 0;
  while (i < s.size()) {
    if (!is_key_char(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && is_key_char(s[j])) {
      ++j;
    }
    bool bounded = (i == 0 || s[i - 1] != '=') && (j == s.size() || s[j] != '=');
    if (j - i == 40 && bounded) {
      bool hex = true, upper = false, lower = false, digit = false;
      for (size_t k = i; k < j; ++k) {
        unsigned char c = static_cast<unsigned char>(s[k]);
        hex = hex && (std::isdigit(c) || (c >= 'a' && c <= 'f'));
        upper = upper || std::isupper(c);
        lower = lower || std::islower(c);
        digit = digit || std::isdigit(c);
      }
      if (hex || (upper && lower && digit)) {
        s.replace(i, j - i, k_mask);
        j = i + k_mask.size();
      }
    }
    i = j;
  }
  return s;
}

// Whether any of the patterns below could match: each needs one of these words.
// Most lines (and most commands: `python train.py --lr 3e-4`) have none, and then
// the patterns are neither compiled nor run: the log header is written with the
// command before the job starts, where every microsecond is the job's.
bool may_hold_secret(std::string_view line) {
  static constexpr std::string_view k_words[] = {
      "token", "secret", "passw", "pwd",  "key",         "auth", "bearer", "://",  "hf_", "ghp_",
      "gho_",  "ghu_",   "ghs_",  "ghr_", "github_pat_", "sk-",  "xox",    "akia", "asia"};
  std::string lower(line);
  for (char& c : lower) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (auto w : k_words) {
    if (lower.find(w) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string mask_secrets(std::string_view line) {
  if (!may_hold_secret(line)) {
    return mask_key_runs(std::string(line));
  }
  // RE2, not std::regex: this runs on untrusted log text (linear time, no recursion).
  // Names that end in a secret word, then '=' or ':' (env, YAML, JSON, INI, logs).
  static const RE2 k_assign(
      R"(([A-Za-z0-9_.-]*(token|secret|password|passwd|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key)["']?\s*[:=]\s*["']?))"
      R"(([^\s"',;]+))",
      insensitive());
  // Command-line flags: --hf-token VALUE, --password=VALUE.
  static const RE2 k_flag(
      R"((--?[A-Za-z0-9_-]*(token|secret|password|passwd|api[_-]?key)(=|\s+)["']?)([^\s"',;-][^\s"',;]*))",
      insensitive());
  static const RE2 k_auth(
      R"((authorization["']?\s*[:=]\s*["']?((bearer|basic|token|bot)\s+)?)([^\s"',;]+))",
      insensitive());
  static const RE2 k_bearer(R"((\bbearer\s+)([A-Za-z0-9._~+/=-]{8,}))", insensitive());
  static const RE2 k_url_creds(R"((://[^/\s:@]+:)([^/\s@]+)(@))", insensitive());
  // Token shapes are case-sensitive (AKIA..., hf_...).
  static const RE2 k_shapes(
      R"(\b(hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|(AKIA|ASIA)[0-9A-Z]{16})\b)");
  std::string s(line);
  const std::string mask(k_mask);
  RE2::GlobalReplace(&s, k_auth, "\\1" + mask);
  RE2::GlobalReplace(&s, k_bearer, "\\1" + mask);
  RE2::GlobalReplace(&s, k_assign, "\\1" + mask);
  RE2::GlobalReplace(&s, k_flag, "\\1" + mask);
  RE2::GlobalReplace(&s, k_url_creds, "\\1" + mask + "\\3");
  RE2::GlobalReplace(&s, k_shapes, mask);
  return mask_key_runs(std::move(s));
}

std::vector<std::string> mask_argv(const std::vector<std::string>& argv) {
  auto secret_flag = [](const std::string& a) {
    static const RE2 k_secret_flag(
        R"(--?[A-Za-z0-9_-]*(token|secret|password|passwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key))",
        insensitive());
    return RE2::FullMatch(a, k_secret_flag);
  };
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool value_of_secret_flag = false;
  for (const auto& a : argv) {
    out.push_back(value_of_secret_flag ? std::string(k_mask) : mask_secrets(a));
    value_of_secret_flag = may_hold_secret(a) && secret_flag(a);
  }
  return out;
}

}  // namespace report
