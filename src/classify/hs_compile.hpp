// classify/hs_compile.hpp: Hyperscan's pattern compiler, behind two calls.
//
// Compiling is rare (a rule set's first use: the database is cached, compiled_rules.cpp),
// but the compiler is most of Hyperscan, and linked into `gpualert` its CPU-dispatch
// resolvers, static constructors and relocations would cost every job's start
// (docs/performance.md). So `gpualert` asks a helper program, gpualert-compile, to
// compile (hs_compile_client.cpp), and every other program compiles in-process
// (hs_compile.cpp). Both files define the functions below: `gpualert` links the
// client's object ahead of the classify library, whose in-process member is then never
// pulled in (a test checks that the binary holds no compiler).
#pragma once

#include <string>
#include <vector>

#include "util/result.hpp"

namespace classify {

struct HsExpression {
  std::string pattern;
  unsigned flags = 0;  // HS_FLAG_*
  unsigned id = 0;     // reported with each match
};

struct HsCompiled {
  std::string database;  // block mode, serialized (hs_serialize_database); empty on failure
  std::string error;     // why it failed: Hyperscan's message, or why no compiler ran
  int expression = -1;   // the index of the expression the error is about, when it is one
};

// One database for all the expressions (hs_compile_multi).
HsCompiled hs_compile_serialized(const std::vector<HsExpression>& expressions);

// Hyperscan's message for each expression compiled on its own, "" for those that
// compile: what a rules file's loader reports with the rule and line. An error when no
// compiler could be run.
util::Result<std::vector<std::string>> hs_check_each(const std::vector<HsExpression>& expressions);

}  // namespace classify
