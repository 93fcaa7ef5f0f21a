// EngineClient: workflow::ModelClient over the generation engine (see engine_client.h).
#include "explorer/engine_client.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "engine/recorded_call.h"
#include "explorer/agent_server.h"
#include "tokenizer/model_files.h"

namespace trinity::explorer {

std::shared_ptr<const tok::ChatFormatter> RolloutModel::load_chat(const std::string& dir, int64_t model_vocab,
                                                                   const std::string& custom_template,
                                                                   std::vector<int32_t>* stop_ids) {
  tok::Tokenizer t = tok::load_model_tokenizer(dir, model_vocab);
  tok::TokenizerConfig tc = tok::TokenizerConfig::load(dir);
  if (!custom_template.empty()) {
    tc.chat_templates.erase(std::remove_if(tc.chat_templates.begin(), tc.chat_templates.end(),
                                           [](const auto& p) { return p.first == "default"; }),
                            tc.chat_templates.end());
    tc.chat_templates.insert(tc.chat_templates.begin(), {"default", custom_template});
  }
  if (stop_ids) *stop_ids = tok::model_stop_ids(dir, t, tc);
  if (tc.chat_templates.empty()) {
    // No template: plain-text workflows still work; chat() reports the missing template.
    tc.chat_templates.push_back({"default", "{{ raise_exception('[explorer] " + dir +
                                                ": tokenizer_config.json has no chat_template; set "
                                                "model.custom_chat_template or use a plain-text workflow') }}"});
  }
  return std::make_shared<const tok::ChatFormatter>(std::move(t), tc);
}

void RolloutModel::set_weights(std::shared_ptr<const model::Transformer> w, int64_t version) const {
  engine->update_weights(w, version);
  std::lock_guard<std::mutex> l(mu_);
  weights_ = std::move(w);
}

std::shared_ptr<const model::Transformer> RolloutModel::weights() const {
  std::lock_guard<std::mutex> l(mu_);
  return weights_;
}

void RolloutModel::init_weights(std::shared_ptr<const model::Transformer> w) const {
  std::lock_guard<std::mutex> l(mu_);
  weights_ = std::move(w);
}

std::shared_ptr<AgentServer> RolloutModel::agent_server() const {
  std::lock_guard<std::mutex> l(mu_);
  if (!agent_) agent_ = std::make_shared<AgentServer>(engine, chat, stop_ids, "trinity");
  return agent_;
}

EngineClient::EngineClient(std::shared_ptr<const RolloutModel> model, const buffer::Task* task, std::optional<uint64_t> seed)
    : keep_(std::move(model)), m_(*keep_), task_(task), seed_(seed) {}

void EngineClient::check() const {
  if (cancelled_.load()) throw workflow::CancelledError("the attempt was cancelled (timeout or shutdown)");
}

void EngineClient::cancel() {
  cancelled_.store(true);
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& h : inflight_) h.cancel();
    keys = endpoint_keys_;
  }
  if (!keys.empty())
    if (auto s = m_.agent_server())
      for (const auto& k : keys) s->close(k);
}

std::unique_ptr<workflow::OpenAIEndpoint> EngineClient::open_openai_endpoint() {
  check();
  auto d = std::make_shared<engine::SamplingParams>(params(workflow::GenOptions{}));
  d->stop_token_ids.clear();  // the server adds the tokenizer's stop ids itself
  // The run's agent calls sample reproducibly: requests without a seed count up from this one.
  if (seed_) d->seed = *seed_ + 7919 * calls_.fetch_add(1);
  auto ep = m_.agent_server()->open(std::move(d));
  std::lock_guard<std::mutex> l(mu_);
  endpoint_keys_.push_back(ep->api_key);
  if (cancelled_.load()) throw workflow::CancelledError("the attempt was cancelled (timeout or shutdown)");
  return ep;
}

std::vector<tok::RecordedCall> EngineClient::history(bool clear) {
  return clear ? history_.take() : history_.calls();
}

engine::SamplingParams EngineClient::params(const workflow::GenOptions& o) const {
  const RolloutDefaults& d = m_.defaults;
  const buffer::RolloutArgs* ra = task_ ? &task_->rollout_args : nullptr;
  engine::SamplingParams p;
  p.temperature = o.temperature.value_or(ra && ra->temperature ? *ra->temperature : d.temperature);
  p.top_p = o.top_p.value_or(ra && ra->top_p ? *ra->top_p : d.top_p);
  p.top_k = o.top_k.value_or(ra && ra->top_k ? *ra->top_k : d.top_k);
  p.max_tokens = o.max_tokens.value_or(ra && ra->max_tokens ? *ra->max_tokens : d.max_tokens);
  p.min_tokens = o.min_tokens.value_or(d.min_tokens);
  p.min_p = o.min_p.value_or(0.0);
  p.repetition_penalty = o.repetition_penalty.value_or(d.repetition_penalty);
  p.n = o.n;
  p.stop = o.stop;
  p.stop_token_ids = m_.stop_ids;
  for (int32_t id : o.stop_token_ids) p.stop_token_ids.push_back(id);
  p.seed = o.seed;
  return p;
}

