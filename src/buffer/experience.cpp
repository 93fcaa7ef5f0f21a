// Task / Experience JSON and binary-blob round trips (see experience.h).
// Blob layout: "TXA1", then for each non-empty array: u8 field id, u8 dtype (1=i32, 2=f32, 3=u8),
// u64 LE count, raw LE payload. Unknown field ids are an error (a newer writer): never silently dropped.
#include "buffer/experience.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <unistd.h>

#include "buffer/json_util.h"
#include "core/rng.h"

namespace trinity::buffer {

using detail::json;

std::string Eid::uid() const { return strcat(batch, "/", task, "/", run, "/", step, "/", suffix); }
std::string Eid::sid() const { return strcat(batch, "/", task, "/", step); }
std::string Eid::rid() const { return strcat(batch, "/", task, "/", run); }
std::string Eid::tid() const { return strcat(batch, "/", task); }

std::string random_suffix() {
  static std::mutex mu;
  static Rng rng(static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count()) ^
                 (static_cast<uint64_t>(::getpid()) << 32));
  static pid_t owner = ::getpid();
  std::lock_guard<std::mutex> lock(mu);
  if (owner != ::getpid()) {  // forked child: do not repeat the parent's stream
    owner = ::getpid();
    rng.reseed(rng.next_u64() ^ (static_cast<uint64_t>(owner) << 32) ^
               static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count()));
  }
  static const char* kHex = "0123456789abcdef";
  uint64_t x = rng.next_u64();
  std::string s(6, '0');
  for (auto& c : s) c = kHex[x & 15], x >>= 4;
  return s;
}

ExperienceType Experience::type() const {
  if (!chosen.empty() && !rejected.empty()) return ExperienceType::kDpo;
  for (uint8_t m : action_mask)
    if (!m) return ExperienceType::kMultiTurn;
  return ExperienceType::kSingleTurn;
}

namespace {

template <typename T>
bool bits_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

bool reward_equal(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return std::memcmp(&*a, &*b, sizeof(double)) == 0;
}

const char* type_name(ExperienceType t) {
  switch (t) {
    case ExperienceType::kDpo: return "dpo";
    case ExperienceType::kMultiTurn: return "multi_turn";
    default: return "single_turn";
  }
}

TruncateStatus parse_truncate(const std::string& s, const std::string& where) {
  if (s.empty()) return TruncateStatus::kNone;
  if (s == "prompt_truncated") return TruncateStatus::kPromptTruncated;
  if (s == "response_truncated") return TruncateStatus::kResponseTruncated;
  throw ValueError("buffer", strcat(where, ": truncate_status '", s,
                                    "' is not one of prompt_truncated, response_truncated"));
}

template <typename T>
json array_to_json(const std::vector<T>& v) {
  json a = json::array();
  if constexpr (std::is_floating_point_v<T>) {
    for (T x : v) a.push_back(detail::float_to_json(x));
  } else {
    for (T x : v) a.push_back(static_cast<int64_t>(x));
  }
  return a;
}

template <typename T>
std::vector<T> array_from_json(const json& obj, const char* key, const std::string& where) {
  std::vector<T> out;
  if (!obj.contains(key) || obj.at(key).is_null()) return out;
  const json& a = obj.at(key);
  if (!a.is_array()) throw ValueError("buffer", strcat(where, ": field '", key, "' must be an array"));
  out.reserve(a.size());
  for (const auto& x : a) {
    if constexpr (std::is_floating_point_v<T>) {
      out.push_back(static_cast<T>(detail::json_to_float(x, strcat(where, ": ", key))));
    } else {
      if (!x.is_number_integer())
        throw ValueError("buffer", strcat(where, ": field '", key, "' must hold integers, got ", x.dump()));
      const int64_t v = x.get<int64_t>();
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
        throw ValueError("buffer", strcat(where, ": field '", key, "' value ", v, " is out of range"));
      out.push_back(static_cast<T>(v));
    }
  }
  return out;
}

std::string opt_str(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || o.at(key).is_null()) return "";
  return detail::get_as<std::string>(o, key, where);
}

