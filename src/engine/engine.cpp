// Generation engine: scheduler loop, admission with KV page commitments, batched prefill + decode,
// stop conditions, streaming, weight swaps (see engine.h). The loop runs named stages per step:
// swap_weights -> expire -> admit -> plan -> forward -> complete_prefills -> sample -> retire -> record.
#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <optional>
#include <random>
#include <stdexcept>

#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "engine/schedule.h"
#include "model/infer_weights.h"
#include "model/prefix_cache.h"
#include "tokenizer/tokenizer.h"

namespace trinity::engine {

using Clock = std::chrono::steady_clock;

namespace {

struct Sample {
  int64_t index = 0;
  model::SeqKv kv;
  Completion out;
  Rng rng;
  std::unique_ptr<tok::StreamDecoder> dec;
  std::unique_ptr<Constraint> con;  // per-sample constraint state (SamplingParams::constraint)
  std::string text;      // everything decoded so far
  size_t emitted = 0;    // bytes of `text` already streamed
  bool done = false;
};

// Largest prefix length of s that ends on a UTF-8 character boundary.
size_t utf8_floor(const std::string& s, size_t n) {
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

class Request {
 public:
  // Shared with the handle.
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  GenerateResult result;
  std::atomic<bool> cancelled{false};

  // Owned by the scheduler thread.
  std::vector<int32_t> prompt;
  SamplingParams p;
  StreamCallback cb;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point submitted = Clock::now();
  int64_t max_new = 0;
  model::SeqKv prompt_kv;
  std::vector<Sample> samples;
  bool prefilled = false;
  int64_t prefill_done = 0;  // prompt tokens already in prompt_kv (chunked prefill)
  bool in_running = false;
  int64_t committed = 0;
};

GenerateResult RequestHandle::wait() {
  std::unique_lock<std::mutex> l(r_->mu);
  r_->cv.wait(l, [&] { return r_->finished; });
  return r_->result;
}

bool RequestHandle::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(r_->mu);
  return r_->cv.wait_for(l, timeout, [&] { return r_->finished; });
}

void RequestHandle::cancel() { r_->cancelled = true; }

bool RequestHandle::done() const {
  std::lock_guard<std::mutex> l(r_->mu);
  return r_->finished;
}

struct Engine::Impl {
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Request>> waiting;
  bool stop = false;
  // Pending weight swap.
  std::shared_ptr<const model::Transformer> next_model;
  std::shared_ptr<const model::InferWeights> next_packed;
  int64_t next_version = 0;
  bool swap_pending = false;
  bool drained = false;     // the scheduler runs nothing, admits nothing and dropped its packed copy
  bool next_ready = false;  // next_model / next_packed are set
  std::mutex update_mu;     // one update_weights at a time
  // The role of the thread that built the engine (the explorer's in `both` mode): the scheduler
  // thread runs its kernels under that role's core budget (core/parallel.h).
  Role role = thread_role();
  std::condition_variable swap_cv;

  // Scheduler-owned.
  std::shared_ptr<const model::Transformer> model;
  std::shared_ptr<const model::InferWeights> packed;  // null for WeightFormat::kF32
  // An unmerged-LoRA packed copy kept through a swap (under mu): the next pack reuses its base.
  std::shared_ptr<const model::InferWeights> reuse;
  std::atomic<int64_t> version{0};
  std::shared_ptr<const tok::Tokenizer> tok;
  EngineOptions opts;
  std::unique_ptr<model::KvCache> cache;
  std::unique_ptr<model::PrefixCache> prefix;  // null when EngineOptions::prefix_cache is off
  model::InferScratch scratch;
  std::vector<std::shared_ptr<Request>> running;
  // Admitted, prompt not yet fully in the KV cache; prefilled in order, max_prefill_tokens per step.
  std::vector<std::shared_ptr<Request>> prefilling;
  int64_t committed = 0;
  std::vector<float> logits;
  uint64_t seed_counter = 0;
  EngineStats st;
  std::vector<int32_t> eos;
  int64_t vocab = 0;

