// cli/parse_args.hpp: how every subcommand parses its arguments with CLI11.
//
// --help prints the command's help on stdout (exit 0); a usage error prints one
// line "gpualert: error: NAME: ..." on stderr (exit 2), before anything runs.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
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

// Returns the exit status when parsing ended the command (help or usage error),
// nullopt when the command should go on.
inline std::optional<int> parse_args(CLI::App& app, int argc, char** argv, const char* name,
                                     const char* usage_hint = nullptr) {
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
