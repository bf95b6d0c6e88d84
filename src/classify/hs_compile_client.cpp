// The compiler out of process, for `gpualert` only (hs_compile.hpp): the request goes to
// gpualert-compile, installed beside it, through a memory file on its stdin; the answer
// comes back on a pipe.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "classify/hs_compile.hpp"
#include "classify/hs_compile_wire.hpp"
#include "util/child.hpp"
#include "util/fd.hpp"

namespace classify {

namespace {

constexpr const char* k_helper = "gpualert-compile";

// Compiling a few hundred patterns takes well under a second; thousands, minutes.
constexpr auto k_deadline = std::chrono::minutes(10);

// The helper's answer on stdout, or why there is none.
std::optional<std::string> ask_helper(const char* mode,
                                      const std::vector<HsExpression>& expressions,
                                      std::string& why) {
  std::string helper = util::sibling_program(k_helper);
  if (helper.empty()) {
    why = std::string(k_helper) +
          ", which compiles the rules' patterns, is not installed beside gpualert";
    return std::nullopt;
  }
  util::UniqueFd request(::memfd_create(k_helper, MFD_CLOEXEC));
  if (!request.valid()) {
    why = std::string("memfd_create: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (auto st = util::write_all(request.get(), wire::encode_request(expressions)); !st) {
    why = "writing the request: " + st.error();
    return std::nullopt;
  }
  ::lseek(request.get(), 0, SEEK_SET);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  util::UniqueFd read_end(out[0]);
  pid_t pid = util::spawn_quiet(helper, k_helper, {mode}, out[1], /*new_session=*/true, nullptr,
                                request.get());
  int spawn_errno = errno;
  ::close(out[1]);
  if (pid < 0) {
    why = helper + ": " + std::strerror(spawn_errno);
    return std::nullopt;
  }
  util::ChildResult r = util::collect_child(
      pid, read_end.get(), std::chrono::steady_clock::now() + k_deadline, size_t{1} << 30);
  if (!r.finished) {
    why = helper + ": no answer within " + std::to_string(k_deadline.count()) + " minutes";
  } else if (WIFSIGNALED(r.status)) {
    why = helper + ": killed by signal " + std::to_string(WTERMSIG(r.status));
  } else if (WEXITSTATUS(r.status) != 0) {
    why = helper + ": exit status " + std::to_string(WEXITSTATUS(r.status));
  } else {
    return std::move(r.output);
  }
  return std::nullopt;
}

}  // namespace

HsCompiled hs_compile_serialized(const std::vector<HsExpression>& expressions) {
  HsCompiled out;
  std::string why;
  if (auto answer = ask_helper("database", expressions, why)) {
    if (auto compiled = wire::decode_compiled(*answer)) {
      return *compiled;
    }
    why = std::string(k_helper) + ": its answer could not be read";
  }
  out.error = why;
  return out;
}

util::Result<std::vector<std::string>> hs_check_each(const std::vector<HsExpression>& expressions) {
  if (expressions.empty()) {
    return std::vector<std::string>();
  }
  std::string why;
  if (auto answer = ask_helper("check", expressions, why)) {
    if (auto checks = wire::decode_checks(*answer);
        checks && checks->size() == expressions.size()) {
      return *checks;
    }
    why = std::string(k_helper) + ": its answer could not be read";
  }
  return util::Error{why};
}

}  // namespace classify