  // One step's rows: prefill chunks (admission order), then one decode row per live sample.
  struct Target {
    Request* r;
    int64_t sample;  // -1: the last row of a prompt (its n samples draw from it)
  };
  struct StepPlan {
    std::vector<int32_t> tokens;
    std::vector<model::InferSeg> segs;
    std::vector<int64_t> logit_rows;
    std::vector<Target> targets;  // one per logit row
    std::vector<int64_t> chunks;  // prompt tokens of prefilling[i] in this step
    int64_t prefill_tokens = 0;
  };
  struct SampleJob {
    Request* r;
    Sample* s;
    const float* row;  // [V] logits
    TokenChoice c;
    std::string err;
  };

  // The stages of a step (Engine::loop runs them in this order).
  bool swap_weights();               // installs pending weights; true: admission waits (kFinish, requests running)
  void expire();                     // cancellations and deadlines of admitted requests
  void admit();                      // waiting -> prefilling while the KV, prefill and running budgets allow
  StepPlan plan();                   // prefill chunks and decode rows (reserves each decode row's KV slot)
  bool forward(const StepPlan& sp);  // logits of the step's rows; false: the step failed (all failed)
  std::vector<std::shared_ptr<Request>> complete_prefills(const StepPlan& sp);          // prompts now complete
  int64_t sample(const StepPlan& sp, std::vector<std::shared_ptr<Request>>& admitted);  // tokens accepted
  void retire(std::vector<std::shared_ptr<Request>>& admitted);  // admitted -> running; finished out
  void record(int64_t prompt_tokens, int64_t generated);         // stats
  void shutdown();
  // Helpers of the stages.
  bool reserve(model::SeqKv& kv, int64_t n_new);  // kv_reserve, evicting cache-only pages first
  void update_kv_stats();                         // under mu
  void start_samples(Request& r);
  void draw(SampleJob& jb) const;
  void accept(Request& r, Sample& s, const TokenChoice& c);
  void finish_sample(Request& r, Sample& s, const std::string& reason);
  void finish_request(const std::shared_ptr<Request>& r, const std::string& reason, const std::string& error = "");
  void fail_all(const std::string& reason, const std::string& error, std::vector<std::shared_ptr<Request>>* admitted);
};

namespace {

std::shared_ptr<const model::InferWeights> pack_for(const model::Transformer& m, const EngineOptions& o,
                                                    const model::InferWeights* reuse = nullptr) {
  if (o.weight_format == WeightFormat::kF32 || m.head() != model::HeadKind::kLm) return nullptr;
  return model::pack_infer_weights(
      m, o.weight_format == WeightFormat::kBF16 ? tensor::PackDType::kBF16 : tensor::PackDType::kF32, o.lora_packing,
      reuse);
}

}  // namespace

Engine::Engine(std::shared_ptr<const model::Transformer> model, int64_t version,
               std::shared_ptr<const tok::Tokenizer> tokenizer, EngineOptions opts)
    : cfg_(model->config()), impl_(std::make_unique<Impl>()) {
  if (model->head() != model::HeadKind::kLm)
    throw ValueError("engine", "generation needs a model with the LM head");
  if (opts.max_prefill_tokens < 1)
    throw ValueError("engine", strcat("max_prefill_tokens: expected >= 1, got ", opts.max_prefill_tokens));
  max_len_ = opts.max_model_len > 0 ? opts.max_model_len : cfg_.max_position_embeddings;
  for (int64_t id : cfg_.eos_token_ids) eos_.push_back(static_cast<int32_t>(id));
  auto& im = *impl_;
  im.packed = pack_for(*model, opts);
  im.model = std::move(model);
  im.version = version;
  im.tok = std::move(tokenizer);
  im.opts = opts;
  im.eos = eos_;
  im.vocab = cfg_.vocab_size;
  const int64_t pages = model::KvCache::pages_for_bytes(cfg_, opts.kv_cache_bytes, opts.page_size);
  try {
    im.cache = std::make_unique<model::KvCache>(cfg_, pages, opts.page_size);
  } catch (const ValueError& e) {  // too large for this machine: say which budget sized it
    const std::string msg = e.what();
    throw ValueError("engine", strcat(msg.substr(msg.find("] ") + 2), "; the KV cache budget is ", opts.kv_cache_bytes,
                                      " bytes (explorer.rollout_model.kv_cache_bytes, --kv-cache-mb for serve)"));
  }
  if (opts.prefix_cache) im.prefix = std::make_unique<model::PrefixCache>(*im.cache);
  im.update_kv_stats();  // /health is true before the first step
  im.seed_counter = std::random_device{}();
  log::info("engine: ", pages, " KV pages of ", opts.page_size, " tokens (",
            im.cache->bytes() >> 20, " MiB, ", pages * opts.page_size, " tokens), max_model_len ", max_len_);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (thread_.joinable()) thread_.join();
  impl_->prefix.reset();  // releases its pages before the KV cache goes
}

RequestHandle Engine::submit(std::vector<int32_t> prompt, SamplingParams params,
                             StreamCallback on_event, std::chrono::milliseconds deadline) {
  params.validate();
  if (prompt.empty()) throw ValueError("engine", "prompt: must contain at least one token");
  for (int32_t t : prompt)
    if (t < 0 || t >= cfg_.vocab_size)
      throw ValueError("engine", strcat("prompt: token id ", t, " is out of range [0, ", cfg_.vocab_size, ")"));
  if (static_cast<int64_t>(prompt.size()) >= max_len_)
    throw ValueError("engine", strcat("prompt: ", prompt.size(), " tokens leave no room to generate within max_model_len ", max_len_));
  if (!params.stop.empty() && !impl_->tok)
    throw ValueError("engine", "stop: stop strings need a tokenizer; use stop_token_ids");
  auto r = std::make_shared<Request>();
  r->prompt = std::move(prompt);
  r->p = std::move(params);
  r->cb = std::move(on_event);
  if (deadline.count() > 0) r->deadline = Clock::now() + deadline;
  r->max_new = std::min<int64_t>(r->p.max_tokens, max_len_ - static_cast<int64_t>(r->prompt.size()));
  r->result.prompt_ids = r->prompt;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    if (impl_->stop) throw ValueError("engine", "the engine is shutting down");
    impl_->waiting.push_back(r);
  }
  impl_->cv.notify_all();
  return RequestHandle(r);
}

GenerateResult Engine::generate(std::vector<int32_t> prompt, const SamplingParams& params) {
  return submit(std::move(prompt), params).wait();
}

void Engine::update_weights(std::shared_ptr<const model::Transformer> model, int64_t version) {
  const auto& c = model->config();
  if (c.hidden_size != cfg_.hidden_size || c.num_hidden_layers != cfg_.num_hidden_layers ||
      c.vocab_size != cfg_.vocab_size || c.num_key_value_heads != cfg_.num_key_value_heads ||
      c.head_dim != cfg_.head_dim)
    throw ValueError("engine", "update_weights: the new model's architecture differs from the engine's");
  // Phase 1: the scheduler finishes what runs (per the swap policy), admits nothing and drops its
  // packed copy. Phase 2: this thread packs the new weights and the scheduler installs them. So one
  // packed copy is in memory at a time (a 1.5B model's fp32 copy is 6 GB), at the price of
  // admissions waiting while the new copy is packed.
  auto& im = *impl_;
  std::lock_guard<std::mutex> one(im.update_mu);
  std::unique_lock<std::mutex> l(im.mu);
  im.swap_pending = true;
  im.drained = im.next_ready = false;
  im.cv.notify_all();
  im.swap_cv.wait(l, [&] { return im.drained || im.stop; });
  if (im.stop) return;
  // The old copy's packed base when the new model has the same frozen one (unmerged LoRA); dropped
  // before packing otherwise, so one packed copy is in memory at a time.
  std::shared_ptr<const model::InferWeights> reuse = std::move(im.reuse);
  if (reuse && (!model->frozen_base_id() || reuse->base_id != model->frozen_base_id())) reuse.reset();
  l.unlock();
  std::shared_ptr<const model::InferWeights> packed;
  try {
    const RoleBusy busy(thread_role());  // the caller's kernels: the other role runs on its share meanwhile
    packed = pack_for(*model, im.opts, reuse.get());  // in the caller's thread
    reuse.reset();
  } catch (...) {
    l.lock();  // the engine goes on with its weights (unpacked unless kept for reuse): say so loudly, but do not hang
               // it
    if (reuse && !im.packed) im.packed = std::move(reuse);
    im.swap_pending = im.drained = false;
    im.cv.notify_all();
    throw;
  }
  l.lock();
  im.next_packed = std::move(packed);
  im.next_model = std::move(model);
  im.next_version = version;
  im.next_ready = true;
  im.cv.notify_all();
  im.swap_cv.wait(l, [&] { return !im.swap_pending || im.stop; });
}

int64_t Engine::model_version() const { return impl_->version.load(); }

std::pair<std::shared_ptr<const model::Transformer>, std::shared_ptr<const model::InferWeights>> Engine::current()
    const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return {impl_->model, impl_->packed};
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  EngineStats s = impl_->st;
  s.waiting = static_cast<int64_t>(impl_->waiting.size());
  return s;
}

