// AgentGym sessions (WooooDyy/AgentGym, agentenv-* FastAPI servers): POST /create -> an env id,
// POST /reset {<id>, <task>}, POST /step {<id>, "action"} -> {observation|state, reward, done},
// POST /close {<id>} where the server has it. Each server names its fields differently; the table
// below (read from the servers, HEAD of AgentGym) picks them by SessionOptions::agentgym_env:
//
// Sources: agentenv-<env>/agentenv_<env>/server.py + model.py (+ environment.py / env_wrapper.py).
//
//  env        id field  reset task field    create reply         reset reply             text field   /close  state
//  alfworld   id        game (+world_type)  {"id": n}            {id, observation, ..}   observation  no      /detail
//  babyai     id        data_idx            {"id": n}            {observation, reward,   observation  yes     -
//                                                                 score, done}
//  sciworld   id        data_idx            {"id": n}            {observation, .., done} observation  yes     /detail
//  textcraft  id        data_idx            {"id": n, obs..}     {id, observation, ..}   observation  yes     /detail
//  webshop    env_idx   session_id          n (bare int)         ["<text>", null]        state        no      /state
//  sqlgym     env_idx   item_id             n (bare int)         ["<text>", null]        state        no      -
//  searchqa   env_idx   id (create {"id"})  n (bare int)         "<text>"                observation  yes     -
//  webarena   env_idx   idx (+seed)         {"env_idx": n}       {observation, ..}       observation  yes     -
//             (webarena's step answers terminated / truncated instead of done)
//
// ""(guess): sends both "id" and "env_idx" (pydantic ignores unknown fields), task field data_idx,
// tries /close and ignores its failure. Replies of any of the forms above are accepted for every env;
// {"error": ..} (sent with HTTP 200 by these servers) is kServer. A reset reply without "done" means
// not done; "terminated" || "truncated" stand in for a missing "done", "score" for a missing "reward".
// A reset arg "data_idx" is renamed to the env's task field when that field is not given. LMRL-Gym
// serves /maze/... and /wordle/...: put the prefix in the URL ("http://host:port/maze").
#include <algorithm>
#include <vector>

#include "env/session_common.h"

namespace trinity::env::detail {

namespace {

struct AgentGymSpec {
  const char* name;
  std::vector<const char*> id_fields;
  const char* task_field;
  const char* create_body;     // JSON
  const char* reset_defaults;  // JSON, under the caller's args
  bool has_close;
  const char* state_path;  // "" = none
};

const std::vector<AgentGymSpec>& specs() {
  static const std::vector<AgentGymSpec> kSpecs = {
      {"", {"id", "env_idx"}, "data_idx", "{}", "{}", true, ""},
      {"alfworld", {"id"}, "game", "{}", R"({"world_type": "Text"})", false, "/detail"},
      {"babyai", {"id"}, "data_idx", "{}", "{}", true, ""},
      {"sciworld", {"id"}, "data_idx", "{}", "{}", true, "/detail"},
      {"textcraft", {"id"}, "data_idx", "{}", "{}", true, "/detail"},
      {"webshop", {"env_idx"}, "session_id", "{}", "{}", false, "/state"},
      {"sqlgym", {"env_idx"}, "item_id", "{}", "{}", false, ""},
      {"searchqa", {"env_idx"}, "id", R"({"id": 0})", "{}", true, ""},
      {"webarena", {"env_idx"}, "idx", "{}", R"({"seed": 0})", true, ""},
  };
  return kSpecs;
}

const AgentGymSpec& find_spec(const std::string& name) {
  std::string known;
  for (const auto& s : specs()) {
    if (s.name == name) return s;
    if (*s.name) known += strcat(known.empty() ? "" : ", ", s.name);
  }
  throw ConfigError("env", strcat("AgentGym environment '", name, "' is not known (expected one of ", known,
                                  ", or empty to guess the field names)"));
}

class AgentGymSession final : public Session {
 public:
  explicit AgentGymSession(const SessionOptions& opts)
      : opts_(opts), spec_(find_spec(opts.agentgym_env)), base_(http_base(opts.url, false)) {
    const std::string url = base_ + "/create";
    HttpResponse r = http_call("create", "POST", url, spec_.create_body, opts_.timeout_s, auth_headers(opts_));
    const json reply = parse_reply("create", url, r.body);
    check_error("create", url, reply);
    const json* id = &reply;
    if (reply.is_object())
      for (const char* key : {"id", "env_idx", "env_id"})
        if (reply.contains(key)) {
          id = &reply[key];
          break;
        }
    if (!id->is_number_integer())
      throw EnvError(FailReason::kProtocol, strcat("create on ", url, ": reply has no environment id (an integer, or ",
                                                   "{\"id\": n} / {\"env_idx\": n}): '", clip(r.body), "'"));
    id_ = id->get<int64_t>();
  }
  ~AgentGymSession() override { close(); }

