// notify/text_filters.hpp: the filters every piece of quoted job text goes through
// before it reaches a message (headers, text body, HTML body).
//
// Job output is untrusted: it may hold ANSI colour codes, progress-bar redraws,
// invalid UTF-8, secrets the job printed, and (through a job name) CR/LF meant to
// forge headers. These pure functions are driven by message building; each one
// takes and returns text and never fails.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/secrets.hpp"

namespace notify {

// A terminal line redrawn with '\r' (progress bars): keeps only the last
// non-empty redraw. "a\rb\rc" -> "c"; a trailing '\r' (CRLF logs) is ignored.
std::string collapse_redraws(std::string_view line);

// util::strip_ansi + collapse_redraws + util::sanitize_utf8 (controls dropped, tabs kept).
std::string clean_log_line(std::string_view raw);

// report::mask_secrets: the one masking used for everything gpualert writes or sends.
std::string mask_secrets(std::string_view line);
inline constexpr std::string_view k_mask = report::k_mask;

std::string html_escape(std::string_view text);
// & < > as entities, and quotes too when `quotes` (HTML attributes; Slack's text wants
// only the first three).
std::string markup_escape(std::string_view text, bool quotes);

// Makes text safe for a header value: every control character (CR and LF
// included) becomes a space, runs of spaces collapse, at most max_chars bytes
// (cut at a UTF-8 boundary, marked with "...").
std::string sanitize_header_value(std::string_view text, size_t max_chars = 200);

// RFC 2047: returns the value unchanged when it is printable ASCII, else a
// sequence of UTF-8 Q-encoded words, each at most 75 characters, separated by
// "\r\n " (folded) so that no header line grows past 78 characters.
// Precondition: value has gone through sanitize_header_value.
std::string rfc2047_encode(std::string_view value);

}  // namespace notify