namespace {

void emit(Request& r, Sample& s, int32_t token, float logprob, bool finished) {
  if (!r.cb) return;
  StreamEvent e;
  e.index = s.index;
  e.token = token;
  e.logprob = logprob;
  if (token >= 0 && r.p.top_logprobs > 0 && !s.out.top_logprobs.empty()) e.top = s.out.top_logprobs.back();
  // Hold back a tail that could still become a stop string.
  size_t max_stop = 0;
  for (const auto& st : r.p.stop) max_stop = std::max(max_stop, st.size());
  size_t safe = s.out.text.size();
  if (!finished && max_stop > 1 && safe >= max_stop - 1) safe -= max_stop - 1;
  else if (!finished && max_stop > 1) safe = 0;
  safe = utf8_floor(s.out.text, std::max(safe, s.emitted));
  if (safe > s.emitted) {
    e.text_delta = s.out.text.substr(s.emitted, safe - s.emitted);
    s.emitted = safe;
  }
  e.finished = finished;
  e.finish_reason = finished ? s.out.finish_reason : "";
  r.cb(e);
}

}  // namespace

// ---- The scheduler's stages, in the order one step runs them (Engine::loop). ----

void Engine::Impl::finish_sample(Request& r, Sample& s, const std::string& reason) {
  if (s.done) return;
  s.done = true;
  s.out.finish_reason = reason;
  if (s.dec) {
    s.text += s.dec->finish();
    s.out.text = s.text;
  }
  model::kv_free(*cache, s.kv);
  emit(r, s, -1, 0.0f, true);
}

