// notify/log_excerpt.hpp: the parts of output.log (and kernel.log) a message quotes.
//
// Message building calls read_excerpt() once per notice. The log may be huge and
// may still hold anything the job printed, so lines come back cleaned
// (clean_log_line) and secrets masked, and reading is bounded: evidence windows
// need one forward pass that stops after the last wanted line, the tail reads
// only the last k_tail_window bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/verdict.hpp"

namespace notify {

struct QuotedLine {
  uint64_t number = 0;  // 1-based line number in its file
  std::string text;     // cleaned and masked
};

struct EvidenceWindow {
  std::string source;               // "log", "kernel", ...
  std::string file;                 // "output.log", "kernel.log", or "" for facts
  uint64_t hit = 0;                 // the evidence line number (0: not from a file)
  std::string text;                 // the evidence text (cleaned, masked)
  std::vector<QuotedLine> context;  // hit-k .. hit+k when the file could be read
};

struct LogExcerpt {
  std::vector<EvidenceWindow> evidence;
  std::vector<std::string> tail;  // last lines of job output, cleaned and masked
  bool tail_cut = false;          // the log has more lines than the tail shows
  std::string error;              // why the log could not be read ("" if it could)
};

inline constexpr size_t k_tail_lines = 60;
inline constexpr size_t k_context_lines = 2;
inline constexpr size_t k_tail_window = 256 * 1024;

// Collapses a raw chunk of log into displayable lines: wrapper lines (marker
// prefix) dropped, each line cleaned, at most `keep` last lines kept.
std::vector<std::string> tail_lines(std::string_view raw, size_t keep, bool* cut = nullptr);

LogExcerpt read_excerpt(const std::string& log_path, const std::string& kernel_path,
                        const std::vector<model::EvidenceLine>& evidence);

}  // namespace notify
