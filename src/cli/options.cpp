// cli/options.cpp: getopt_long under a table of options, and the help it shows.
#include "cli/options.hpp"

#include <getopt.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/text.hpp"

namespace cli {

namespace {

// getopt_long returns this plus an option's index for a long option: above any
// character, so that it never meets a short option's letter.
constexpr int k_long_base = 256;
// The help's first column: names and values, then the help text from here on.
constexpr size_t k_column = 30;

// One line of the help: "  NAME" padded to the column, then the text; a name as
// wide as the column puts the text under it, on the next line.
void help_line(std::string& out, std::string_view name, std::string_view text) {
  std::string line = "  ";
  line += name;
  if (!text.empty()) {
    if (line.size() >= k_column) {
      line += '\n';
      line.append(k_column, ' ');
    } else {
      line.append(k_column - line.size(), ' ');
    }
    for (char c : text) {
      line += c;
      if (c == '\n') {
        line.append(k_column, ' ');
      }
    }
  } else if (line.size() < k_column) {
    line.append(k_column - line.size(), ' ');
  }
  out += line;
  out += '\n';
}

// The option's name as it was typed: the argument getopt_long just read, up to '='.
std::string_view typed_long_name(int argc, char** argv, const char* value) {
  if (optind < 1 || optind > argc) {
    return {};
  }
  const char* token = argv[optind - 1];
  if (value != nullptr && value == token && optind >= 2) {  // "--name VALUE"
    token = argv[optind - 2];
  }
  std::string_view t = token;
  if (t.substr(0, 2) != "--") {
    return {};
  }
  t.remove_prefix(2);
  return t.substr(0, t.find('='));
}

}  // namespace

std::string check_duration(const std::string& value) {
  auto r = util::parse_duration(value);
  return r ? std::string() : r.error();
}

std::string check_size(const std::string& value) {
  auto r = util::parse_size(value);
  return r ? std::string() : r.error();
}

Option& Options::add(const char* names, Option::Kind kind, const char* help) {
  Option& o = options_.emplace_back();
  o.kind_ = kind;
  o.help_ = help;
  std::string_view n = names;
  while (!n.empty()) {
    size_t comma = n.find(',');
    std::string_view name = n.substr(0, comma);
    n = comma == std::string_view::npos ? std::string_view() : n.substr(comma + 1);
    if (name.substr(0, 2) == "--") {
      o.long_name_ = name.substr(2);
    } else if (name.size() == 2 && name[0] == '-') {
      o.short_name_ = name[1];
    }
  }
  return o;
}

Option& Options::add_positional(const char* name, Option::Kind kind, const char* help) {
  Option& o = options_.emplace_back();
  o.kind_ = kind;
  o.help_ = help;
  o.long_name_ = name;
  o.positional_ = true;
  positionals_.push_back(&o);
  return o;
}

Option& Options::flag(const char* names, bool& out, const char* help) {
  Option& o = add(names, Option::Kind::flag, help);
  o.flag_ = &out;
  return o;
}

Option& Options::value(const char* names, std::string& out, const char* help) {
  Option& o = add(names, Option::Kind::text, help);
  o.text_ = &out;
  return o;
}

Option& Options::value(const char* names, int& out, const char* help) {
  Option& o = add(names, Option::Kind::integer, help);
  o.int_ = &out;
  return o.range(INT32_MIN, INT32_MAX);
}

Option& Options::value(const char* names, int64_t& out, const char* help) {
  Option& o = add(names, Option::Kind::integer, help);
  o.int64_ = &out;
  return o;
}

Option& Options::values(const char* names, std::vector<std::string>& out, const char* help) {
  Option& o = add(names, Option::Kind::texts, help);
  o.texts_ = &out;
  return o;
}

Option& Options::positional(const char* name, std::string& out, const char* help) {
  Option& o = add_positional(name, Option::Kind::text, help);
  o.text_ = &out;
  return o;
}

Option& Options::positionals(const char* name, std::vector<std::string>& out, const char* help) {
  Option& o = add_positional(name, Option::Kind::texts, help);
  o.texts_ = &out;
  return o;
}

void Options::subcommand(const char* name, const char* summary) {
  subcommands_.emplace_back(name, summary);
}

std::string Options::option_label(const Option& o) const {
  if (o.positional_) {
    return o.long_name_;
  }
  std::string label;
  if (o.short_name_ != 0) {
    label += '-';
    label += o.short_name_;
    label += ',';
  }
  label += "--";
  label += o.long_name_;
  return label;
}

std::string Options::error_label(const Option& o) const {
  if (o.positional_ || o.long_name_.empty()) {
    return o.positional_ ? o.long_name_ : std::string{'-', o.short_name_};
  }
  return "--" + o.long_name_;
}

bool Options::take(Option& o, const char* value, std::string& error) {
  std::string label = error_label(o);
  ++o.count_;
  if (o.kind_ == Option::Kind::flag) {
    *o.flag_ = true;
    return true;
  }
  if (o.kind_ != Option::Kind::texts && o.count_ > 1) {
    error = label + ": given more than once";
    return false;
  }
  std::string v = value;
  if (!o.choices_.empty()) {
    bool allowed = false;
    std::string names;
    for (auto c : o.choices_) {
      allowed |= c == v;
      names += (names.empty() ? "" : ", ");
      names += c;
    }
    if (!allowed) {
      error = label + ": '" + v + "' is not one of " + names;
      return false;
    }
  }
  if (o.validator_ != nullptr) {
    if (std::string why = o.validator_(v); !why.empty()) {
      error = label + ": " + why;
      return false;
    }
  }
  switch (o.kind_) {
    case Option::Kind::flag:
      break;
    case Option::Kind::text:
      *o.text_ = std::move(v);
      break;
    case Option::Kind::texts:
      o.texts_->push_back(std::move(v));
      break;
    case Option::Kind::integer: {
      errno = 0;
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || errno == ERANGE) {
        error = label + ": '" + v + "' is not a whole number";
        return false;
      }
      if (n < o.min_ || n > o.max_) {
        error = label + ": " + v;
        if (o.max_ == INT64_MAX) {
          error += " is less than " + std::to_string(o.min_);
        } else if (o.min_ == INT64_MIN) {
          error += " is more than " + std::to_string(o.max_);
        } else {
          error +=
              " is not in the range " + std::to_string(o.min_) + " to " + std::to_string(o.max_);
        }
        return false;
      }
      if (o.int_ != nullptr) {
        *o.int_ = static_cast<int>(n);
      } else {
        *o.int64_ = n;
      }
      break;
    }
  }
  return true;
}