void Engine::Impl::finish_request(const std::shared_ptr<Request>& r, const std::string& reason,
                                  const std::string& error) {
  if (r->prompt_kv.pages.size()) model::kv_free(*cache, r->prompt_kv);
  if (r->samples.empty()) {  // never prefilled: report n empty completions
    for (int64_t i = 0; i < r->p.n; ++i) {
      Completion c;
      c.finish_reason = reason;
      c.model_version = version;
      r->result.completions.push_back(c);
    }
  } else {
    for (auto& s : r->samples) {
      finish_sample(*r, s, reason);
      r->result.completions.push_back(std::move(s.out));
    }
  }
  r->result.error = error;
  committed -= r->committed;
  r->committed = 0;
  {  // stats first, so a caller woken by this request sees them
    std::lock_guard<std::mutex> l(mu);
    ++st.finished;
    if (r->in_running) --st.running;
    r->in_running = false;
    update_kv_stats();
  }
  {
    std::lock_guard<std::mutex> l(r->mu);
    r->finished = true;
  }
  r->cv.notify_all();
}

void Engine::Impl::fail_all(const std::string& reason, const std::string& error,
                            std::vector<std::shared_ptr<Request>>* admitted) {
  if (admitted) {
    for (auto& r : *admitted) finish_request(r, reason, error);
    admitted->clear();
  }
  for (auto& r : running) finish_request(r, reason, error);
  running.clear();
  for (auto& r : prefilling) finish_request(r, reason, error);
  prefilling.clear();
}

bool Engine::Impl::swap_weights() {
  std::unique_lock<std::mutex> l(mu);
  if (!swap_pending) return false;
  if (!drained) {
    if (opts.swap_policy == SwapPolicy::kAbort) {
      l.unlock();
      fail_all("abort", "", nullptr);
      l.lock();
    }
    if (!running.empty() || !prefilling.empty()) return true;  // kFinish: wait for them, admit nothing
    // Freed before the new copy is packed (update_weights), unless its base can be reused.
    if (packed && packed->lora_unmerged()) reuse = std::move(packed);
    packed.reset();
    drained = true;
    swap_cv.notify_all();
    return true;
  }
  if (!next_ready) return true;
  model = std::move(next_model);
  packed = std::move(next_packed);
  version = next_version;
  st.model_version = next_version;
  if (prefix) prefix->clear();  // cached KV was computed by the old weights
  update_kv_stats();
  swap_pending = drained = next_ready = false;
  swap_cv.notify_all();
  return false;
}

