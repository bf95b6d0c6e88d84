// config/config.hpp: gpualert's configuration: flags over environment over a TOML file.
//
// CONTRACT: load() reads the file named by --config, else $GPUALERT_CONFIG, else
// $XDG_CONFIG_HOME/gpualert/config.toml (or ~/.config/...), when it exists; then
// applies the environment (spec/cli.md); flags are applied by the CLI afterwards.
// A broken file is an error that names the file and line.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace config {

struct Config {
  // Delivery.
  std::string smtp_url;  // empty: no SMTP
  std::string smtp_user;
  std::string smtp_password_file;  // the password is read from here at send time
  std::string smtp_password;       // only from the config file (never argv or env)
  std::string smtp_ca_file;        // CA bundle for a private relay
  std::string from;
  std::vector<std::string> to;
  std::string webhook_url;               // empty: no webhook
  std::string webhook_format = "slack";  // "slack" | "json"
  std::string ntfy_url;                  // empty: no ntfy push (the topic's URL)
  std::chrono::milliseconds notify_timeout{60000};
  std::string notify_when = "always";  // always | failure | never
  uint64_t budget_bytes = 10u << 20;
  // Inside a Slurm job, `run` writes its verdict into the job's Comment (cli/job_comment.hpp).
  bool slurm_comment = true;
  // The wrapped ranks of one job send one notice (report/job_group.hpp): the group's key
  // ("" = a Slurm step's tasks by themselves, "none" = every rank on its own) and size.
  std::string group;
  std::optional<int> group_size;
  // A Slurm array's members: "each" sends each member's notice, "digest" one summary
  // once all members ended (cli/array_digest.hpp).
  std::string array_mode = "each";
  // How often `run` samples the job's GPUs (gpu/watch.hpp); 0 turns GPU facts off.
  unsigned gpu_sample_seconds = 5;
  // `run` sends one notice when the job printed nothing for this long (off when unset);
  // stall_action "kill" then ends the job as --timeout would (cli/run_job.cpp).
  std::optional<std::chrono::milliseconds> stall;
  std::string stall_action = "notify";  // notify | kill
  // Places.
  std::string log_dir;     // empty: ./gpualert-logs
  std::string state_dir;   // outbox and journal; default XDG state dir
  std::string rules_file;  // extra rules
  std::string source;      // which file was read, for messages ("" if none)
};

// file_override: the --config value, empty if not given. Errors name the file
// and line ("config.toml:3:7: ...") or the environment variable at fault.
util::Result<Config> load_config(const std::string& file_override);
// The SMTP password: the contents of smtp_password_file (first line), else
// smtp_password. Empty when none is configured.
util::Result<std::string> smtp_password(const Config& c);
// Whether any delivery channel (SMTP, webhook, ntfy) is configured.
bool has_channel(const Config& c);
// "a@x, b@y" -> {"a@x", "b@y"}: commas and whitespace separate, empties dropped.
std::vector<std::string> split_addresses(const std::string& list);
// An address is `local@domain` (printable ASCII, a host name as domain), or
// `Name <local@domain>`; the error names the recipient and what is wrong with it.
util::Status check_recipient(const std::string& recipient);
util::Status check_recipients(const std::vector<std::string>& to);
// The state directory after defaults: $GPUALERT_STATE_DIR, $XDG_STATE_HOME/gpualert,
// ~/.local/state/gpualert.
std::string state_dir(const Config& c);
// Where run directories go: $GPUALERT_LOG_DIR, else the file's log_dir, else ./gpualert-logs.
std::string log_dir(const Config& c);
std::string outbox_dir(const Config& c);  // <state_dir>/outbox
std::string sent_dir(const Config& c);    // <state_dir>/sent

}  // namespace config
