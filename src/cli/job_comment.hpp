// cli/job_comment.hpp: the run's verdict in its Slurm job's Comment.
//
// At the end of a run inside a Slurm job, `run` starts
// `scontrol update JobId=$SLURM_JOB_ID Comment="gpualert: <label> [rank N]: <cause>"`
// beside the notice and waits for it at most 2 s in all (host::CommentWrite), so that
// `sacct -o JobID,State,Comment` and `squeue -O comment` show why each job ended. The
// exit status never depends on it. Opt out with `slurm_comment = false` or
// GPUALERT_SLURM_COMMENT=0.
#pragma once

#include <string>

#include "config/config.hpp"
#include "host/scheduler.hpp"
#include "report/run_report.hpp"

namespace cli {

// "gpualert: cuda_oom rank 3: torch.OutOfMemoryError: CUDA out of memory ..." (before
// host::slurm_comment_text cuts and cleans it).
std::string job_comment_text(const report::RunReport& rep);

// Starts the write when the run is inside a Slurm job (SLURM_JOB_ID), the config allows
// it, and the run failed or is the only task of its step: a healthy task of a
// multi-task step must not overwrite a failing task's cause. Not running otherwise.
host::CommentWrite start_job_comment(const report::RunReport& rep, const config::Config& config);

}  // namespace cli