void Engine::Impl::expire() {
  const auto now = Clock::now();
  for (auto* list : {&running, &prefilling})
    for (auto it = list->begin(); it != list->end();) {
      auto& r = *it;
      if (r->cancelled || now > r->deadline) {
        finish_request(r, r->cancelled ? "cancelled" : "timeout");
        it = list->erase(it);
      } else {
        ++it;
      }
    }
}

void Engine::Impl::admit() {
  const int64_t ps = opts.page_size;
  AdmissionState as;
  as.total_pages = cache->num_pages();
  as.max_prefill_tokens = opts.max_prefill_tokens;
  as.max_running = opts.max_running;
  for (auto& r : running) as.running_samples += r->p.n;
  for (auto& r : prefilling) {
    as.running_samples += r->p.n;
    as.pending_prefill += static_cast<int64_t>(r->prompt.size()) - r->prefill_done;
  }
  for (;;) {
    std::shared_ptr<Request> r;
    {
      std::lock_guard<std::mutex> l(mu);
      if (waiting.empty()) break;
      r = waiting.front();
    }
    auto pop = [&] {
      std::lock_guard<std::mutex> l(mu);
      waiting.pop_front();
    };
    if (r->cancelled || Clock::now() > r->deadline) {
      pop();
      finish_request(r, r->cancelled ? "cancelled" : "timeout");
      continue;
    }
    const int64_t plen = static_cast<int64_t>(r->prompt.size());
    const int64_t need = pages_needed(plen, r->p.n, r->max_new, ps);
    as.committed_pages = committed;
    as.idle = running.empty() && prefilling.empty();
    const Admission a = admission(need, r->p.n, as);
    if (a == Admission::kNever) {
      pop();
      finish_request(
          r, "error",
          strcat("[engine] request needs ", need, " KV pages (", plen, " prompt tokens + ", r->p.n, " x ", r->max_new,
                 " new), the cache has ", cache->num_pages(), "; raise the KV cache budget or lower max_tokens / n"));
      continue;
    }
    if (a == Admission::kWait) break;
    {
      std::lock_guard<std::mutex> l(mu);
      waiting.pop_front();
      const double waited = std::chrono::duration<double>(Clock::now() - r->submitted).count();
      for (size_t b = 0; b < EngineStats::kQueueBuckets.size(); ++b)
        if (waited <= EngineStats::kQueueBuckets[b]) ++st.queue_le[b];
      st.queue_seconds_sum += waited;
      ++st.queue_count;
    }
    committed += need;
    r->committed = need;
    if (prefix) {
      // Reuse the longest cached chain of full pages; the last prompt token is always prefilled (its
      // logits give the first sampled token).
      r->prompt_kv.pages = prefix->lookup(r->prompt, (plen - 1) / ps);
      r->prompt_kv.len = static_cast<int64_t>(r->prompt_kv.pages.size()) * ps;
      r->prefill_done = r->prompt_kv.len;
      std::lock_guard<std::mutex> l(mu);
      st.prefix_cache_query_tokens += plen;
      st.prefix_cache_hit_tokens += r->prefill_done;
    }
    const bool ok = reserve(r->prompt_kv, plen - r->prefill_done);
    TRINITY_ASSERT(ok, "committed KV pages were not available");
    as.pending_prefill += plen - r->prefill_done;
    as.running_samples += r->p.n;
    prefilling.push_back(r);
  }
}

