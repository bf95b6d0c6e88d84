// cli/sweep.hpp: finding and reporting runs whose wrapper is gone (cmd_sweep.cpp).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace cli {

// Reports every run of the journal (and, unless journal_only, of `log_dirs`) whose
// wrapper is gone; prints "reconstructed\tRUN_DIR\tLABEL; notice" per run. 0 when
// every run could be looked at, 1 otherwise.
int sweep(const std::vector<std::string>& log_dirs, const std::string& config_file, bool quiet,
          bool journal_only);

// Whether the journal holds a run other than `own_entry` whose wrapper seems gone
// (cheap: one open and flock per entry), so that a sweep is worth starting.
bool journal_has_orphans(const config::Config& config, const std::string& own_entry);

}  // namespace cli
