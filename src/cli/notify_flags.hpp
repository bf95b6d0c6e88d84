// cli/notify_flags.hpp: the options the notification commands share.
//
// outbox, test-notify and notify each take --config and --notify-timeout (and
// --to where recipients matter), and each loads the configuration and lays the
// flags over it (flags over environment over file). This is that, once.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/parse_args.hpp"
#include "config/config.hpp"

namespace cli {

struct NotifyFlags {
  std::string config_file;
  std::string timeout;
  std::vector<std::string> to;

  void add_to(CLI::App& app, const char* timeout_help, bool with_recipients) {
    if (with_recipients) {
      app.add_option("--to", to, "recipient, repeatable (default: $GPUALERT_TO)");
    }
    app.add_option("--config", config_file, "configuration file");
    app.add_option("--notify-timeout", timeout, timeout_help)->check(duration_validator());
  }

  // The configuration with the flags applied; on error, says why on stderr (nullopt).
  std::optional<config::Config> load() const {
    auto config = config::load_config(config_file);
    if (!config) {
      std::fprintf(stderr, "gpualert: error: %s\n", config.error().c_str());
      return std::nullopt;
    }
    if (!to.empty()) {
      if (auto st = config::check_recipients(to); !st) {
        std::fprintf(stderr, "gpualert: error: --to: %s\n", st.error().c_str());
        return std::nullopt;
      }
      config->to = to;
    }
    if (!timeout.empty()) {
      config->notify_timeout = *util::parse_duration(timeout);  // validated at parse time
    }
    return std::move(*config);
  }
};

}  // namespace cli