std::string opt_json_text(const json& o, const char* key) {
  if (!o.contains(key) || o.at(key).is_null()) return "";
  return o.at(key).dump();
}

void check_schema(const json& o, const std::string& where) {
  if (!o.is_object()) throw ValueError("buffer", strcat(where, ": expected a JSON object"));
  if (o.contains("schema_version")) {
    const auto v = detail::get_as<int64_t>(o, "schema_version", where);
    if (v < 1 || v > kSchemaVersion)
      throw ValueError("buffer", strcat(where, ": schema_version ", v, " is not supported (this build reads 1..",
                                        kSchemaVersion, ")"));
  }
}

}  // namespace

bool Experience::operator==(const Experience& o) const {
  return eid == o.eid && bits_equal(tokens, o.tokens) && prompt_length == o.prompt_length &&
         bits_equal(logprobs, o.logprobs) && bits_equal(action_mask, o.action_mask) &&
         reward_equal(reward, o.reward) && bits_equal(token_rewards, o.token_rewards) &&
         bits_equal(advantages, o.advantages) && bits_equal(returns, o.returns) &&
         bits_equal(teacher_logprobs, o.teacher_logprobs) && model_version == o.model_version &&
         use_count == o.use_count && truncate_status == o.truncate_status &&
         (info == o.info || ((info.empty() || info == "{}") && (o.info.empty() || o.info == "{}"))) &&
         metrics.size() == o.metrics.size() &&
         std::equal(metrics.begin(), metrics.end(), o.metrics.begin(),
                    [](const auto& a, const auto& b) {
                      return a.first == b.first && std::memcmp(&a.second, &b.second, sizeof(double)) == 0;
                    }) &&
         prompt_text == o.prompt_text && response_text == o.response_text && messages == o.messages &&
         tools == o.tools && bits_equal(chosen, o.chosen) && bits_equal(rejected, o.rejected) &&
         chosen_messages == o.chosen_messages && rejected_messages == o.rejected_messages;
}

const char* truncate_status_name(TruncateStatus s) {
  switch (s) {
    case TruncateStatus::kPromptTruncated: return "prompt_truncated";
    case TruncateStatus::kResponseTruncated: return "response_truncated";
    default: return "";
  }
}

std::string experience_to_json(const Experience& e, bool include_arrays) {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["eid"] = {{"batch", e.eid.batch}, {"task", e.eid.task}, {"run", e.eid.run},
              {"step", e.eid.step}, {"suffix", e.eid.suffix}};
  j["type"] = type_name(e.type());
  j["prompt_length"] = e.prompt_length;
  j["response_length"] = e.response_length();
  j["reward"] = e.reward ? detail::float_to_json(*e.reward) : json(nullptr);
  j["model_version"] = e.model_version;
  j["use_count"] = e.use_count;
  j["truncate_status"] = e.truncate_status == TruncateStatus::kNone ? json(nullptr)
                                                                    : json(truncate_status_name(e.truncate_status));
  j["info"] = detail::text_to_json(e.info, json::object(), "experience.info");
  json m = json::object();
  for (const auto& [k, v] : e.metrics) m[k] = detail::float_to_json(v);
  j["metrics"] = m;
  if (!e.prompt_text.empty()) j["prompt_text"] = e.prompt_text;
  if (!e.response_text.empty()) j["response_text"] = e.response_text;
  if (!e.messages.empty()) j["messages"] = detail::parse_json(e.messages, "experience.messages");
  if (!e.tools.empty()) j["tools"] = detail::parse_json(e.tools, "experience.tools");
  if (!e.chosen_messages.empty()) j["chosen_messages"] = detail::parse_json(e.chosen_messages, "experience.chosen_messages");
  if (!e.rejected_messages.empty())
    j["rejected_messages"] = detail::parse_json(e.rejected_messages, "experience.rejected_messages");
  if (include_arrays) {
    j["tokens"] = array_to_json(e.tokens);
    j["logprobs"] = array_to_json(e.logprobs);
    j["action_mask"] = array_to_json(e.action_mask);
    if (!e.token_rewards.empty()) j["token_rewards"] = array_to_json(e.token_rewards);
    if (!e.advantages.empty()) j["advantages"] = array_to_json(e.advantages);
    if (!e.returns.empty()) j["returns"] = array_to_json(e.returns);
    if (!e.teacher_logprobs.empty()) j["teacher_logprobs"] = array_to_json(e.teacher_logprobs);
    if (!e.chosen.empty()) j["chosen"] = array_to_json(e.chosen);
    if (!e.rejected.empty()) j["rejected"] = array_to_json(e.rejected);
  }
  return j.dump();
}