// Prefill chunks first (up to max_prefill_tokens prompt tokens, in admission order; a longer prompt
// continues next step), then one decode row per live sample.
Engine::Impl::StepPlan Engine::Impl::plan() {
  StepPlan sp;
  std::vector<int64_t> remaining;
  for (auto& r : prefilling) remaining.push_back(static_cast<int64_t>(r->prompt.size()) - r->prefill_done);
  sp.chunks = plan_prefill_chunks(remaining, opts.max_prefill_tokens);
  for (size_t i = 0; i < sp.chunks.size(); ++i) {
    Request& r = *prefilling[i];
    const int64_t chunk = sp.chunks[i];
    sp.prefill_tokens += chunk;
    const int64_t b = static_cast<int64_t>(sp.tokens.size());
    sp.tokens.insert(sp.tokens.end(), r.prompt.begin() + r.prefill_done, r.prompt.begin() + r.prefill_done + chunk);
    sp.segs.push_back({&r.prompt_kv, b, static_cast<int64_t>(sp.tokens.size())});
    if (r.prefill_done + chunk == static_cast<int64_t>(r.prompt.size())) {  // its last row gives the first token
      sp.logit_rows.push_back(static_cast<int64_t>(sp.tokens.size()) - 1);
      sp.targets.push_back({&r, -1});
    }
  }
  for (auto& r : running)
    for (auto& s : r->samples) {
      if (s.done) continue;
      const bool ok = reserve(s.kv, 1);
      TRINITY_ASSERT(ok, "committed KV pages were not available");
      const int64_t b = static_cast<int64_t>(sp.tokens.size());
      sp.tokens.push_back(s.out.token_ids.back());
      sp.segs.push_back({&s.kv, b, b + 1});
      sp.logit_rows.push_back(b);
      sp.targets.push_back({r.get(), s.index});
    }
  return sp;
}

bool Engine::Impl::forward(const StepPlan& sp) {
  try {
    model->forward_infer(sp.tokens, sp.segs, *cache, sp.logit_rows, logits, scratch, packed.get());
  } catch (const std::exception& e) {
    log::error("engine: step failed: ", e.what());
    fail_all("error", e.what(), nullptr);
    return false;
  }
  for (auto& sg : sp.segs) sg.kv->len += sg.row_end - sg.row_begin;
  return true;
}

std::vector<std::shared_ptr<Request>> Engine::Impl::complete_prefills(const StepPlan& sp) {
  std::vector<std::shared_ptr<Request>> done;
  for (size_t i = 0; i < sp.chunks.size(); ++i) prefilling[i]->prefill_done += sp.chunks[i];
  for (auto it = prefilling.begin(); it != prefilling.end();) {
    if ((*it)->prefill_done == static_cast<int64_t>((*it)->prompt.size())) {
      if (prefix) prefix->insert((*it)->prompt, (*it)->prompt_kv.pages);
      done.push_back(*it);
      it = prefilling.erase(it);
    } else {
      ++it;
    }
  }
  return done;
}

void Engine::Impl::start_samples(Request& r) {
  r.samples.resize(static_cast<size_t>(r.p.n));
  for (int64_t k = 0; k < r.p.n; ++k) {
    Sample& s = r.samples[static_cast<size_t>(k)];
    s.index = k;
    s.rng.reseed(r.p.seed ? *r.p.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(k)
                          : ++seed_counter * 0xD1B54A32D192ED03ULL);
    if (tok) s.dec = std::make_unique<tok::StreamDecoder>(*tok, true);
    if (r.p.constraint) s.con = r.p.constraint->start();
    s.kv = model::kv_fork(*cache, r.prompt_kv);
  }
}

// Draws one token for a job (a sample and its logits row). Runs on a pool thread: reads the
// request, writes only the job and the sample's rng / constraint state.
void Engine::Impl::draw(SampleJob& jb) const {
  const Request& r = *jb.r;
  const Sample& s = *jb.s;
  try {
    thread_local std::vector<float> scratch_row;
    std::vector<int32_t> banned, history;
    const int64_t n_gen = static_cast<int64_t>(s.out.token_ids.size());
    if (n_gen < r.p.min_tokens) {
      banned = r.p.stop_token_ids;
      if (!r.p.ignore_eos) banned.insert(banned.end(), eos.begin(), eos.end());
    }
    if (r.p.repetition_penalty != 1.0) {
      history = r.prompt;
      history.insert(history.end(), s.out.token_ids.begin(), s.out.token_ids.end());
    }
    // sample_token leaves the row unmodified, so the n samples of a prompt share it; a constraint
    // masks a private copy.
    float* row = const_cast<float*>(jb.row);
    if (s.con) {
      thread_local std::vector<float> masked;
      masked.assign(jb.row, jb.row + vocab);
      s.con->mask(masked.data(), vocab);
      row = masked.data();
    }
    jb.c = sample_token(row, vocab, r.p, history, banned, jb.s->rng, scratch_row);
    if (s.con) s.con->advance(jb.c.token);
  } catch (const std::exception& e) {
    jb.err = e.what();
  }
}

