// gpualert-compile: compiles rule patterns into a Hyperscan database for `gpualert`,
// which does not carry the compiler (hs_compile.hpp).
//
// usage: gpualert-compile database|check  (request on stdin, answer on stdout;
// hs_compile_wire.hpp). Exit 0 with an answer, compile errors included; 2 when the
// request can't be read.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "classify/hs_compile.hpp"
#include "classify/hs_compile_wire.hpp"
#include "util/fd.hpp"

int main(int argc, char** argv) {
  const bool database = argc == 2 && std::strcmp(argv[1], "database") == 0;
  const bool check = argc == 2 && std::strcmp(argv[1], "check") == 0;
  if (!database && !check) {
    std::fputs("usage: gpualert-compile database|check  (run by gpualert)\n", stderr);
    return 2;
  }
  std::string request;
  char buf[65536];
  for (;;) {
    ssize_t n = util::read_retry(STDIN_FILENO, buf, sizeof buf);
    if (n < 0) {
      std::perror("gpualert-compile: stdin");
      return 2;
    }
    if (n == 0) {
      break;
    }
    request.append(buf, static_cast<size_t>(n));
  }
  auto expressions = classify::wire::decode_request(request);
  if (!expressions) {
    std::fputs("gpualert-compile: the request on stdin is malformed\n", stderr);
    return 2;
  }
  std::string answer;
  if (database) {
    answer = classify::wire::encode_compiled(classify::hs_compile_serialized(*expressions));
  } else if (auto checks = classify::hs_check_each(*expressions)) {
    answer = classify::wire::encode_checks(*checks);
  } else {
    std::fprintf(stderr, "gpualert-compile: %s\n", checks.error().c_str());
    return 2;
  }
  if (auto st = util::write_all(STDOUT_FILENO, answer); !st) {
    std::fprintf(stderr, "gpualert-compile: stdout: %s\n", st.error().c_str());
    return 2;
  }
  return 0;
}