std::optional<int> Options::parse(int argc, char** argv, const char* name, const char* usage_hint) {
  auto usage_error = [&](const std::string& message) {
    std::fprintf(stderr, "gpualert: error: %s: %s\n", name, message.c_str());
    if (usage_hint != nullptr) {
      std::fprintf(stderr, "%s\n", usage_hint);
    }
    return 2;
  };
  // "+": options end at the first other argument; "-": the others come back in order
  // (as option 1), options may follow them; neither heeds POSIXLY_CORRECT. ":": a
  // missing value is told apart from an unknown option, and getopt prints nothing.
  std::string shortopts = stop_at_first_argument_ ? "+:h" : "-:h";
  std::vector<struct option> longopts;
  longopts.reserve(options_.size() + 2);
  longopts.push_back({"help", no_argument, nullptr, 'h'});
  for (size_t i = 0; i < options_.size(); ++i) {
    const Option& o = options_[i];
    if (o.positional_) {
      continue;
    }
    int has_arg = o.kind_ == Option::Kind::flag ? no_argument : required_argument;
    if (!o.long_name_.empty()) {
      longopts.push_back(
          {o.long_name_.c_str(), has_arg, nullptr, k_long_base + static_cast<int>(i)});
    }
    if (o.short_name_ != 0) {
      shortopts += o.short_name_;
      if (has_arg == required_argument) {
        shortopts += ':';
      }
    }
  }
  longopts.push_back({nullptr, 0, nullptr, 0});

  size_t next_positional = 0;
  std::string error;
  auto take_positional = [&](const char* arg) {
    if (next_positional >= positionals_.size()) {
      error = std::string("unexpected argument '") + arg + "'";
      return false;
    }
    Option& p = *positionals_[next_positional];
    if (p.kind_ != Option::Kind::texts) {
      ++next_positional;
    }
    return take(p, arg, error);
  };

  opterr = 0;
  optind = 0;  // 0, not 1: glibc then starts afresh (a command may parse twice)
  for (;;) {
    int index = -1;
    int c = getopt_long(argc, argv, shortopts.c_str(), longopts.data(), &index);
    if (c == -1) {
      break;
    }
    if (c == 1) {  // an argument among the options
      if (!take_positional(optarg)) {
        return usage_error(error);
      }
      continue;
    }
    if (c == 'h') {
      if (std::string_view typed = typed_long_name(argc, argv, nullptr);
          !typed.empty() && typed != "help") {
        return usage_error("unknown option --" + std::string(typed));
      }
      std::string text = help();
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    }
    if (c == '?' || c == ':') {
      if (optopt >= k_long_base) {
        const Option& o = options_[static_cast<size_t>(optopt - k_long_base)];
        return usage_error(error_label(o) + (c == ':' ? ": needs a value" : ": takes no value"));
      }
      if (optopt == 'h') {  // "--help=..."
        return usage_error("--help: takes no value");
      }
      if (optopt != 0) {
        std::string label = std::string("-") + static_cast<char>(optopt);
        for (const auto& o : options_) {
          if (!o.positional_ && o.short_name_ == optopt) {
            label = error_label(o);
          }
        }
        return usage_error(c == ':' ? label + ": needs a value" : "unknown option " + label);
      }
      std::string_view token = argv[optind - 1];
      return usage_error("unknown option " + std::string(token.substr(0, token.find('='))));
    }
    Option* o = nullptr;
    if (c >= k_long_base) {
      o = &options_[static_cast<size_t>(c - k_long_base)];
      // getopt_long takes any unambiguous prefix of a name; we take names whole.
      std::string_view typed = typed_long_name(argc, argv, optarg);
      if (!typed.empty() && typed != o->long_name_) {
        return usage_error("unknown option --" + std::string(typed));
      }
      if (optarg != nullptr && *optarg == '\0' && optarg != argv[optind - 1]) {  // "--name="
        return usage_error(error_label(*o) + ": needs a value");
      }
    } else {
      for (auto& candidate : options_) {
        if (!candidate.positional_ && candidate.short_name_ == c) {
          o = &candidate;
          break;
        }
      }
    }
    if (o == nullptr) {
      return usage_error(std::string("unknown option -") + static_cast<char>(c));
    }
    if (!take(*o, optarg, error)) {
      return usage_error(error);
    }
  }
  rest_ = optind;
  if (!stop_at_first_argument_) {
    for (int i = optind; i < argc; ++i) {  // after "--": arguments, even those with a '-'
      if (!take_positional(argv[i])) {
        return usage_error(error);
      }
    }
    rest_ = argc;
  }
  for (const Option* p : positionals_) {
    if (p->required_ && p->count_ == 0) {
      return usage_error(p->long_name_ + " is required");
    }
  }
  return std::nullopt;
}