std::vector<workflow::Sample> EngineClient::generate_ids(const std::vector<int32_t>& prompt_ids,
                                                         const workflow::GenOptions& opt) {
  check();
  engine::SamplingParams p = params(opt);
  const uint64_t call = calls_.fetch_add(1);
  if (!p.seed && seed_) p.seed = *seed_ + 7919 * call;
  const double start = wall_seconds();
  Timer t;
  engine::RequestHandle h = m_.engine->submit(prompt_ids, p);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (cancelled_.load()) h.cancel();
    inflight_.push_back(h);
  }
  engine::GenerateResult r = h.wait();
  {
    std::lock_guard<std::mutex> l(mu_);
    inflight_.erase(std::remove_if(inflight_.begin(), inflight_.end(), [&](const auto& x) { return x.done(); }),
                    inflight_.end());
  }
  check();
  if (!r.error.empty()) throw ValueError("explorer", strcat("generation failed: ", r.error));
  if (m_.record_history) {
    const double seconds = t.seconds();
    for (size_t i = 0; i < r.completions.size(); ++i)
      history_.add(engine::recorded_call(r.completions[i], r.prompt_ids, strcat("call-", call), static_cast<int64_t>(i),
                                         start, seconds, "generate"));
  }
  std::vector<workflow::Sample> out;
  out.reserve(r.completions.size());
  for (auto& c : r.completions) {
    workflow::Sample s;
    s.prompt_ids = r.prompt_ids;
    s.ids = std::move(c.token_ids);
    s.logprobs = std::move(c.logprobs);
    s.text = std::move(c.text);
    s.finish_reason = std::move(c.finish_reason);
    s.model_version = c.model_version;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<workflow::Sample> EngineClient::overlong_prompt(const std::vector<int32_t>& prompt_ids,
                                                            const workflow::GenOptions& opt) {
  const int64_t keep = m_.defaults.max_prompt_tokens;
  if (!m_.defaults.prompt_truncation || keep <= 0 || static_cast<int64_t>(prompt_ids.size()) <= keep) return {};
  log::warn("explorer: a prompt of ", prompt_ids.size(), " tokens is longer than max_prompt_tokens ", keep, ": its ",
            opt.n, " experience(s) are masked out (model.enable_prompt_truncation)");
  workflow::Sample s;
  s.prompt_ids.assign(prompt_ids.begin(), prompt_ids.begin() + keep);
  s.ids = {prompt_ids[static_cast<size_t>(keep)]};
  s.logprobs = {0.0f};
  s.text = "[This experience is masked out due to overlong prompt]";
  s.finish_reason = "prompt_truncated";
  s.model_version = m_.engine->model_version();
  return std::vector<workflow::Sample>(static_cast<size_t>(std::max<int64_t>(1, opt.n)), s);
}

std::vector<workflow::Sample> EngineClient::generate(const std::string& prompt, const workflow::GenOptions& opt) {
  check();
  std::vector<int32_t> ids = m_.chat->tokenizer().encode(prompt);
  if (auto dummies = overlong_prompt(ids, opt); !dummies.empty()) return dummies;
  return generate_ids(ids, opt);
}

tok::ChatOptions EngineClient::chat_options(bool add_generation_prompt, const std::string& tools_json,
                                            std::optional<bool> enable_thinking) const {
  tok::ChatOptions o;
  o.add_generation_prompt = add_generation_prompt;
  o.enable_thinking = enable_thinking ? enable_thinking : m_.defaults.enable_thinking;
  if (!tools_json.empty()) o.tools = tok::jinja::Value::from_json(tools_json);
  return o;
}

std::vector<int32_t> EngineClient::apply_chat_template(const std::string& messages_json, bool add_generation_prompt,
                                                       const std::string& tools_json,
                                                       std::optional<bool> enable_thinking) {
  return m_.chat
      ->encode(tok::jinja::Value::from_json(messages_json), chat_options(add_generation_prompt, tools_json, enable_thinking),
               /*with_mask=*/false)
      .ids;
}

std::string EngineClient::render_chat_template(const std::string& messages_json, bool add_generation_prompt,
                                               const std::string& tools_json, std::optional<bool> enable_thinking) {
  return m_.chat->render(tok::jinja::Value::from_json(messages_json),
                         chat_options(add_generation_prompt, tools_json, enable_thinking));
}

std::vector<workflow::Sample> EngineClient::chat(const std::string& messages_json, const workflow::GenOptions& opt,
                                                 const std::string& tools_json) {
  check();
  std::vector<int32_t> ids = apply_chat_template(messages_json, true, tools_json, opt.enable_thinking);
  if (auto dummies = overlong_prompt(ids, opt); !dummies.empty()) return dummies;
  return generate_ids(ids, opt);
}

std::vector<float> EngineClient::logprobs(const std::vector<int32_t>& tokens, double temperature) {
  check();
  if (!(temperature > 0)) throw ValueError("explorer", strcat("logprobs: temperature must be > 0, got ", temperature));
  // The engine's weights now, with their packed copy (one consistent pair).
  const auto cur = m_.engine->current();
  const auto& w = cur.first;
  if (!w) throw Error("explorer", "logprobs: the rollout model has no weights");
  const int64_t L = static_cast<int64_t>(tokens.size());
  if (L < 2) return {};
  const int64_t V = w->config().vocab_size;
  for (int32_t t : tokens)
    if (t < 0 || t >= V) throw ValueError("explorer", strcat("logprobs: token id ", t, " outside the vocabulary [0, ", V, ")"));
  // A private cache for this one sequence: the forward runs on this thread, beside the engine.
  const int64_t page = 16;
  model::KvCache cache(w->config(), (L + page - 1) / page + 1, page);
  model::SeqKv seq;
  if (!model::kv_reserve(cache, seq, L)) throw Error("explorer", "logprobs: cannot reserve the KV cache");
  std::vector<int64_t> rows(static_cast<size_t>(L - 1));
  for (int64_t i = 0; i + 1 < L; ++i) rows[static_cast<size_t>(i)] = i;
  std::vector<float> logits;
  model::InferScratch scratch;
  // The master weights (the trainer's kernels), unless the model holds bf16 layer weights or LoRA
  // adapters: then the engine's packed copy of the same version, which has them widened / merged.
  const model::InferWeights* pw = nullptr;
  if (w->weight_storage() == model::WeightStorage::kBF16 || w->lora_enabled()) {
    if (!cur.second) throw Error("explorer", "logprobs: bf16-held or LoRA weights need the engine's packed copy");
    pw = cur.second.get();
  }
  w->forward_infer(tokens, {model::InferSeg{&seq, 0, L}}, cache, rows, logits, scratch, pw);
  // log_softmax(z / T)[next token], in double (the quantity the trainer computes).
  std::vector<float> out(static_cast<size_t>(L - 1));
  for (int64_t i = 0; i + 1 < L; ++i) {
    const float* z = logits.data() + i * V;
    double mx = -1e300;
    for (int64_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(z[v]) / temperature);
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) / temperature - mx);
    const double zt = static_cast<double>(z[tokens[static_cast<size_t>(i + 1)]]) / temperature;
    out[static_cast<size_t>(i)] = static_cast<float>(zt - mx - std::log(sum));
  }
  return out;
}

