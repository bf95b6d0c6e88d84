#include "cli/options.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace cli {
namespace {

// argv as a command gets it: argv[0] is the command's name; the strings stay alive
// while the test looks at what parse() left.
struct Argv {
  explicit Argv(std::vector<std::string> args) : strings(std::move(args)) {
    strings.insert(strings.begin(), "cmd");
    for (auto& s : strings) {
      pointers.push_back(s.data());
    }
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(strings.size()); }
  char** argv() { return pointers.data(); }

  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

// The usage error parse() printed on stderr, or "" when it printed none.
struct Parsed {
  std::optional<int> status;
  std::string stderr_text;
  std::string stdout_text;
};

Parsed parse(Options& options, std::vector<std::string> args, const char* hint = nullptr) {
  Argv a(std::move(args));
  Parsed p;
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  p.status = options.parse(a.argc(), a.argv(), "cmd", hint);
  p.stdout_text = testing::internal::GetCapturedStdout();
  p.stderr_text = testing::internal::GetCapturedStderr();
  return p;
}

struct Table {
  Table() : options("gpualert cmd", "What cmd does.") {
    options.flag("-q,--quiet", quiet, "say less");
    name_opt = &options.value("--name", name, "the name");
    options.values("--to", to, "recipient, repeatable").value_name("ADDR");
    options.value("--notify", notify, "when").choices({"always", "failure", "never"});
    timeout_opt =
        &options.value("--timeout", timeout, "how long").check(check_duration, "DURATION");
    options.value("--size", size, "how many").range(1, 10).value_name("N");
    options.value("--secret", secret, "").hidden();
  }
  Options options;
  bool quiet = false;
  std::string name = "default", notify, timeout, secret;
  std::vector<std::string> to;
  int size = 0;
  Option* name_opt = nullptr;
  Option* timeout_opt = nullptr;
};

TEST(Options, FlagsAndValuesWithEqualsOrSpace) {
  Table t;
  auto p = parse(t.options, {"-q", "--name=job", "--timeout", "90s", "--size=3"});
  EXPECT_FALSE(p.status);
  EXPECT_EQ(p.stderr_text, "");
  EXPECT_TRUE(t.quiet);
  EXPECT_EQ(t.name, "job");
  EXPECT_EQ(t.timeout, "90s");
  EXPECT_EQ(t.size, 3);
}

TEST(Options, LongFlagAndShortFlagAreOne) {
  Table t;
  EXPECT_FALSE(parse(t.options, {"--quiet", "-q"}).status);
  EXPECT_TRUE(t.quiet);
}

TEST(Options, RepeatedValuesAreCollectedInOrder) {
  Table t;
  EXPECT_FALSE(parse(t.options, {"--to", "a@x", "--to=b@x", "--to", "c@x"}).status);
  EXPECT_EQ(t.to, (std::vector<std::string>{"a@x", "b@x", "c@x"}));
}

TEST(Options, GivenOrDefault) {
  Table t;
  EXPECT_FALSE(parse(t.options, {"--quiet"}).status);
  EXPECT_EQ(t.name_opt->count(), 0);
  EXPECT_FALSE(*t.name_opt);
  EXPECT_EQ(t.name, "default");

  Table u;
  EXPECT_FALSE(parse(u.options, {"--name", "default"}).status);
  EXPECT_EQ(u.name_opt->count(), 1);
  EXPECT_TRUE(*u.name_opt);
}

TEST(Options, UnknownOptionIsAUsageError) {
  Table t;
  auto p = parse(t.options, {"--bogus"}, "usage: gpualert cmd");
  EXPECT_EQ(p.status, 2);
  EXPECT_EQ(p.stderr_text, "gpualert: error: cmd: unknown option --bogus\nusage: gpualert cmd\n");
  Table u;
  EXPECT_EQ(parse(u.options, {"-x"}).stderr_text, "gpualert: error: cmd: unknown option -x\n");
}

TEST(Options, NamesAreTakenWholeNotAbbreviated) {
  Table t;
  auto p = parse(t.options, {"--tim", "90s"});
  EXPECT_EQ(p.status, 2);
  EXPECT_EQ(p.stderr_text, "gpualert: error: cmd: unknown option --tim\n");
  EXPECT_EQ(t.timeout, "");
}

TEST(Options, MissingValue) {
  Table t;
  auto p = parse(t.options, {"--name"});
  EXPECT_EQ(p.status, 2);
  EXPECT_EQ(p.stderr_text, "gpualert: error: cmd: --name: needs a value\n");
  Table u;
  EXPECT_EQ(parse(u.options, {"--name="}).stderr_text,
            "gpualert: error: cmd: --name: needs a value\n");
}

TEST(Options, FlagTakesNoValue) {
  Table t;
  EXPECT_EQ(parse(t.options, {"--quiet=yes"}).stderr_text,
            "gpualert: error: cmd: --quiet: takes no value\n");
}

TEST(Options, SingleValueGivenTwice) {
  Table t;
  EXPECT_EQ(parse(t.options, {"--name", "a", "--name", "b"}).stderr_text,
            "gpualert: error: cmd: --name: given more than once\n");
}

TEST(Options, BadChoiceNamesTheAllowedOnes) {
  Table t;
  auto p = parse(t.options, {"--notify", "sometimes"});
  EXPECT_EQ(p.status, 2);
  EXPECT_EQ(p.stderr_text,
            "gpualert: error: cmd: --notify: 'sometimes' is not one of always, failure, never\n");
  Table u;
  EXPECT_FALSE(parse(u.options, {"--notify", "failure"}).status);
  EXPECT_EQ(u.notify, "failure");
}

TEST(Options, ValidatorErrorIsAUsageError) {
  Table t;
  auto p = parse(t.options, {"--timeout", "soon"});
  EXPECT_EQ(p.status, 2);
  EXPECT_EQ(p.stderr_text.rfind("gpualert: error: cmd: --timeout: ", 0), 0u) << p.stderr_text;
  EXPECT_NE(p.stderr_text.find("soon"), std::string::npos);
  EXPECT_EQ(check_duration("1h30m"), "");
  EXPECT_NE(check_size("lots"), "");
  EXPECT_EQ(check_size("10MiB"), "");
}

TEST(Options, WholeNumbersInTheirRange) {
  Table t;
  EXPECT_EQ(parse(t.options, {"--size", "0"}).stderr_text,
            "gpualert: error: cmd: --size: 0 is not in the range 1 to 10\n");
  Table u;
  EXPECT_EQ(parse(u.options, {"--size", "3x"}).stderr_text,
            "gpualert: error: cmd: --size: '3x' is not a whole number\n");
}

TEST(Options, HelpOnStdout) {
  Table t;
  auto p = parse(t.options, {"--name", "x", "--help"});
  EXPECT_EQ(p.status, 0);
  EXPECT_EQ(p.stderr_text, "");
  EXPECT_EQ(p.stdout_text,
            "What cmd does.\n"
            "Usage: gpualert cmd [OPTIONS]\n"
            "\n"
            "Options:\n"
            "  -h,--help                   Print this help message and exit\n"
            "  -q,--quiet                  say less\n"
            "  --name NAME                 the name\n"
            "  --to ADDR ...               recipient, repeatable\n"
            "  --notify always|failure|never\n"
            "                              when\n"
            "  --timeout DURATION          how long\n"
            "  --size N                    how many\n"
            "\n");
  Table u;
  EXPECT_EQ(parse(u.options, {"-h"}).status, 0);
  Table v;
  EXPECT_EQ(parse(v.options, {"--he"}).stderr_text, "gpualert: error: cmd: unknown option --he\n");
}

TEST(Options, PositionalsAmongOptionsAndAfterDoubleDash) {
  Options options("gpualert cmd", "");
  std::string action;
  std::vector<std::string> ids;
  bool json = false;
  options.positional("ACTION", action, "what").required().choices({"list", "withdraw"});
  options.positionals("ID", ids, "which");
  options.flag("--json", json, "as JSON");
  EXPECT_FALSE(parse(options, {"withdraw", "a", "--json", "b", "--", "--c"}).status);
  EXPECT_EQ(action, "withdraw");
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b", "--c"}));
  EXPECT_TRUE(json);
  EXPECT_EQ(options.help(),
            "Usage: gpualert cmd [OPTIONS] ACTION [ID...]\n"
            "\n"
            "Positionals:\n"
            "  ACTION                      what\n"
            "  ID ...                      which\n"
            "\n"
            "Options:\n"
            "  -h,--help                   Print this help message and exit\n"
            "  --json                      as JSON\n"
            "\n");
}

TEST(Options, RequiredAndExtraPositionals) {
  Options a("gpualert cmd", "");
  std::string file;
  a.positional("FILE", file, "").required();
  EXPECT_EQ(parse(a, {}).stderr_text, "gpualert: error: cmd: FILE is required\n");
  Options b("gpualert cmd", "");
  b.positional("FILE", file, "").required();
  EXPECT_EQ(parse(b, {"x", "y"}).stderr_text, "gpualert: error: cmd: unexpected argument 'y'\n");
}

// run: options end at "--" or at the first other word; all after it is the command's.
TEST(Options, StopAtFirstArgumentLeavesTheCommand) {
  auto command_of = [](std::vector<std::string> args, std::string* name = nullptr) {
    Options options("gpualert run", "");
    options.stop_at_first_argument();
    std::string n;
    bool quiet = false;
    options.value("--name", n, "");
    options.flag("-q,--quiet", quiet, "");
    Argv a(std::move(args));
    EXPECT_FALSE(options.parse(a.argc(), a.argv(), "run"));
    if (name != nullptr) {
      *name = n;
    }
    return std::vector<std::string>(a.argv() + options.rest(), a.argv() + a.argc());
  };
  std::string name;
  EXPECT_EQ(command_of({"--name", "x", "--", "python", "-q", "--", "--name"}, &name),
            (std::vector<std::string>{"python", "-q", "--", "--name"}));
  EXPECT_EQ(name, "x");
  EXPECT_EQ(command_of({"-q", "train.sh", "--name", "y"}, &name),
            (std::vector<std::string>{"train.sh", "--name", "y"}));
  EXPECT_EQ(name, "");
  EXPECT_EQ(command_of({"--name", "--", "--", "cmd"}, &name), (std::vector<std::string>{"cmd"}));
  EXPECT_EQ(name, "--");
  EXPECT_EQ(command_of({"-q", "--"}), std::vector<std::string>{});
}

// Parsing twice in one process starts afresh (getopt's state is global).
TEST(Options, ParsesAgain) {
  for (int i = 0; i < 2; ++i) {
    Table t;
    EXPECT_FALSE(parse(t.options, {"-q", "--name", "n"}).status);
    EXPECT_TRUE(t.quiet);
    EXPECT_EQ(t.name, "n");
  }
}

TEST(Options, SubcommandsInTheHelp) {
  Options options("gpualert rules", "The rules.");
  options.subcommand("list", "list them");
  options.subcommand("check", "check a file");
  EXPECT_EQ(options.help(),
            "The rules.\n"
            "Usage: gpualert rules [OPTIONS] SUBCOMMAND\n"
            "\n"
            "Options:\n"
            "  -h,--help                   Print this help message and exit\n"
            "\n"
            "Subcommands:\n"
            "  list                        list them\n"
            "  check                       check a file\n"
            "\n");
}

}  // namespace
}  // namespace cli
