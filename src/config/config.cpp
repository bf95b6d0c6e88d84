#include "config/config.hpp"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <cstdlib>

#include "util/fd.hpp"
#include "util/text.hpp"

namespace config {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string home_dir() {
  std::string home = env("HOME");
  return home.empty() ? "/tmp" : home;
}

std::string where(const std::string& file, const toml::source_region& src) {
  return file + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column);
}

// Applies one key of the file to c; errors carry file:line.
util::Status apply_key(Config& c, const std::string& file, const std::string& key,
                       const toml::node& node) {
  auto bad = [&](const std::string& why) {
    return util::Status(util::Error{where(file, node.source()) + ": " + key + ": " + why});
  };
  auto str = [&](std::string& out) -> util::Status {
    if (!node.is_string()) {
      return bad("expected a string");
    }
    out = node.as_string()->get();
    return util::ok_status();
  };
  if (key == "smtp_url") return str(c.smtp_url);
  if (key == "smtp_user") return str(c.smtp_user);
  if (key == "smtp_password_file") return str(c.smtp_password_file);
  if (key == "smtp_password") return str(c.smtp_password);
  if (key == "smtp_ca_file") return str(c.smtp_ca_file);
  if (key == "from") return str(c.from);
  if (key == "webhook_url") return str(c.webhook_url);
  if (key == "ntfy_url") return str(c.ntfy_url);
  if (key == "slurm_comment") {
    if (!node.is_boolean()) {
      return bad("expected true or false");
    }
    c.slurm_comment = node.as_boolean()->get();
    return util::ok_status();
  }
  if (key == "group") return str(c.group);
  if (key == "group_size") {
    if (!node.is_integer() || node.as_integer()->get() < 1 || node.as_integer()->get() > 1000000) {
      return bad("expected a number of members, 1 to 1000000");
    }
    c.group_size = static_cast<int>(node.as_integer()->get());
    return util::ok_status();
  }
  if (key == "array") {
    std::string v;
    if (auto st = str(v); !st) {
      return st;
    }
    if (v != "each" && v != "digest") {
      return bad("expected \"each\" or \"digest\", got \"" + v + "\"");
    }
    c.array_mode = v;
    return util::ok_status();
  }
  if (key == "log_dir") return str(c.log_dir);
  if (key == "state_dir") return str(c.state_dir);
  if (key == "rules") return str(c.rules_file);
  if (key == "webhook_format" || key == "notify") {
    std::string v;
    if (auto st = str(v); !st) {
      return st;
    }
    if (key == "webhook_format" && v != "slack" && v != "json") {
      return bad("expected \"slack\" or \"json\", got \"" + v + "\"");
    }
    if (key == "notify" && v != "always" && v != "failure" && v != "failure+warnings" &&
        v != "never") {
      return bad("expected \"always\", \"failure\", \"failure+warnings\" or \"never\", got \"" + v +
                 "\"");
    }
    (key == "notify" ? c.notify_when : c.webhook_format) = v;
    return util::ok_status();
  }
  if (key == "to") {
    if (node.is_string()) {
      c.to = split_addresses(node.as_string()->get());
      auto st = check_recipients(c.to);
      return st ? st : bad(st.error());
    }
    if (!node.is_array()) {
      return bad("expected a string or an array of strings");
    }
    c.to.clear();
    for (const auto& item : *node.as_array()) {
      if (!item.is_string()) {
        return bad("expected an array of strings");
      }
      c.to.push_back(item.as_string()->get());
      if (auto st = check_recipient(c.to.back()); !st) {
        return util::Status(util::Error{where(file, item.source()) + ": to: " + st.error()});
      }
    }
    return util::ok_status();
  }
  if (key == "stall_action") {
    if (!node.is_string() ||
        (node.as_string()->get() != "notify" && node.as_string()->get() != "kill")) {
      return bad("expected \"notify\" or \"kill\"");
    }
    c.stall_action = node.as_string()->get();
    return util::ok_status();
  }
  if (key == "notify_timeout" || key == "budget" || key == "stall") {
    std::string text;
    if (node.is_integer()) {
      text = std::to_string(node.as_integer()->get());
    } else if (node.is_string()) {
      text = node.as_string()->get();
    } else {
      return bad("expected a string such as \"60s\" / \"10MiB\" or an integer");
    }
    if (key == "stall" && (text == "off" || text == "0")) {
      c.stall.reset();
      return util::ok_status();
    }
    if (key == "budget") {
      auto size = util::parse_size(text);
      if (!size) {
        return bad(size.error());
      }
      c.budget_bytes = *size;
    } else {
      auto d = util::parse_duration(text);
      if (!d) {
        return bad(d.error());
      }
      if (key == "stall") {
        c.stall = *d;
      } else {
        c.notify_timeout = *d;
      }
    }
    return util::ok_status();
  }
  if (key == "gpu_sample_seconds") {
    if (!node.is_integer() || node.as_integer()->get() < 0 || node.as_integer()->get() >= 86400) {
      return bad("expected an integer number of seconds, 0 (off) to 86399");
    }
    c.gpu_sample_seconds = static_cast<unsigned>(node.as_integer()->get());
    return util::ok_status();
  }
  return bad(
      "unknown key (known: smtp_url, smtp_user, smtp_password_file, smtp_password, "
      "smtp_ca_file, from, to, webhook_url, webhook_format, ntfy_url, notify, notify_timeout, "
      "budget, gpu_sample_seconds, stall, stall_action, log_dir, state_dir, rules, "
      "slurm_comment, group, group_size, array)");
}

