// The `command` operator's engine: pipes rows as JSONL through an external program (Data-Juicer's
// dj-process, a user script) and reads JSONL back, for the experience pipeline (operators.h) and the
// task pipeline (task_pipeline.h). Contract with the program:
//   stdin:  one JSON object per line, each with a string "id" (unique within the call)
//   stdout: one JSON object per line; blank lines are ignored. Either every row carries an "id" of
//           the input (any order; rows left out are filtered; an id twice or an unknown id is an
//           error), or no row does and they come back one for one in input order.
//   exit status 0 within `timeout` seconds.
// Anything else is a named error (exit status and the last stderr lines, the bad line number and
// text, the counts); the call is retried `max_retries` times, then either throws (on_error: fail,
// the default: the explore step fails and nothing of it is written) or returns nullopt (on_error:
// keep: the caller keeps its rows unchanged and counts the error). Input rows are never modified.
// args: command (list of argv strings, or one string run by /bin/sh -c), timeout (600 s),
// max_retries (1), on_error (fail | keep), env ({NAME: value} added to the environment).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/operators.h"

namespace trinity::pipeline {

struct JsonlCommand {
  std::string op_name;  // for messages: "command"
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  double timeout_s = 600;
  int64_t max_retries = 1;
  bool keep_on_error = false;
  std::string id_key = "id";  // the key rows are matched on (the task pipeline's args.id_key)

  // Parses the args above plus `extra` names (returned in `rest`); ConfigError naming the bad one.
  static JsonlCommand from_args(const OperatorConfig& cfg, const std::vector<std::string>& extra,
                                nlohmann::json* rest = nullptr);
  std::string describe() const;  // the command line, for messages
};

// Output rows matched to their input: (input position, row as written by the program).
using JsonlMatches = std::vector<std::pair<size_t, nlohmann::json>>;

// Runs `cmd` on `rows` (objects, each with a unique string at cmd.id_key). nullopt = failed with keep_on_error
// (the error text goes to `error`).
std::optional<JsonlMatches> run_jsonl_command(const JsonlCommand& cmd, const std::vector<nlohmann::json>& rows,
                                              std::string* error = nullptr);

std::unique_ptr<ExperienceOperator> make_command_operator(const OperatorConfig& cfg);

}  // namespace trinity::pipeline