// Appends a sampled token to a sample and applies the stop rules.
void Engine::Impl::accept(Request& r, Sample& s, const TokenChoice& c) {
  s.out.token_ids.push_back(c.token);
  s.out.logprobs.push_back(c.logprob);
  if (r.p.top_logprobs > 0) s.out.top_logprobs.push_back(c.top);
  s.out.model_version = version;
  const int64_t n_gen = static_cast<int64_t>(s.out.token_ids.size());
  std::string reason;
  const bool is_eos = std::find(eos.begin(), eos.end(), c.token) != eos.end();
  const bool is_stop_id =
      std::find(r.p.stop_token_ids.begin(), r.p.stop_token_ids.end(), c.token) != r.p.stop_token_ids.end();
  if (((is_eos && !r.p.ignore_eos) || is_stop_id) && n_gen >= r.p.min_tokens) reason = "stop";
  if (reason.empty() && n_gen >= r.max_new) reason = "length";
  if (s.dec) {
    // A token that ends the generation (EOS / stop id) is not part of the text.
    const size_t before = s.text.size();
    // Ids the model has but the tokenizer lacks (vocabulary padding) decode to no text.
    if (reason != "stop" && c.token < tok->vocab_size() && !tok->id_to_token(c.token).empty())
      s.text += s.dec->push(c.token);
    size_t cut = std::string::npos;
    if (reason != "stop" && !r.p.stop.empty() && n_gen >= r.p.min_tokens) {
      // A stop string wins over "length" when the last token completes it.
      size_t max_stop = 0;
      for (const auto& stp : r.p.stop) max_stop = std::max(max_stop, stp.size());
      const size_t from = before >= max_stop ? before - max_stop + 1 : 0;
      for (const auto& stp : r.p.stop) {
        const size_t at = s.text.find(stp, from);
        if (at != std::string::npos) cut = std::min(cut, at);
      }
      if (cut != std::string::npos) reason = "stop";
    }
    if (!reason.empty() && cut == std::string::npos) s.text += s.dec->finish();
    s.out.text = cut == std::string::npos ? s.text : s.text.substr(0, cut);
  }
  if (reason.empty()) {
    emit(r, s, c.token, c.logprob, false);
  } else {
    s.done = true;
    s.out.finish_reason = reason;
    model::kv_free(*cache, s.kv);
    emit(r, s, c.token, c.logprob, true);
  }
}

// Sets up the samples of requests whose prompt completed, draws every row's token in parallel (each
// job owns its sample's rng and a thread-local scratch), then applies the stop rules in row order.
// A row that cannot be sampled (non-finite logits, everything masked) fails its own request only.
int64_t Engine::Impl::sample(const StepPlan& sp, std::vector<std::shared_ptr<Request>>& admitted) {
  int64_t generated = 0;
  try {
    std::vector<SampleJob> jobs;
    jobs.reserve(sp.targets.size());
    for (size_t i = 0; i < sp.targets.size(); ++i) {
      Request& r = *sp.targets[i].r;
      const float* row = logits.data() + static_cast<int64_t>(i) * vocab;
      if (sp.targets[i].sample < 0) {
        start_samples(r);
        for (auto& s : r.samples) jobs.push_back({&r, &s, row, {}, {}});
      } else {
        jobs.push_back({&r, &r.samples[static_cast<size_t>(sp.targets[i].sample)], row, {}, {}});
      }
    }
    parallel_for_dynamic(
        static_cast<int64_t>(jobs.size()), [&](int64_t j) { draw(jobs[static_cast<size_t>(j)]); }, 8 * vocab);
    std::vector<std::pair<Request*, std::string>> failed;
    auto failed_of = [&](const Request* r) {
      return std::find_if(failed.begin(), failed.end(), [&](const auto& f) { return f.first == r; });
    };
    for (const SampleJob& jb : jobs)
      if (!jb.err.empty() && failed_of(jb.r) == failed.end()) failed.emplace_back(jb.r, jb.err);
    for (SampleJob& jb : jobs) {
      if (failed_of(jb.r) != failed.end()) continue;
      ++generated;
      accept(*jb.r, *jb.s, jb.c);
    }
    for (const auto& t : sp.targets)
      if (t.sample < 0 && failed_of(t.r) == failed.end()) {
        model::kv_free(*cache, t.r->prompt_kv);
        t.r->prefilled = true;
      }
    for (const auto& [req, err] : failed) {
      log::error("engine: a request failed while sampling: ", err);
      for (auto* list : {&admitted, &running}) {
        auto it = std::find_if(list->begin(), list->end(), [&](const auto& r) { return r.get() == req; });
        if (it == list->end()) continue;
        finish_request(*it, "error", err);
        list->erase(it);
      }
    }
  } catch (const std::exception& e) {
    // A failure while sampling or decoding must not kill the scheduler: fail this step's requests.
    log::error("engine: sampling failed: ", e.what());
    fail_all("error", e.what(), &admitted);
  }
  return generated;
}