util::Status read_file_config(Config& c, const std::string& path) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return util::Error{where(path, e.source()) + ": " + std::string(e.description())};
  }
  for (const auto& [key, node] : table) {
    if (auto st = apply_key(c, path, std::string(key.str()), node); !st) {
      return st;
    }
  }
  c.source = path;
  return util::ok_status();
}

util::Status apply_environment(Config& c) {
  auto set = [](const char* name, std::string& out) {
    if (std::string v = env(name); !v.empty()) {
      out = v;
    }
  };
  set("GPUALERT_SMTP_URL", c.smtp_url);
  set("GPUALERT_SMTP_USER", c.smtp_user);
  set("GPUALERT_SMTP_PASSWORD_FILE", c.smtp_password_file);
  set("GPUALERT_SMTP_CA_FILE", c.smtp_ca_file);
  set("GPUALERT_FROM", c.from);
  set("GPUALERT_WEBHOOK_URL", c.webhook_url);
  set("GPUALERT_NTFY_URL", c.ntfy_url);
  set("GPUALERT_STATE_DIR", c.state_dir);
  set("GPUALERT_LOG_DIR", c.log_dir);
  if (std::string to = env("GPUALERT_TO"); !to.empty()) {
    c.to = split_addresses(to);
    if (auto st = check_recipients(c.to); !st) {
      return util::Error{"GPUALERT_TO: " + st.error()};
    }
  }
  if (std::string f = env("GPUALERT_WEBHOOK_FORMAT"); !f.empty()) {
    if (f != "slack" && f != "json") {
      return util::Error{"GPUALERT_WEBHOOK_FORMAT: expected slack or json, got '" + f + "'"};
    }
    c.webhook_format = f;
  }
  set("GPUALERT_GROUP", c.group);
  if (std::string v = env("GPUALERT_GROUP_SIZE"); !v.empty()) {
    char* end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || n < 1 || n > 1000000) {
      return util::Error{"GPUALERT_GROUP_SIZE: expected a number of members, got '" + v + "'"};
    }
    c.group_size = static_cast<int>(n);
  }
  if (std::string v = env("GPUALERT_ARRAY"); !v.empty()) {
    if (v != "each" && v != "digest") {
      return util::Error{"GPUALERT_ARRAY: expected each or digest, got '" + v + "'"};
    }
    c.array_mode = v;
  }
  if (std::string v = env("GPUALERT_SLURM_COMMENT"); !v.empty()) {
    if (v == "0" || v == "false" || v == "no") {
      c.slurm_comment = false;
    } else if (v == "1" || v == "true" || v == "yes") {
      c.slurm_comment = true;
    } else {
      return util::Error{"GPUALERT_SLURM_COMMENT: expected 0 or 1, got '" + v + "'"};
    }
  }
  if (std::string t = env("GPUALERT_NOTIFY_TIMEOUT"); !t.empty()) {
    auto d = util::parse_duration(t);
    if (!d) {
      return util::Error{"GPUALERT_NOTIFY_TIMEOUT: " + d.error()};
    }
    c.notify_timeout = *d;
  }
  if (std::string g = env("GPUALERT_GPU_SAMPLE_SECONDS"); !g.empty()) {
    char* end = nullptr;
    unsigned long n = std::strtoul(g.c_str(), &end, 10);
    if (*end != '\0' || g[0] == '-' || n >= 86400) {
      return util::Error{"GPUALERT_GPU_SAMPLE_SECONDS: expected seconds (0 turns it off), got '" +
                         g + "'"};
    }
    c.gpu_sample_seconds = static_cast<unsigned>(n);
  }
  return util::ok_status();
}

}  // namespace

std::vector<std::string> split_addresses(const std::string& list) {
  // Commas and semicolons separate, except inside a quoted display name or <...>;
  // whitespace separates only after a whole address ("a@x b@y"), so that
  // `Alice Smith <a@x>` stays one recipient and `bad address` is reported whole.
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, angle = false;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(" \t\r\n");
    size_t e = cur.find_last_not_of(" \t\r\n");
    if (b != std::string::npos) {
      out.push_back(cur.substr(b, e - b + 1));
    }
    cur.clear();
  };
  for (char ch : list) {
    if (ch == '"' && !angle) {
      quoted = !quoted;
    } else if (ch == '<' && !quoted) {
      angle = true;
    } else if (ch == '>' && !quoted) {
      angle = false;
    }
    bool inside = quoted || angle;
    if (!inside && (ch == ',' || ch == ';')) {
      flush();
      continue;
    }
    bool space = ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
    if (!inside && space && cur.find('@') != std::string::npos &&
        (cur.find('<') == std::string::npos || cur.find('>') != std::string::npos)) {
      flush();
      continue;
    }
    cur += ch;
  }
  flush();
  return out;
}