std::string Options::help() const {
  std::string out;
  if (!description_.empty()) {
    out += description_;
    out += '\n';
  }
  out += "Usage: ";
  if (!usage_.empty()) {
    out += usage_;
  } else {
    out += program_;
    out += " [OPTIONS]";
    for (const Option* p : positionals_) {
      if (p->hidden_) {
        continue;
      }
      std::string n = p->long_name_;
      if (p->kind_ == Option::Kind::texts) {
        n += "...";
      }
      out += p->required_ ? " " + n : " [" + n + "]";
    }
    if (!subcommands_.empty()) {
      out += " SUBCOMMAND";
    }
  }
  out += '\n';

  auto value_text = [](const Option& o) {
    std::string v;
    if (o.kind_ == Option::Kind::flag) {
      return v;
    }
    if (o.value_name_ != nullptr) {
      v = o.value_name_;
    } else if (o.validator_name_ != nullptr) {
      v = o.validator_name_;
    } else if (!o.choices_.empty()) {
      for (auto c : o.choices_) {
        v += (v.empty() ? "" : "|");
        v += c;
      }
    } else {
      for (char c : o.long_name_) {
        v += c == '-' ? '_' : static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
      }
    }
    if (o.kind_ == Option::Kind::texts) {
      v += " ...";
    }
    return v;
  };

  bool any_positional = false;
  for (const Option* p : positionals_) {
    if (!p->hidden_) {
      if (!any_positional) {
        out += "\nPositionals:\n";
        any_positional = true;
      }
      help_line(out, p->kind_ == Option::Kind::texts ? p->long_name_ + " ..." : p->long_name_,
                p->help_);
    }
  }
  out += "\nOptions:\n";
  help_line(out, "-h,--help", "Print this help message and exit");
  for (const auto& o : options_) {
    if (o.positional_ || o.hidden_) {
      continue;
    }
    std::string label = option_label(o);
    if (std::string v = value_text(o); !v.empty()) {
      label += " " + v;
    }
    help_line(out, label, o.help_);
  }
  if (!subcommands_.empty()) {
    out += "\nSubcommands:\n";
    for (const auto& [sub, summary] : subcommands_) {
      help_line(out, sub, summary);
    }
  }
  out += '\n';
  if (!footer_.empty()) {
    out += footer_;
    out += '\n';
  }
  return out;
}

}  // namespace cli
