// cli/parse_args.hpp: how every subcommand parses its arguments with CLI11.
//
// --help prints the command's help on stdout (exit 0); a usage error prints one
// line "gpualert: error: NAME: ..." on stderr (exit 2), before anything runs.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

namespace cli {

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