void Engine::Impl::retire(std::vector<std::shared_ptr<Request>>& admitted) {
  for (auto& r : admitted) {
    r->in_running = true;
    running.push_back(r);
    std::lock_guard<std::mutex> l(mu);
    ++st.running;
  }
  admitted.clear();
  for (auto it = running.begin(); it != running.end();) {
    auto& r = *it;
    const bool all_done = std::all_of(r->samples.begin(), r->samples.end(), [](const Sample& s) { return s.done; });
    if (all_done) {
      finish_request(r, "stop");
      it = running.erase(it);
    } else {
      ++it;
    }
  }
}

void Engine::Impl::record(int64_t prompt_tokens, int64_t generated) {
  std::lock_guard<std::mutex> l(mu);
  ++st.steps;
  st.prompt_tokens += prompt_tokens;
  st.generated_tokens += generated;
  update_kv_stats();
}

void Engine::Impl::update_kv_stats() {
  st.kv_pages_total = cache->num_pages();
  st.kv_pages_free = cache->free_pages() + (prefix ? prefix->evictable() : 0);
  st.prefix_cache_pages = prefix ? prefix->pages() : 0;
  st.prefix_cache_evictions = prefix ? prefix->evictions() : 0;
}

// Requests hold at most the pages they committed, so evicting every cache-only page always makes room.
bool Engine::Impl::reserve(model::SeqKv& kv, int64_t n_new) {
  if (prefix) prefix->make_free(model::kv_pages_needed(*cache, kv, n_new));
  return model::kv_reserve(*cache, kv, n_new);
}

// Everything unfinished ends with "abort".
void Engine::Impl::shutdown() {
  fail_all("abort", "", nullptr);
  std::deque<std::shared_ptr<Request>> rest;
  {
    std::lock_guard<std::mutex> l(mu);
    rest.swap(waiting);
    swap_pending = false;
  }
  swap_cv.notify_all();
  for (auto& r : rest) finish_request(r, "abort");
}

void Engine::loop() {
  auto& im = *impl_;
  set_thread_role(im.role);      // also gives this thread OpenMP's count (a per-thread setting)
  std::optional<RoleBusy> busy;  // while there is work: the other role runs on its share of the cores
  for (;;) {
    {
      std::unique_lock<std::mutex> l(im.mu);
      const auto has_work = [&] {
        if (im.swap_pending) return !im.drained || im.next_ready;  // drained: sleep until the new copy is packed
        return !im.waiting.empty() || !im.running.empty() || !im.prefilling.empty();
      };
      if (!has_work()) busy.reset();
      im.cv.wait(l, [&] { return im.stop || has_work(); });
      if (im.stop) break;
      if (!busy) busy.emplace(im.role);
    }
    const bool hold_admission = im.swap_weights();
    im.expire();
    if (!hold_admission) im.admit();
    const Impl::StepPlan sp = im.plan();
    if (sp.tokens.empty()) continue;
    if (!im.forward(sp)) continue;
    std::vector<std::shared_ptr<Request>> admitted = im.complete_prefills(sp);
    const int64_t generated = im.sample(sp, admitted);
    // Stats before the finished requests are answered: a caller woken by its result sees its tokens
    // counted (server_e2e's batching check read 502 of 512 under ASan when this came after).
    im.record(sp.prefill_tokens, generated);
    im.retire(admitted);
  }
  im.shutdown();
}

}  // namespace trinity::engine
