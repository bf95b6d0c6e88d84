// The compiler in-process: every program but `gpualert` (see hs_compile.hpp), including
// the helper gpualert-compile that `gpualert` asks.
#include "classify/hs_compile.hpp"

#include <hs.h>  // pkg-config's include dir: Hyperscan or Vectorscan, wherever installed

#include <cstdlib>

namespace classify {

HsCompiled hs_compile_serialized(const std::vector<HsExpression>& expressions) {
  std::vector<const char*> patterns;
  std::vector<unsigned> flags, ids;
  for (const auto& e : expressions) {
    patterns.push_back(e.pattern.c_str());
    flags.push_back(e.flags);
    ids.push_back(e.id);
  }
  HsCompiled out;
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile_multi(patterns.data(), flags.data(), ids.data(),
                       static_cast<unsigned>(patterns.size()), HS_MODE_BLOCK, nullptr, &db,
                       &err) != HS_SUCCESS) {
    out.error = err != nullptr ? err->message : "hyperscan error";
    out.expression = err != nullptr ? err->expression : -1;
    hs_free_compile_error(err);
    return out;
  }
  char* bytes = nullptr;
  size_t length = 0;
  if (hs_serialize_database(db, &bytes, &length) != HS_SUCCESS) {
    out.error = "could not serialize the compiled database";
  } else {
    out.database.assign(bytes, length);
    std::free(bytes);
  }
  hs_free_database(db);
  return out;
}

util::Result<std::vector<std::string>> hs_check_each(const std::vector<HsExpression>& expressions) {
  std::vector<std::string> out;
  out.reserve(expressions.size());
  for (const auto& e : expressions) {
    hs_database_t* db = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_compile(e.pattern.c_str(), e.flags, HS_MODE_BLOCK, nullptr, &db, &err) != HS_SUCCESS) {
      out.emplace_back(err != nullptr && *err->message != '\0' ? err->message : "hyperscan error");
      hs_free_compile_error(err);
    } else {
      out.emplace_back();
      hs_free_database(db);
    }
  }
  return out;
}

}  // namespace classify
