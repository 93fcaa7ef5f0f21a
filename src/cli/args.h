// Command-line flags for trinity subcommands: "--name value", "--name=value" and boolean
// "--flag". Each command declares its flags; unknown or missing flags are ConfigErrors that name
// the flag and list the valid ones (an unknown flag close to a valid one: "did you mean --config?").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trinity::cli {

// Thrown by Args on "--help" / "-h": main() prints `usage` on stdout and exits 0.
struct HelpRequested {
  std::string usage;
};

class Args {
 public:
  // `spec`: flag names a command accepts; names ending in '!' are boolean switches ("tie!").
  Args(const std::string& command, const std::vector<std::string>& argv,
       const std::vector<std::string>& spec);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name) const;  // required
  std::string str(const std::string& name, const std::string& def) const;
  int64_t i64(const std::string& name) const;
  int64_t i64(const std::string& name, int64_t def) const;
  double f64(const std::string& name, double def) const;
  bool flag(const std::string& name) const { return has(name); }
  const std::vector<std::string>& positional() const { return positional_; }
  // Every value of a repeatable valued flag, in order ("--set a=1 --set b=2"); str() gives the last.
  std::vector<std::string> all(const std::string& name) const;

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_;
  std::vector<std::string> positional_;
};

}  // namespace trinity::cli
