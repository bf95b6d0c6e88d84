// cli/parse_args.hpp: how every subcommand parses its arguments with CLI11.
//
// --help prints the command's help on stdout (exit 0); a usage error prints one
// line "gpualert: error: NAME: ..." on stderr (exit 2), before anything runs.
#pragma once

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "util/text.hpp"

namespace cli {

// CLI11 validators for our value syntaxes, so that a typo is a usage error at parse
// time, before the command does anything (e.g. before `run` starts the job).
inline CLI::Validator duration_validator() {
  return CLI::Validator(
      [](const std::string& s) {
        auto r = util::parse_duration(s);
        return r ? std::string() : r.error();
      },
      "DURATION");
}
inline CLI::Validator size_validator() {
  return CLI::Validator(
      [](const std::string& s) {
        auto r = util::parse_size(s);
        return r ? std::string() : r.error();
      },
      "SIZE");
}

// Help as people write it: an option's value is named after the option (--log-dir
// LOG_DIR), its syntax (--timeout DURATION) or its choices (--notify
// always|failure|never), never with CLI11's type hints (TEXT:{always,failure,never}).
// `usage`, when given, replaces the generated usage line.
class HelpFormatter : public CLI::Formatter {
 public:
  explicit HelpFormatter(std::string usage = {}) : usage_(std::move(usage)) {}

  std::string make_usage(const CLI::App* app, std::string name) const override {
    return usage_.empty() ? CLI::Formatter::make_usage(app, name) : "Usage: " + usage_ + "\n";
  }

  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!opt->get_option_text().empty()) {
      return " " + opt->get_option_text();
    }
    if (opt->get_type_size() == 0 || opt->get_type_name().empty()) {
      return "";  // a flag
    }
    std::string out;
    if (!opt->get_positional()) {
      out = " " + value_name(opt);
    }
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) {
      out += " ...";
    }
    return out;
  }

 private:
  static std::string value_name(const CLI::Option* opt) {
    // CLI11 writes the base type, then each validator's description: "TEXT:DURATION".
    std::string type = opt->get_type_name();
    if (auto colon = type.rfind(':'); colon != std::string::npos) {
      std::string named = type.substr(colon + 1);
      if (named.size() > 2 && named.front() == '{' && named.back() == '}') {
        named = named.substr(1, named.size() - 2);
        for (auto& c : named) {
          c = c == ',' ? '|' : c;
        }
      }
      return named;
    }
    std::string name = opt->get_lnames().empty() ? opt->get_name() : opt->get_lnames().front();
    for (auto& c : name) {
      c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
  }

  std::string usage_;
};

// Gives app and its subcommands the HelpFormatter, unless the command chose its own.
inline void use_help_formatter(CLI::App& app) {
  if (dynamic_cast<HelpFormatter*>(app.get_formatter().get()) == nullptr) {
    auto f = std::make_shared<HelpFormatter>();
    f->column_width(app.get_formatter()->get_column_width());
    app.formatter(f);
  }
  for (auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    use_help_formatter(*sub);
  }
}

// Returns the exit status when parsing ended the command (help or usage error),
// nullopt when the command should go on.
inline std::optional<int> parse_args(CLI::App& app, int argc, char** argv, const char* name,
                                     const char* usage_hint = nullptr) {
  use_help_formatter(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "gpualert: error: %s: %s\n", name, e.what());
    if (usage_hint != nullptr) {
      std::fprintf(stderr, "%s\n", usage_hint);
    }
    return 2;
  }
  return std::nullopt;
}

}  // namespace cli