Experience experience_from_json(std::string_view text, const std::string& where) {
  const json j = detail::parse_json(text, where);
  check_schema(j, where);
  Experience e;
  try {
    if (j.contains("eid")) {
      const json& id = j.at("eid");
      if (!id.is_object()) throw ValueError("buffer", strcat(where, ": field 'eid' must be an object"));
      if (id.contains("batch")) {
        const json& b = id.at("batch");
        e.eid.batch = b.is_string() ? b.get<std::string>() : b.dump();
      }
      if (id.contains("task")) e.eid.task = detail::get_as<int64_t>(id, "task", where);
      if (id.contains("run")) e.eid.run = detail::get_as<int64_t>(id, "run", where);
      if (id.contains("step")) e.eid.step = detail::get_as<int64_t>(id, "step", where);
      e.eid.suffix = opt_str(id, "suffix", where);
    }
    e.tokens = array_from_json<int32_t>(j, "tokens", where);
    if (j.contains("prompt_length")) e.prompt_length = detail::get_as<int64_t>(j, "prompt_length", where);
    e.logprobs = array_from_json<float>(j, "logprobs", where);
    e.action_mask = array_from_json<uint8_t>(j, "action_mask", where);
    if (j.contains("reward") && !j.at("reward").is_null())
      e.reward = detail::json_to_float(j.at("reward"), where + ": reward");
    e.token_rewards = array_from_json<float>(j, "token_rewards", where);
    e.advantages = array_from_json<float>(j, "advantages", where);
    e.returns = array_from_json<float>(j, "returns", where);
    e.teacher_logprobs = array_from_json<float>(j, "teacher_logprobs", where);
    if (j.contains("model_version")) e.model_version = detail::get_as<int64_t>(j, "model_version", where);
    if (j.contains("use_count")) e.use_count = detail::get_as<int64_t>(j, "use_count", where);
    e.truncate_status = parse_truncate(opt_str(j, "truncate_status", where), where);
    if (j.contains("info") && !j.at("info").is_null()) {
      if (!j.at("info").is_object()) throw ValueError("buffer", strcat(where, ": field 'info' must be an object"));
      if (!j.at("info").empty()) e.info = j.at("info").dump();
    }
    if (j.contains("metrics") && !j.at("metrics").is_null()) {
      if (!j.at("metrics").is_object())
        throw ValueError("buffer", strcat(where, ": field 'metrics' must be an object"));
      for (const auto& [k, v] : j.at("metrics").items()) e.metrics[k] = detail::json_to_float(v, where + ": metrics." + k);
    }
    e.prompt_text = opt_str(j, "prompt_text", where);
    e.response_text = opt_str(j, "response_text", where);
    e.messages = opt_json_text(j, "messages");
    e.tools = opt_json_text(j, "tools");
    e.chosen = array_from_json<int32_t>(j, "chosen", where);
    e.rejected = array_from_json<int32_t>(j, "rejected", where);
    e.chosen_messages = opt_json_text(j, "chosen_messages");
    e.rejected_messages = opt_json_text(j, "rejected_messages");
  } catch (const json::exception& ex) {
    throw ValueError("buffer", strcat(where, ": malformed experience: ", ex.what()));
  }
  // A JSONL written without arrays (meta only) has no tokens; only then may the lengths disagree.
  if (!e.tokens.empty()) {
    if (e.prompt_length < 0 || e.prompt_length > static_cast<int64_t>(e.tokens.size()))
      throw ValueError("buffer", strcat(where, ": prompt_length ", e.prompt_length, " is outside [0, ",
                                        e.tokens.size(), "]"));
  }
  return e;
}

