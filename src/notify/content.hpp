// notify/content.hpp: what a notice says: subject, text body, HTML body.
//
// Pure functions over the run's report, the quoted log excerpt and the
// attachment table; message assembly (mime.hpp) turns them into MIME. Every
// piece of job-controlled text is sanitised here: header values lose their
// control characters (no header injection) and are RFC 2047-encoded later;
// body text is masked for secrets (log_excerpt) and HTML-escaped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "notify/attachments.hpp"
#include "notify/log_excerpt.hpp"
#include "notify/policy.hpp"
#include "report/run_report.hpp"

namespace notify {

// A run succeeded when its verdict says "success", or, with no verdict, when it exited 0.

// "exit 1 after 2h13m", "killed by SIGKILL after 5m02s", "exit 0 after 42s".
// The verdict's first action, specialised with the facts at hand (the job's --mem for a
// memory cgroup's OOM kill, its time limit).
std::string first_action(const report::RunReport& r);
std::string ending_phrase(const report::RunReport& r);

// "[gpualert] FAILED cuda_oom: llama-ft on gpu-node17 (exit 1 after 2h13m)" or
// "[gpualert] succeeded: ...". Sanitised (one line, no control characters), not yet RFC
// 2047-encoded.
std::string build_subject(const report::RunReport& r);

// The job's id as its scheduler names it ("17_1" for a Slurm array member), or "".
std::string scheduler_job_id(const std::map<std::string, std::string>& env);

// The evidence line that decided (log, kernel or scheduler), masked, cleaned and cut to
// 90 bytes for a phone's subject line; "" when the verdict quotes none.
std::string decisive_line(const report::RunReport& r);

struct Bodies {
  std::string text;
  std::string html;
};

// gpu_chart: the message carries the GPU chart (gpu_chart.hpp), shown under the GPUs table.
// gpus_now: the stall notice's GPU lines (gpu_now_lines), shown when r.state is "stalled".
Bodies build_bodies(const report::RunReport& r, const LogExcerpt& excerpt,
                    const std::vector<Attachment>& attachments, uint64_t budget,
                    bool gpu_chart = false, const std::vector<std::string>& gpus_now = {});

// The final notice's line about a stall (--stall) the run had: when, and whether the
// output resumed or gpualert stopped the job; "" without one.
std::string stall_summary(const report::RunReport& r);

}  // namespace notify
