// util/result.hpp: a value-or-error return type used by every module.
//
// Functions that can fail return Result<T>; the error is a human-readable
// message that already carries its context (path, syscall, strerror), so the
// caller can print it as is or prefix it with its own context.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace util {

struct Error {
  std::string message;
};

// Builds an Error from a context and the current errno: "open /x: Permission denied".
Error errno_error(const std::string& context);
Error errno_error(const std::string& context, int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : m_v(std::move(value)) {}
  Result(Error error) : m_v(std::move(error)) {}

  bool ok() const { return m_v.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(m_v); }
  const T& value() const { return std::get<0>(m_v); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(m_v).message; }

 private:
  std::variant<T, Error> m_v;
};

// Result<void>: success carries nothing.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Status(Ok{}); }

}  // namespace util
