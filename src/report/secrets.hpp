// report/secrets.hpp: the one masking of secrets, applied to everything gpualert
// writes or sends about a run (report.json's argv, command, env values, evidence and
// warnings; the log header; the mail's text and HTML parts; webhook bodies).
//
// The job's own raw output (output.log, and the log attached to the mail) is not
// masked: it is the record of what the job printed. Pure functions; never fail.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace report {

inline constexpr std::string_view k_mask = "********";

// Masks the values of obvious secrets in one line of text: assignments to names
// ending in token, secret, password, api_key... ("HF_TOKEN=x", "password: x"),
// command-line flags (--password=x, --hf-token x), Authorization headers and
// bearer tokens, credentials in URLs (user:pass@) and well-known token shapes
// (hf_, ghp_/gho_..., sk-, xox?-, AKIA..., AWS secret keys, 40-hex W&B keys).
std::string mask_secrets(std::string_view line);

// mask_secrets on each argument, and also the whole argument that follows a
// secret-named flag given on its own (`--password hunter2`).
std::vector<std::string> mask_argv(const std::vector<std::string>& argv);

}  // namespace report
