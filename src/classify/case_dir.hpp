// classify/case_dir.hpp: reading a log file and the facts stored beside it.
//
// `classify` and `eval` share this: a finished run directory (report.json) or a
// corpus case (case.json) holds output.log, maybe kernel.log, and the exit status.
// The classifier itself only ever sees bytes and the structs of verdict.hpp.
#pragma once

#include <optional>
#include <string>

#include "classify/classifier.hpp"
#include "util/result.hpp"

namespace classify {

struct CaseFacts {
  std::optional<std::string> label;  // case.json's true label, when present
  // case.json's `batch` (as text) and `first_verdict`: the label the rules gave the
  // case when it was added, before any change for it (docs/evaluation.md).
  std::optional<std::string> batch, first_verdict;
  ExitInfo exit;
  bool exit_known = false;  // case.json/report.json gave an exit status
  HostEvidence host;        // kernel.log, and what case.json/report.json say was read on the host
};

// Reads case.json (preferred) or report.json and kernel.log from `dir`, whichever
// exist; absent files are not errors, unreadable or malformed ones are.
util::Result<CaseFacts> read_case_facts(const std::string& dir);

// Reads kernel messages, one per line (tolerates a missing final newline).
util::Status read_kernel_log(const std::string& path, HostEvidence& host);

// Parses "--signal" style names: "SIGKILL", "KILL", "9"; 0 when unknown.
int parse_signal(const std::string& name);

// Streams a log file through `scanner` in fixed-size chunks and finishes it.
util::Status scan_file(const std::string& path, Scanner& scanner);

}  // namespace classify
