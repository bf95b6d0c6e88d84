// Fuzzes what `run` records about the job from bytes it does not control: argv, the
// environment, the cwd, --name and $LOGNAME. Writing report.json and the log header
// must never throw (a throw after the job ended once cost the job's exit status),
// the JSON must parse, and paths and arguments must come back byte for byte.
//
// Input: fields separated by '\0': cwd, name, user, then arguments up to an empty
// field, then KEY=VALUE environment entries.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "report/run_dir.hpp"
#include "report/run_report.hpp"
#include "report/secrets.hpp"
#include "util/text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> fields;
  for (size_t start = 0;;) {
    size_t nul = in.find('\0', start);
    fields.emplace_back(in.substr(start, nul == std::string_view::npos ? nul : nul - start));
    if (nul == std::string_view::npos) {
      break;
    }
    start = nul + 1;
  }
  while (fields.size() < 4) {
    fields.emplace_back();
  }
  report::RunReport r;
  r.cwd = fields[0];
  r.name = fields[1];
  r.user = fields[2];
  size_t i = 3;
  for (; i < fields.size() && !fields[i].empty(); ++i) {
    r.argv.push_back(fields[i]);
  }
  std::vector<std::string> env_storage(
      fields.begin() + static_cast<long>(std::min(i + 1, fields.size())), fields.end());
  std::vector<char*> envp;
  for (auto& e : env_storage) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  r.command = util::shell_join(r.argv);
  r.run_dir = r.cwd + "/gpualert-logs/" + r.name;
  r.log_path = r.run_dir + "/output.log";
  r.env = report::relevant_environment(envp.data());
  r.warnings.push_back("the log is in " + r.run_dir);

  report::HeaderFacts header{r.name, r.argv, r.cwd, "host", r.user, "2026-01-01T00:00:00+00:00",
                             r.env};
  // The header keeps paths and arguments as bytes (shell-quoted), one line per
  // fact: every line is the wrapper's, whatever the job's argv holds.
  std::string text = report::format_header(header);
  for (std::string_view line : util::split_lines(text)) {
    if (line.substr(0, report::k_marker.size()) != report::k_marker) {
      std::abort();
    }
  }

  std::string json_text = report::to_text(r);
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::abort();
  }
  auto back = report::from_json(j);
  if (!back || back->cwd != r.cwd || back->user != r.user || back->run_dir != r.run_dir ||
      back->log_path != r.log_path || back->argv != report::mask_argv(r.argv) ||
      back->name != report::mask_secrets(r.name)) {
    std::abort();
  }
  return 0;
}