util::Status check_recipient(const std::string& recipient) {
  auto bad = [&](const std::string& why) {
    return util::Status(util::Error{"recipient '" + util::printable_line(recipient) +
                                    "' is not an email address (" + why + ")"});
  };
  std::string addr = recipient;
  auto lt = recipient.rfind('<');
  if (lt != std::string::npos) {
    if (recipient.back() != '>') {
      return bad("text after '>'");
    }
    addr = recipient.substr(lt + 1, recipient.size() - lt - 2);
    std::string name = recipient.substr(0, lt);
    if (!util::is_valid_utf8(name) || name.find_first_of("\r\n<>") != std::string::npos) {
      return bad("the name before <...> is not one line of UTF-8 text");
    }
  }
  auto at = addr.rfind('@');
  if (at == std::string::npos || at == 0 || at + 1 == addr.size()) {
    return bad("expected name@domain");
  }
  for (unsigned char c : addr) {
    if (c <= 0x20 || c >= 0x7f) {
      return bad("only ASCII letters, digits and punctuation, no spaces");
    }
    if (std::string_view("<>()[]\\,;:\"").find(static_cast<char>(c)) != std::string_view::npos) {
      return bad(std::string("'") + static_cast<char>(c) + "' is not allowed in an address");
    }
  }
  std::string_view domain = std::string_view(addr).substr(at + 1);
  if (domain.front() == '.' || domain.back() == '.' ||
      domain.find("..") != std::string_view::npos ||
      domain.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
          std::string_view::npos) {
    return bad("the domain '" + std::string(domain) + "' is not a host name");
  }
  return util::ok_status();
}

util::Status check_recipients(const std::vector<std::string>& to) {
  for (const auto& r : to) {
    if (auto st = check_recipient(r); !st) {
      return st;
    }
  }
  return util::ok_status();
}

util::Result<Config> load_config(const std::string& file_override) {
  Config c;
  std::string path = file_override;
  bool must_exist = !path.empty();
  if (path.empty()) {
    path = env("GPUALERT_CONFIG");
    must_exist = !path.empty();
  }
  if (path.empty()) {
    std::string xdg = env("XDG_CONFIG_HOME");
    path = (xdg.empty() ? home_dir() + "/.config" : xdg) + "/gpualert/config.toml";
  }
  if (must_exist && !file_exists(path)) {
    return util::Error{"configuration file " + path + ": No such file or directory"};
  }
  if (file_exists(path)) {
    // toml++ reads a directory or /dev/zero as an empty file: an empty config that
    // the user did not mean.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return util::Error{"configuration file " + path + ": not a regular file"};
    }
    if (auto st = read_file_config(c, path); !st) {
      return util::Error{st.error()};
    }
  }
  if (auto st = apply_environment(c); !st) {
    return util::Error{st.error()};
  }
  return c;
}

util::Result<std::string> smtp_password(const Config& c) {
  if (c.smtp_password_file.empty()) {
    return c.smtp_password;
  }
  auto text = util::read_file(c.smtp_password_file);
  if (!text) {
    return util::Error{"SMTP password file: " + text.error()};
  }
  std::string pw = *text;
  if (auto nl = pw.find_first_of("\r\n"); nl != std::string::npos) {
    pw.resize(nl);  // the first line only: editors add a newline
  }
  return pw;
}

bool has_channel(const Config& c) {
  return !c.smtp_url.empty() || !c.webhook_url.empty() || !c.ntfy_url.empty();
}

std::string log_dir(const Config& c) {
  const char* e = std::getenv("GPUALERT_LOG_DIR");
  if (e != nullptr && *e != '\0') {
    return e;
  }
  return c.log_dir.empty() ? "gpualert-logs" : c.log_dir;
}

std::string state_dir(const Config& c) {
  if (!c.state_dir.empty()) {
    return c.state_dir;
  }
  if (std::string v = env("GPUALERT_STATE_DIR"); !v.empty()) {
    return v;
  }
  if (std::string xdg = env("XDG_STATE_HOME"); !xdg.empty()) {
    return xdg + "/gpualert";
  }
  return home_dir() + "/.local/state/gpualert";
}

std::string outbox_dir(const Config& c) { return state_dir(c) + "/outbox"; }
std::string sent_dir(const Config& c) { return state_dir(c) + "/sent"; }

}  // namespace config
