// cli/commands.hpp: the subcommands. main() dispatches argv[1] through k_commands.
//
// Each command parses its own arguments (cli/options.hpp) from argv, where argv[0] is the
// subcommand's name, and returns the process exit status. Usage errors print one
// line "gpualert: error: ..." on stderr and return 2 before doing anything.
// Commands never call exit(); only main() ends the process.
#pragma once

#include <string_view>

namespace cli {

int cmd_run(int argc, char** argv);          // cmd_run.cpp
int cmd_classify(int argc, char** argv);     // cmd_classify.cpp
int cmd_eval(int argc, char** argv);         // cmd_eval.cpp
int cmd_rules(int argc, char** argv);        // cmd_rules.cpp
int cmd_outbox(int argc, char** argv);       // cmd_outbox.cpp
int cmd_test_notify(int argc, char** argv);  // cmd_test_notify.cpp
int cmd_notify(int argc, char** argv);
int cmd_sweep(int argc, char** argv);  // cmd_sweep.cpp: report runs whose wrapper is gone
int cmd_stats(int argc, char** argv);  // cmd_stats.cpp: labels across many run dirs
int cmd_outbox_flush(int argc,
                     char** argv);  // cmd_sweep.cpp: the journal's lost runs, then the outbox //
                                    // cmd_notify.cpp: (re)send the notice of a run dir

struct Command {
  std::string_view name;
  int (*fn)(int, char**);
  std::string_view summary;
};

}  // namespace cli
