// The `command` operator: JSONL through an external program (see jsonl_command.h).
#include "pipeline/jsonl_command.h"

#include <deque>
#include <map>

#include "core/log.h"
#include "core/subprocess.h"
#include "pipeline/operator_util.h"

namespace trinity::pipeline {

namespace {

std::string where(const JsonlCommand& c) {
  return strcat("operator '", c.op_name, "' (", c.describe(), ")");
}

// One attempt; throws ValueError / IoError naming what went wrong.
JsonlMatches attempt(const JsonlCommand& cmd, const std::vector<json>& rows) {
  SubprocessOptions o;
  o.argv = cmd.argv;
  o.env = cmd.env;
  o.timeout_s = cmd.timeout_s;
  for (const auto& r : rows) o.stdin_data += r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::vector<std::string> out;
  std::deque<std::string> err_tail;
  o.max_line_bytes = size_t{64} << 20;
  o.on_stdout_line = [&](std::string_view l) { out.emplace_back(l); };
  o.on_stderr_line = [&](std::string_view l) {
    err_tail.emplace_back(l.substr(0, 400));
    if (err_tail.size() > 8) err_tail.pop_front();
  };
  const SubprocessResult res = run_subprocess(o);
  std::string tail;
  for (const auto& l : err_tail) tail += "\n  " + l;
  if (res.timed_out || res.exit_code != 0)
    throw IoError("pipeline", strcat(where(cmd), " ", res.describe(), tail.empty() ? "" : "; stderr:", tail));
  std::map<std::string, size_t> id_pos;
  const std::string& key = cmd.id_key;
  for (size_t i = 0; i < rows.size(); ++i) id_pos[rows[i].at(key).get<std::string>()] = i;
  JsonlMatches m;
  int with_id = -1;  // unknown until the first row
  std::vector<char> seen(rows.size(), 0);
  size_t line_no = 0;
  for (const auto& l : out) {
    ++line_no;
    if (l.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(l, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw ValueError("pipeline",
                       strcat(where(cmd), ": output line ", line_no, " is not a JSON object: ", l.substr(0, 200)));
    const bool has = j.contains(key);
    if (with_id == -1) with_id = has;
    if (has != (with_id == 1))
      throw ValueError("pipeline", strcat(where(cmd), ": output line ", line_no, " mixes rows with and without \"", key,
                                          "\"; give every row its input id or none"));
    if (has) {
      const auto it = j.at(key).is_string() ? id_pos.find(j.at(key).get<std::string>()) : id_pos.end();
      if (it == id_pos.end())
        throw ValueError("pipeline", strcat(where(cmd), ": output line ", line_no, " has ", key, " ", j.at(key).dump(),
                                            ", which was not sent"));
      if (seen[it->second]++)
        throw ValueError("pipeline",
                         strcat(where(cmd), ": output line ", line_no, " repeats ", key, " ", j.at(key).dump()));
      m.emplace_back(it->second, std::move(j));
    } else {
      m.emplace_back(m.size(), std::move(j));
    }
  }
  if (with_id != 1 && m.size() != rows.size())
    throw ValueError(
        "pipeline", strcat(where(cmd), " returned ", m.size(), " rows for ", rows.size(), " sent; rows without \"", key,
                           "\" must come back one for one (give each row its input \"", key, "\" to filter)"));
  return m;
}

// Experiences as rows: {"id": uid, "prompt", "response", "reward", "messages", "info"}. The program
// may change "reward" and "info" (merged); other new keys go into info. Text edits are ignored: the
// tokens were sampled and are kept as they are.
class CommandOperator : public ExperienceOperator {
 public:
  explicit CommandOperator(JsonlCommand c) : cmd_(std::move(c)) {}
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext&) override {
    if (exps.empty()) return {{"filtered_count", 0}, {"error_count", 0}};
    std::vector<json> rows;
    rows.reserve(exps.size());
    for (size_t i = 0; i < exps.size(); ++i) {
      const auto& e = exps[i];
      json r = {
          {"id", std::to_string(i) + ":" + e.eid.uid()}, {"prompt", e.prompt_text}, {"response", e.response_text}};
      r["reward"] = e.reward ? json(*e.reward) : json(nullptr);
      if (!e.messages.empty()) r["messages"] = json::parse(e.messages, nullptr, false);
      json info = e.info.empty() ? json::object() : json::parse(e.info, nullptr, false);
      r["info"] = info.is_discarded() ? json::object() : info;
      rows.push_back(std::move(r));
    }
    std::string error;
    auto m = run_jsonl_command(cmd_, rows, &error);
    if (!m) {
      log::warn("experience pipeline: ", error, "; the step's experiences are kept unchanged (on_error: keep)");
      return {{"filtered_count", 0}, {"error_count", 1}};
    }
    std::vector<buffer::Experience> out;
    out.reserve(m->size());
    int64_t reward_changed = 0;
    for (auto& [i, r] : *m) {
      buffer::Experience e = std::move(exps[i]);
      json info = rows[i]["info"].is_object() ? rows[i]["info"] : json::object();
      for (auto& [k, v] : r.items()) {
        if (k == "id" || k == "prompt" || k == "response" || k == "messages") continue;
        if (k == "reward") {
          if (!v.is_null() && !v.is_number())
            throw ValueError("pipeline", strcat(where(cmd_), ": row ", r["id"].dump(), " has reward ", v.dump(),
                                                ", expected a number or null"));
          std::optional<double> nr = v.is_null() ? std::nullopt : std::optional<double>(v.get<double>());
          if (nr != e.reward) ++reward_changed;
          e.reward = nr;
        } else if (k == "info" && v.is_object()) {
          for (auto& [ik, iv] : v.items()) info[ik] = iv;
        } else {
          info[k] = v;
        }
      }
      e.info = info.dump();
      out.push_back(std::move(e));
    }
    const size_t before = exps.size();
    exps = std::move(out);
    return {{"filtered_count", static_cast<double>(before - exps.size())},
            {"reward_changed_count", static_cast<double>(reward_changed)},
            {"error_count", 0}};
  }

 private:
  JsonlCommand cmd_;
};

}  // namespace

JsonlCommand JsonlCommand::from_args(const OperatorConfig& cfg, const std::vector<std::string>& extra, json* rest) {
  std::vector<std::string> allowed = {"command", "timeout", "max_retries", "on_error", "env"};
  allowed.insert(allowed.end(), extra.begin(), extra.end());
  const json a = parse_args(cfg, allowed);
  JsonlCommand c;
  c.op_name = cfg.name;
  const std::string at = strcat("operator '", cfg.name, "': ");
  if (!a.contains("command"))
    throw ConfigError("pipeline", at + "args.command is required (a list of argv strings, or one shell command line)");
  const json& cm = a.at("command");
  if (cm.is_string() && !cm.get<std::string>().empty()) {
    c.argv = {"/bin/sh", "-c", cm.get<std::string>()};
  } else if (cm.is_array() && !cm.empty()) {
    for (const auto& x : cm) {
      if (!x.is_string()) throw ConfigError("pipeline", strcat(at, "command must list strings, got ", x.dump()));
      c.argv.push_back(x.get<std::string>());
    }
  } else {
    throw ConfigError("pipeline",
                      strcat(at, "command must be a non-empty list of strings or a string, got ", cm.dump()));
  }
  c.timeout_s = number_arg(cfg, a, "timeout", 600);
  if (!(c.timeout_s > 0)) throw ConfigError("pipeline", strcat(at, "timeout must be > 0 seconds, got ", c.timeout_s));
  const double r = number_arg(cfg, a, "max_retries", 1);
  if (r < 0 || r != static_cast<double>(static_cast<int64_t>(r)))
    throw ConfigError("pipeline", strcat(at, "max_retries must be an integer >= 0, got ", r));
  c.max_retries = static_cast<int64_t>(r);
  if (a.contains("on_error")) {
    const json& oe = a.at("on_error");
    if (!oe.is_string() || (oe.get<std::string>() != "fail" && oe.get<std::string>() != "keep"))
      throw ConfigError("pipeline", strcat(at, "on_error must be 'fail' or 'keep', got ", oe.dump()));
    c.keep_on_error = oe.get<std::string>() == "keep";
  }
  if (a.contains("env")) {
    if (!a.at("env").is_object()) throw ConfigError("pipeline", strcat(at, "env must be a mapping of strings"));
    for (const auto& [k, v] : a.at("env").items()) {
      if (!v.is_string() && !v.is_number())
        throw ConfigError("pipeline", strcat(at, "env.", k, " must be a string, got ", v.dump()));
      c.env.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  if (rest) {
    *rest = json::object();
    for (const auto& k : extra)
      if (a.contains(k)) (*rest)[k] = a.at(k);
  }
  return c;
}

std::string JsonlCommand::describe() const {
  if (argv.size() == 3 && argv[0] == "/bin/sh" && argv[1] == "-c") return argv[2].substr(0, 120);
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s.substr(0, 120);
}

std::optional<JsonlMatches> run_jsonl_command(const JsonlCommand& cmd, const std::vector<json>& rows,
                                              std::string* error) {
  std::string last;
  for (int64_t k = 0; k <= cmd.max_retries; ++k) {
    try {
      return attempt(cmd, rows);
    } catch (const Error& e) {
      last = e.what();
      if (k < cmd.max_retries) log::warn(last, "; retrying (", k + 1, " of ", cmd.max_retries, ")");
    }
  }
  const std::string msg = strcat(last, cmd.max_retries ? strcat(" (after ", cmd.max_retries + 1, " attempts)") : "");
  if (!cmd.keep_on_error) throw ValueError("pipeline", msg.substr(msg.find("] ") + 2));
  if (error) *error = msg;
  return std::nullopt;
}

std::unique_ptr<ExperienceOperator> make_command_operator(const OperatorConfig& cfg) {
  return std::make_unique<CommandOperator>(JsonlCommand::from_args(cfg, {}));
}

}  // namespace trinity::pipeline
