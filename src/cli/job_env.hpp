// cli/job_env.hpp: the environment the job starts with.
//
// The job sees our environment unchanged, plus:
// - GPUALERT_RUN_DIR, so a job can find (and drop artifacts into) its run directory;
// - unless --no-line-buffer: requests for line-buffered stdout, because stdout is
//   now a pipe and a block-buffered runtime would lose its last lines when
//   SIGKILLed (the durable-log promise). PYTHONUNBUFFERED=1 for Python (only when
//   the user didn't set it), and coreutils' stdbuf preload (_STDBUF_O=L) for
//   dynamically linked C/C++ programs using stdio, when that library exists.
#pragma once

#include <string>
#include <vector>

namespace cli {

std::vector<std::string> job_environment(char** envp, bool line_buffer, const std::string& run_dir);

// Where coreutils keeps libstdbuf.so on this system, or "" if it doesn't.
std::string find_stdbuf_library();

}  // namespace cli
