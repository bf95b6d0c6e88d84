// classify/text.hpp: turning raw log bytes into text that rules can match.
//
// Logs are untrusted bytes: colour codes, prefixes added by launchers, invalid
// UTF-8. These helpers never allocate unless they must change the text, and all
// run in time linear in the input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "util/text.hpp"

namespace classify {

// ANSI escape sequences are removed with util::strip_ansi (shared with the mail's log tail).

struct Stripped {
  std::string_view text;  // the line without the prefixes below
  int rank = -1;          // rank named by a prefix, -1 when none
};

// Removes the prefixes that launchers and loggers put in front of messages, as many
// as are stacked: "[rank3]:", "[default0]:", srun -l "0: ", mpirun "[1,0]<stderr>:",
// glog "[E1218 20:27:21.426 file.cpp:629] " / "[E file.cpp:475] ", and the
// python-glog "W0616 00:37:22.876000 4015698 file.py:900] ", and the C++ runtime's
// "  what():  " before an uncaught exception's message. Rules anchored with ^ then see
// the message itself.
Stripped strip_prefixes(std::string_view line);

// Text fit for a report: invalid UTF-8 bytes become U+FFFD, control characters
// other than tab are dropped, and the result is cut to about max_bytes.
inline std::string printable(std::string_view in, size_t max_bytes = 1024) {
  return util::sanitize_utf8(in, util::Controls::drop, max_bytes);
}

}  // namespace classify
