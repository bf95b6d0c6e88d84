// util/scoped_env.hpp: for tests, sets or unsets an environment variable and puts
// back what was there when it goes out of scope.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace util {

class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : m_name(std::move(name)) {
    if (const char* old = std::getenv(m_name.c_str())) {
      m_old = old;
    }
    set(value);
  }
  ~ScopedEnv() { set(m_old); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  void set(const std::optional<std::string>& value) const {
    if (value) {
      ::setenv(m_name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(m_name.c_str());
    }
  }

 private:
  std::string m_name;
  std::optional<std::string> m_old;
};

}  // namespace util
