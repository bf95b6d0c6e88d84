// cli/notify_flags.hpp: the options the notification commands share.
//
// outbox, test-notify and notify each take --config and --notify-timeout (and
// --to where recipients matter), and each loads the configuration and lays the
// flags over it (flags over environment over file). This is that, once.
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "config/config.hpp"
#include "util/text.hpp"

namespace cli {

struct NotifyFlags {
  std::string config_file;
  std::string timeout;
  std::vector<std::string> to;

  void add_to(Options& options, const char* timeout_help, bool with_recipients) {
    if (with_recipients) {
      options.values("--to", to, "recipient, repeatable (default: $GPUALERT_TO)");
    }
    options.value("--config", config_file, "configuration file");
    options.value("--notify-timeout", timeout, timeout_help).check(check_duration, "DURATION");
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
