// notify/gpu_chart.hpp: a small PNG of the job's GPUs over the run, for the HTML notice.
//
// Made in-process from gpus.jsonl (gpu/watch.hpp): per GPU, memory used as a share of
// its total (solid) and utilisation (light), 0-100 %, with the job's end marked by a
// red line. No text in the image: the text and the table beside it carry the numbers.
#pragma once

#include <string>
#include <vector>

namespace notify {

constexpr const char* k_gpu_chart_cid = "gpu-chart@gpualert";

// The PNG's bytes, or "" when the timeline has fewer than two readings.
std::string gpu_chart_png(const std::string& gpus_jsonl);

// One line per GPU from its last reading while the job ran, for the stall notice:
// "GPU 0 (NVIDIA H200): utilisation 0%, memory 1.2 GiB of 140.0 GiB (read 3.0s into the
// run)". Lines that don't parse (a sample being written) are skipped; {} without readings.
std::vector<std::string> gpu_now_lines(const std::string& gpus_jsonl);

}  // namespace notify