const tok::Tokenizer& EngineClient::tokenizer() const { return m_.chat->tokenizer(); }

std::vector<int32_t> EngineClient::eos_ids() const {
  std::vector<int32_t> ids = m_.engine->eos_ids();
  for (int32_t id : m_.stop_ids)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

int64_t EngineClient::model_version() const { return m_.engine->model_version(); }
int64_t EngineClient::max_model_len() const { return m_.engine->max_model_len(); }

ClientFactory engine_client_factory(std::shared_ptr<const RolloutModel> model,
                                    std::vector<std::shared_ptr<const RolloutModel>> auxiliary) {
  return [model, auxiliary](const buffer::Task& t, uint64_t seed) {
    auto client = std::make_shared<EngineClient>(model, &t, seed);
    std::vector<std::shared_ptr<EngineClient>> ac;
    for (size_t i = 0; i < auxiliary.size(); ++i)
      ac.push_back(std::make_shared<EngineClient>(auxiliary[i], nullptr, seed + 7 * (i + 1)));
    AttemptClient ret{client,
                      [client, ac] {
                        client->cancel();
                        for (const auto& x : ac) x->cancel();
                      },
                      {}};
    for (const auto& x : ac) ret.auxiliary.push_back(x);
    return ret;
  };
}

}  // namespace trinity::explorer