  StepResult reset(const std::string& reset_args_json) override {
    json body = json::parse(spec_.reset_defaults);
    json args = parse_object_arg("reset args", reset_args_json);
    if (std::string(spec_.task_field) != "data_idx" && args.contains("data_idx") && !args.contains(spec_.task_field)) {
      args[spec_.task_field] = args["data_idx"];
      args.erase("data_idx");
    }
    body.update(args);
    add_id(body);
    return post("reset", "/reset", body, false);
  }

  StepResult step(const std::string& action_json) override {
    json body = parse_object_arg("action", action_json);
    add_id(body);
    return post("step", "/step", body, true);
  }

  std::string schema() override { return ""; }

  std::string state() override {
    if (!*spec_.state_path) return "";
    const std::string url = strcat(base_, spec_.state_path, "?", spec_.id_fields[0], "=", id_);
    HttpResponse r = http_call("state", "GET", url, "", opts_.timeout_s, auth_headers(opts_));
    json reply = parse_reply("state", url, r.body);
    check_error("state", url, reply);
    return reply.is_object() ? reply.dump() : json{{"state", reply}}.dump();
  }

  void close() noexcept override {
    if (closed_) return;
    closed_ = true;
    if (!spec_.has_close) return;
    try {
      json body = json::object();
      add_id(body);
      http_request("POST", base_ + "/close", body.dump(), std::min(opts_.timeout_s, 5.0), auth_headers(opts_));
    } catch (...) {
      // Best effort: the server frees the env on its own restart; close() never throws.
    }
  }

 private:
  void add_id(json& body) const {
    for (const char* f : spec_.id_fields) body[f] = id_;
  }

  // AgentGym servers report failures as {"error": "..."} with HTTP 200.
  static void check_error(const std::string& op, const std::string& url, const json& reply) {
    if (reply.is_object() && reply.contains("error")) {
      const json& e = reply["error"];
      throw EnvError(FailReason::kServer, strcat(op, " on ", url, ": the server answered an error: ",
                                                 clip(e.is_string() ? e.get<std::string>() : e.dump())));
    }
  }

  StepResult post(const std::string& op, const std::string& path, const json& body, bool need_done) {
    if (closed_) throw EnvError(FailReason::kClosed, strcat(op, " on ", base_, path, ": the session is closed"));
    const std::string url = base_ + path;
    HttpResponse r = http_call(op, "POST", url, body.dump(), opts_.timeout_s, auth_headers(opts_));
    const json reply = parse_reply(op, url, r.body);
    check_error(op, url, reply);
    StepResult out;
    json obs_obj = json::object();
    if (reply.is_string()) {  // searchqa reset
      obs_obj["observation"] = reply;
    } else if (reply.is_array() && !reply.empty() && reply[0].is_string()) {  // webshop / sqlgym reset
      obs_obj["observation"] = reply[0];
    } else if (reply.is_object()) {
      const char* text_key = reply.contains("observation") ? "observation"
                             : reply.contains("state")     ? "state"
                                                           : nullptr;
      if (text_key == nullptr)
        throw EnvError(
            FailReason::kProtocol,
            strcat(op, " on ", url, ": reply has no 'observation' (or 'state') field: '", clip(r.body), "'"));
      const json& obs = reply[text_key];
      if (obs.is_object()) {
        obs_obj = obs;
      } else {
        for (const auto& [k, v] : reply.items())
          if (k != "reward" && k != "done" && k != text_key) obs_obj[k] = v;
        obs_obj["observation"] = obs;
      }
      out.reward = reward_of(op, url, reply, reply.contains("reward") ? "reward" : "score");
      if (!reply.contains("done") && (reply.contains("terminated") || reply.contains("truncated"))) {
        for (const char* k : {"terminated", "truncated"})
          if (reply.contains(k)) out.done = done_of(op, url, json{{"done", reply[k]}}) || out.done;
      } else {
        out.done = need_done || reply.contains("done") ? done_of(op, url, reply) : false;
      }
    } else {
      throw EnvError(FailReason::kProtocol, strcat(op, " on ", url, ": reply is not an object: '", clip(r.body), "'"));
    }
    if (need_done && !reply.is_object())
      throw EnvError(FailReason::kProtocol, strcat(op, " on ", url, ": reply is not an object: '", clip(r.body), "'"));
    out.observation_text = observation_text(obs_obj);
    out.observation_json = obs_obj.dump();
    out.raw_json = r.body;
    return out;
  }

  SessionOptions opts_;
  const AgentGymSpec& spec_;
  std::string base_;
  int64_t id_ = -1;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<Session> open_agentgym(const SessionOptions& opts) {
  return std::make_unique<AgentGymSession>(opts);
}

}  // namespace trinity::env::detail
