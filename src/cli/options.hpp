// cli/options.hpp: a command's options, parsed with getopt_long, and its --help.
//
// Each command describes its options in an Options table bound to its own
// variables, then calls parse(). --help (-h) prints the help on stdout (exit 0);
// a usage error prints one line "gpualert: error: NAME: ..." on stderr (exit 2),
// before anything runs. No iostreams: `run` parses its options for every job.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cli {

// Says why a value is not valid: empty when it is.
using Validator = std::string (*)(const std::string& value);

// Our value syntaxes (util::parse_duration, util::parse_size), so that a typo is a
// usage error at parse time, before the command does anything (e.g. before `run`
// starts the job).
std::string check_duration(const std::string& value);
std::string check_size(const std::string& value);

class Option {
 public:
  // The value's name in the help (--log-dir DIR); by default the validator's
  // (DURATION), the choices (always|failure|never), else the option's name in
  // capitals (--kernel-log KERNEL_LOG).
  Option& value_name(const char* name) {
    value_name_ = name;
    return *this;
  }
  // The only values accepted; any other is a usage error naming these.
  Option& choices(std::initializer_list<std::string_view> allowed) {
    choices_.assign(allowed.begin(), allowed.end());
    return *this;
  }
  // A check of the value; `name` names its syntax in the help (DURATION).
  Option& check(Validator validator, const char* name) {
    validator_ = validator;
    validator_name_ = name;
    return *this;
  }
  // For a whole number: the least and the most accepted.
  Option& range(int64_t min, int64_t max) {
    min_ = min;
    max_ = max;
    return *this;
  }
  // A positional that must be given.
  Option& required() {
    required_ = true;
    return *this;
  }
  // Left out of the help (options that gpualert passes to itself).
  Option& hidden() {
    hidden_ = true;
    return *this;
  }
  // How many times the command line gave it (0: the default stands).
  int count() const { return count_; }
  explicit operator bool() const { return count_ > 0; }

 private:
  friend class Options;
  enum class Kind { flag, text, texts, integer };

  std::string long_name_;  // without "--"; for a positional, its name
  char short_name_ = 0;
  bool positional_ = false;
  Kind kind_ = Kind::flag;
  const char* help_ = "";
  const char* value_name_ = nullptr;
  const char* validator_name_ = nullptr;
  Validator validator_ = nullptr;
  std::vector<std::string_view> choices_;
  int64_t min_ = INT64_MIN;
  int64_t max_ = INT64_MAX;
  bool required_ = false;
  bool hidden_ = false;
  int count_ = 0;
  bool* flag_ = nullptr;
  std::string* text_ = nullptr;
  std::vector<std::string>* texts_ = nullptr;
  int* int_ = nullptr;
  int64_t* int64_ = nullptr;
};

class Options {
 public:
  // `program` starts the usage line ("gpualert classify"); `description` heads the help.
  Options(std::string_view program, std::string_view description)
      : program_(program), description_(description) {}
  Options(const Options&) = delete;
  Options& operator=(const Options&) = delete;

  // `names` is "--name" or "-q,--quiet".
  Option& flag(const char* names, bool& out, const char* help);
  Option& value(const char* names, std::string& out, const char* help);
  Option& value(const char* names, int& out, const char* help);
  Option& value(const char* names, int64_t& out, const char* help);
  // Repeatable: each occurrence adds a value.
  Option& values(const char* names, std::vector<std::string>& out, const char* help);
  // Positional arguments, in order; a vector takes all that are left.
  Option& positional(const char* name, std::string& out, const char* help);
  Option& positionals(const char* name, std::vector<std::string>& out, const char* help);
  // A subcommand, for the help only (the command dispatches it itself).
  void subcommand(const char* name, const char* summary);

  // Replaces the generated usage line (after "Usage: ").
  void usage(std::string_view line) { usage_ = line; }
  // Text after the options in the help.
  void footer(std::string_view text) { footer_ = text; }
  // Options end at the first argument that is not one (or after "--"); the rest is
  // left for the command, from rest() on (`run`'s COMMAND [ARGS...]).
  void stop_at_first_argument() { stop_at_first_argument_ = true; }

  // Parses argv[1..argc). Returns the exit status when parsing ended the command
  // (help: 0; a usage error: 2, said on stderr with `name`, then `usage_hint`
  // when given), nullopt when the command should go on.
  std::optional<int> parse(int argc, char** argv, const char* name,
                           const char* usage_hint = nullptr);
  // The first argument that parse() left (with stop_at_first_argument()).
  int rest() const { return rest_; }

  std::string help() const;

 private:
  Option& add(const char* names, Option::Kind kind, const char* help);
  Option& add_positional(const char* name, Option::Kind kind, const char* help);
  // Takes one value for `o`; says why not in `error`.
  bool take(Option& o, const char* value, std::string& error);
  // As the help names it (-q,--quiet), and as an error does (--quiet).
  std::string option_label(const Option& o) const;
  std::string error_label(const Option& o) const;

  std::string program_;
  std::string description_;
  std::string usage_;
  std::string footer_;
  bool stop_at_first_argument_ = false;
  std::deque<Option> options_;  // deque: the references handed out stay valid
  std::vector<Option*> positionals_;
  std::vector<std::pair<const char*, const char*>> subcommands_;
  int rest_ = 0;
};

}  // namespace cli
