// Flag parsing (see args.h).
#include "cli/args.h"

#include <algorithm>

#include "core/error.h"
#include "core/names.h"

namespace trinity::cli {

namespace {
std::string list(const std::vector<std::string>& spec) {
  std::string s;
  for (const auto& f : spec) {
    if (!s.empty()) s += ", ";
    s += "--" + (f.back() == '!' ? f.substr(0, f.size() - 1) : f);
  }
  return s;
}
}  // namespace

Args::Args(const std::string& command, const std::vector<std::string>& argv,
           const std::vector<std::string>& spec)
    : command_(command) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--help" || a == "-h") {
      std::string u = strcat("usage: trinity ", command_, " [flags]\n\nflags:\n");
      for (const auto& f : spec)
        u += f.back() == '!' ? strcat("  --", f.substr(0, f.size() - 1), "\n") : strcat("  --", f, " VALUE\n");
      throw HelpRequested{u};
    }
    if (a.rfind("--", 0) != 0)  // no command takes positional arguments: a stray one is a mistake
      throw ConfigError("cli",
                        strcat("trinity ", command_, ": unexpected argument '", a,
                               "' (flags start with --; repeat a flag for each value, e.g. --set a=1 --set b=2)"));
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const bool is_switch = std::find(spec.begin(), spec.end(), name + "!") != spec.end();
    const bool is_valued = std::find(spec.begin(), spec.end(), name) != spec.end();
    if (!is_switch && !is_valued) {
      std::vector<std::string> names;
      for (const auto& f : spec) names.push_back(f.back() == '!' ? f.substr(0, f.size() - 1) : f);
      const std::string near = closest_name(name, names);
      throw ConfigError("cli", strcat("trinity ", command_, ": unknown flag '--", name, "'",
                                      near.empty() ? std::string() : strcat(" (did you mean --", near, "?)"),
                                      "; valid flags: ", list(spec)));
    }
    if (is_switch) {
      values_[name] = has_value ? value : "1";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argv.size())
        throw ConfigError("cli", strcat("trinity ", command_, ": flag '--", name, "' needs a value"));
      value = argv[++i];
    }
    values_[name] = value;
    repeated_[name].push_back(value);
  }
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = repeated_.find(name);
  return it == repeated_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::str(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw ConfigError("cli", strcat("trinity ", command_, ": missing required flag '--", name, "'"));
  return it->second;
}

std::string Args::str(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

int64_t Args::i64(const std::string& name) const {
  const std::string s = str(name);
  try {
    size_t pos = 0;
    const int64_t v = std::stoll(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw ConfigError("cli", strcat("trinity ", command_, ": flag '--", name,
                                    "' expects an integer, got '", s, "'"));
  }
}

int64_t Args::i64(const std::string& name, int64_t def) const { return has(name) ? i64(name) : def; }

double Args::f64(const std::string& name, double def) const {
  if (!has(name)) return def;
  const std::string s = str(name);
  try {
    size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw ConfigError("cli", strcat("trinity ", command_, ": flag '--", name,
                                    "' expects a number, got '", s, "'"));
  }
}

}  // namespace trinity::cli
