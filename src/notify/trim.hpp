// notify/trim.hpp: a message the server refused for its size, made smaller.
//
// Delivery (deliver.cpp) calls trim_attachments() when a server refuses a message
// for its size (552, or over the SIZE its EHLO announced): rather than keep the
// notice forever, it is sent again without the attachments that do not fit,
// with a note part naming each one left out and why. Works on the messages
// render_message() makes: multipart/mixed { body, attachments... }.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace notify {

// The message with attachments dropped, last first, until it is at most
// `limit` bytes (0: no known limit, drop them all), plus a text part that names
// what was left out and `why`. nullopt when the message has no attachment to
// drop or is not a multipart/mixed message.
std::optional<std::string> trim_attachments(std::string_view message, uint64_t limit,
                                            const std::string& why);

}  // namespace notify
