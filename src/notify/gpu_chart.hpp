// notify/gpu_chart.hpp: a small PNG of the job's GPUs over the run, for the HTML notice.
//
// Made in-process from gpus.jsonl (gpu/watch.hpp): per GPU, memory used as a share of
// its total (solid) and utilisation (light), 0-100 %, with the job's end marked by a
// red line. No text in the image: the text and the table beside it carry the numbers.
#pragma once

#include <string>

namespace notify {

constexpr const char* k_gpu_chart_cid = "gpu-chart@gpualert";

// The PNG's bytes, or "" when the timeline has fewer than two readings.
std::string gpu_chart_png(const std::string& gpus_jsonl);

}  // namespace notify