std::string task_to_json(const Task& t) {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["raw"] = detail::parse_json(t.raw.empty() ? "{}" : t.raw, "task.raw");
  j["task_desc"] = t.task_desc;
  j["truth"] = t.truth;
  if (!t.system_prompt.empty()) j["system_prompt"] = t.system_prompt;
  if (!t.reply_prefix.empty()) j["reply_prefix"] = t.reply_prefix;
  if (!t.messages.empty()) j["messages"] = detail::parse_json(t.messages, "task.messages");
  if (!t.tools.empty()) j["tools"] = detail::parse_json(t.tools, "task.tools");
  j["workflow"] = t.workflow;
  j["reward_fn"] = t.reward_fn;
  j["workflow_args"] = detail::parse_json(t.workflow_args.empty() ? "{}" : t.workflow_args, "task.workflow_args");
  j["reward_fn_args"] = detail::parse_json(t.reward_fn_args.empty() ? "{}" : t.reward_fn_args, "task.reward_fn_args");
  json r = json::object();
  if (t.rollout_args.temperature) r["temperature"] = *t.rollout_args.temperature;
  if (t.rollout_args.top_p) r["top_p"] = *t.rollout_args.top_p;
  if (t.rollout_args.top_k) r["top_k"] = *t.rollout_args.top_k;
  if (t.rollout_args.max_tokens) r["max_tokens"] = *t.rollout_args.max_tokens;
  if (t.rollout_args.logprobs) r["logprobs"] = *t.rollout_args.logprobs;
  if (t.rollout_args.n) r["n"] = *t.rollout_args.n;
  j["rollout_args"] = r;
  j["repeat_times"] = t.repeat_times;
  j["is_eval"] = t.is_eval;
  j["index"] = {{"taskset_id", t.index.taskset_id}, {"index", t.index.row}};
  return j.dump();
}

Task task_from_json(std::string_view text, const std::string& where) {
  const json j = detail::parse_json(text, where);
  check_schema(j, where);
  Task t;
  try {
    t.raw = j.contains("raw") ? j.at("raw").dump() : "{}";
    t.task_desc = opt_str(j, "task_desc", where);
    t.truth = opt_str(j, "truth", where);
    t.system_prompt = opt_str(j, "system_prompt", where);
    t.reply_prefix = opt_str(j, "reply_prefix", where);
    t.messages = opt_json_text(j, "messages");
    t.tools = opt_json_text(j, "tools");
    t.workflow = opt_str(j, "workflow", where);
    t.reward_fn = opt_str(j, "reward_fn", where);
    t.workflow_args = j.contains("workflow_args") ? j.at("workflow_args").dump() : "{}";
    t.reward_fn_args = j.contains("reward_fn_args") ? j.at("reward_fn_args").dump() : "{}";
    if (j.contains("rollout_args")) {
      const json& r = j.at("rollout_args");
      if (r.contains("temperature")) t.rollout_args.temperature = r.at("temperature").get<double>();
      if (r.contains("top_p")) t.rollout_args.top_p = r.at("top_p").get<double>();
      if (r.contains("top_k")) t.rollout_args.top_k = r.at("top_k").get<int64_t>();
      if (r.contains("max_tokens")) t.rollout_args.max_tokens = r.at("max_tokens").get<int64_t>();
      if (r.contains("logprobs")) t.rollout_args.logprobs = r.at("logprobs").get<int64_t>();
      if (r.contains("n")) t.rollout_args.n = r.at("n").get<int64_t>();
    }
    if (j.contains("repeat_times")) t.repeat_times = detail::get_as<int64_t>(j, "repeat_times", where);
    if (j.contains("is_eval")) t.is_eval = detail::get_as<bool>(j, "is_eval", where);
    if (j.contains("index")) {
      const json& i = j.at("index");
      if (i.contains("taskset_id")) t.index.taskset_id = i.at("taskset_id").get<int64_t>();
      if (i.contains("index")) t.index.row = i.at("index").get<int64_t>();
    }
  } catch (const json::exception& ex) {
    throw ValueError("buffer", strcat(where, ": malformed task: ", ex.what()));
  }
  return t;
}

