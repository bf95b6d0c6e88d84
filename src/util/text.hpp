// util/text.hpp: string helpers that know nothing about gpualert.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace util {

// Quotes one word for a POSIX shell so that pasting it back gives the same word.
// Control characters (CR, LF, ESC...) use $'...' so the result is always one line.
// `s` without leading spaces/tabs and trailing spaces, tabs and '\r'.
std::string_view trim_blanks(std::string_view s);
// ASCII case-insensitive equality (configuration keys).
bool equals_ignoring_case(std::string_view a, std::string_view b);
// `s` as a whole decimal number, if it is one.
std::optional<size_t> whole_number(std::string_view s);
// The positive decimal number at the start of `s`, if any ("4242 (python)" -> 4242).
std::optional<long> leading_number(std::string_view s);

std::string shell_quote(std::string_view word);
std::string shell_join(const std::vector<std::string>& argv);

// "90s", "2h", "1h30m", "1.5h", "500ms", a bare number is seconds. Must be > 0
// unless allow_zero. Errors name the offending text.
Result<std::chrono::milliseconds> parse_duration(std::string_view text, bool allow_zero = false);
// "10MiB", "512k", "1G", "1000" (bytes). K/M/G are binary (KiB, MiB, GiB), KB/MB/GB decimal.
Result<uint64_t> parse_size(std::string_view text);
// "2h13m", "45s", "3m05s": compact human duration.
std::string human_duration(double seconds);
std::string human_size(uint64_t bytes);

// Local time as ISO 8601 with offset, e.g. 2026-11-29T18:40:00+01:00.
std::string iso8601_local(std::time_t t);
// The inverse for any offset: "2026-12-01T21:57:16+01:00" (also "Z", "+0100", a
// fraction of a second, or no offset: UTC) -> seconds since the epoch; nullopt if
// the text is not such a time.
std::optional<std::time_t> parse_iso8601(std::string_view text);
// YYYYmmdd-HHMMSS in local time.
std::string compact_local(std::time_t t);

// Length of the well-formed UTF-8 sequence that starts at text[i] (1 for ASCII),
// or 0 when the bytes there are not one (truncated, overlong, surrogate, > U+10FFFF).
size_t utf8_sequence_length(std::string_view text, size_t i);
inline constexpr std::string_view k_replacement_character = "\xEF\xBF\xBD";  // U+FFFD
bool is_valid_utf8(std::string_view text);

// What sanitize_utf8 does with control characters (C0 and DEL).
enum class Controls {
  keep,     // left as they are
  drop,     // removed, tabs kept: a line of job output quoted in a report or a mail
  replace,  // each one U+FFFD, a tab a space: one printable line of a table
};
// The one UTF-8 sanitizer: bytes that are not valid UTF-8 become U+FFFD, control
// characters are treated as `controls` says, and once the result reaches max_bytes
// the rest is cut (at a character boundary) and " [...]" marks the cut.
std::string sanitize_utf8(std::string_view text, Controls controls = Controls::keep,
                          size_t max_bytes = std::string_view::npos);
// Shorthands for the two common uses.
inline std::string valid_utf8(std::string_view text) { return sanitize_utf8(text); }
inline std::string printable_line(std::string_view text) {
  return sanitize_utf8(text, Controls::replace);
}

// RFC 4648 base64 (with padding). decode fails on anything that is not base64.
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

// Removes terminal escape sequences: CSI "ESC [ params final", OSC/DCS/APC/PM
// "ESC ] ... BEL or ESC \\", charset selection "ESC ( B", other two-byte escapes.
// Returns `in` itself when it holds no ESC (no copy: the scanner's hot path);
// otherwise the stripped text, stored in `scratch`.
std::string_view strip_ansi(std::string_view in, std::string& scratch);

// Splits on '\n' (the last piece only if non-empty).
std::vector<std::string_view> split_lines(std::string_view text);
// Keeps [A-Za-z0-9._-], maps everything else to '_', at most max_len bytes, never empty.
std::string safe_file_component(std::string_view text, size_t max_len = 64);

std::string hostname();
// $LOGNAME, else $USER, else the effective uid's name in /etc/passwd, else "uid<N>".
// Not getpwuid: `gpualert` is linked statically (its start is part of every job's
// added time), and a static glibc can't load the NSS modules (sssd, LDAP) safely.
// Every login, Slurm job, sudo and cron sets $LOGNAME or $USER; the file covers
// containers that run as a bare uid.
std::string username();
// The name of `uid` in a passwd file's text ("name:x:uid:gid:..."), if listed.
std::optional<std::string> passwd_name(std::string_view passwd_text, unsigned long uid);

}  // namespace util
