// cli/cmd_notify.cpp: `gpualert notify`: (re)build and send the notice of a finished run directory.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/notify_flags.hpp"
#include "cli/options.hpp"
#include "notify/notify.hpp"
#include "util/text.hpp"

namespace cli {

int cmd_notify(int argc, char** argv) {
  Options options("gpualert notify",
                  "Build the notification of a finished run directory and send it (or queue it).");
  NotifyFlags flags;
  std::vector<std::string> attach;
  std::string budget, run_dir;
  flags.add_to(options, "the most delivery may take (default 60s)", /*with_recipients=*/true);
  options.values("--attach", attach, "artifact glob relative to the job's cwd, repeatable");
  options.value("--budget", budget, "total attachment budget, e.g. 10MiB (default 10MiB)")
      .check(check_size, "SIZE");
  bool report_outcome = false;  // for `run`: the outcome in a form it parses (cli/notifier.cpp)
  options.flag("--report-outcome", report_outcome, "").hidden();
  int64_t hold = 0;                    // for `run`: only queue it, held back this many seconds
  std::vector<std::string> supersede;  // for `run`: held entries this notice replaces
  options.value("--hold", hold, "").hidden().range(0, INT64_MAX);
  options.values("--supersede", supersede, "").hidden();
  std::string report_path;  // for `run`: report.json is elsewhere (a full log device)
  options.value("--report", report_path, "").hidden();
  options.positional("RUN_DIR", run_dir, "run directory holding report.json and output.log")
      .required();
  if (auto done = options.parse(argc, argv, "notify")) {
    return *done;
  }
  notify::RunNotice notice;
  notice.run_dir = run_dir;
  notice.attach = attach;
  notice.hold_seconds = hold;
  notice.supersede = supersede;
  notice.report_path = report_path;
  auto config = flags.load();
  if (!config) {
    return 2;
  }
  notice.budget_bytes = budget.empty() ? config->budget_bytes : *util::parse_size(budget);
  notify::Outcome out = notify::notify_run(notice, *config);
  if (report_outcome) {
    std::printf("%d%d", out.delivered ? 1 : 0, out.queued ? 1 : 0);
    for (const auto& id : out.ids) {
      std::printf(" %s", id.c_str());
    }
    std::printf("\n%s\n%s", out.where.c_str(), out.detail.c_str());
    return 0;
  }
  if (out.delivered) {
    std::printf("gpualert: notification delivered (%s)\n", out.where.c_str());
    return 0;
  }
  if (out.queued && !config::has_channel(*config)) {
    std::printf("gpualert: %s\n", out.detail.c_str());
    return 0;
  }
  std::fprintf(stderr, "gpualert: error: notification not delivered: %s%s\n", out.detail.c_str(),
               out.queued ? " (kept in the outbox; `gpualert outbox flush` retries)" : "");
  return 1;
}

}  // namespace cli