// ---- binary arrays ----

namespace {

enum Field : uint8_t {
  kTokens = 1, kLogprobs, kMask, kTokenRewards, kAdvantages, kReturns, kTeacher, kChosen, kRejected
};
enum DType : uint8_t { kI32 = 1, kF32 = 2, kU8 = 3 };

template <typename T>
void put_array(std::string& out, Field f, DType dt, const std::vector<T>& v) {
  static_assert(std::endian::native == std::endian::little, "blob format is little-endian");
  if (v.empty()) return;
  out.push_back(static_cast<char>(f));
  out.push_back(static_cast<char>(dt));
  const uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), 8);
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <typename T>
void get_array(std::string_view& in, std::vector<T>& v, DType want, DType got, uint64_t n, const std::string& where) {
  if (want != got) throw ValueError("buffer", strcat(where, ": array dtype ", int(got), " where ", int(want), " expected"));
  if (n > in.size() / sizeof(T)) throw ValueError("buffer", strcat(where, ": truncated array blob"));
  v.resize(n);
  std::memcpy(v.data(), in.data(), n * sizeof(T));
  in.remove_prefix(n * sizeof(T));
}

}  // namespace

std::string encode_arrays(const Experience& e) {
  std::string out = "TXA1";
  out.reserve(16 + e.tokens.size() * 4 + e.logprobs.size() * 4 + e.action_mask.size() + 64);
  put_array(out, kTokens, kI32, e.tokens);
  put_array(out, kLogprobs, kF32, e.logprobs);
  put_array(out, kMask, kU8, e.action_mask);
  put_array(out, kTokenRewards, kF32, e.token_rewards);
  put_array(out, kAdvantages, kF32, e.advantages);
  put_array(out, kReturns, kF32, e.returns);
  put_array(out, kTeacher, kF32, e.teacher_logprobs);
  put_array(out, kChosen, kI32, e.chosen);
  put_array(out, kRejected, kI32, e.rejected);
  return out;
}

void decode_arrays(std::string_view in, Experience& e, const std::string& where) {
  if (in.substr(0, 4) != "TXA1") throw ValueError("buffer", strcat(where, ": not an array blob (bad magic)"));
  in.remove_prefix(4);
  while (!in.empty()) {
    if (in.size() < 10) throw ValueError("buffer", strcat(where, ": truncated array header"));
    const auto f = static_cast<uint8_t>(in[0]);
    const auto dt = static_cast<DType>(static_cast<uint8_t>(in[1]));
    uint64_t n;
    std::memcpy(&n, in.data() + 2, 8);
    in.remove_prefix(10);
    switch (f) {
      case kTokens: get_array(in, e.tokens, kI32, dt, n, where); break;
      case kLogprobs: get_array(in, e.logprobs, kF32, dt, n, where); break;
      case kMask: get_array(in, e.action_mask, kU8, dt, n, where); break;
      case kTokenRewards: get_array(in, e.token_rewards, kF32, dt, n, where); break;
      case kAdvantages: get_array(in, e.advantages, kF32, dt, n, where); break;
      case kReturns: get_array(in, e.returns, kF32, dt, n, where); break;
      case kTeacher: get_array(in, e.teacher_logprobs, kF32, dt, n, where); break;
      case kChosen: get_array(in, e.chosen, kI32, dt, n, where); break;
      case kRejected: get_array(in, e.rejected, kI32, dt, n, where); break;
      default: throw ValueError("buffer", strcat(where, ": unknown array field id ", int(f), " (newer writer?)"));
    }
  }
}

}  // namespace trinity::buffer
