// Generation engine: scheduler loop, admission with KV page commitments, batched prefill + decode,
// stop conditions, streaming, weight swaps (see engine.h).
#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <random>
#include <stdexcept>

#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "model/infer_weights.h"
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
  std::condition_variable swap_cv;

  // Scheduler-owned.
  std::shared_ptr<const model::Transformer> model;
  std::shared_ptr<const model::InferWeights> packed;  // null for WeightFormat::kF32
  std::atomic<int64_t> version{0};
  std::shared_ptr<const tok::Tokenizer> tok;
  EngineOptions opts;
  std::unique_ptr<model::KvCache> cache;
  model::InferScratch scratch;
  std::vector<std::shared_ptr<Request>> running;
  // Admitted, prompt not yet fully in the KV cache; prefilled in order, max_prefill_tokens per step.
  std::vector<std::shared_ptr<Request>> prefilling;
  int64_t committed = 0;
  std::vector<float> logits;
  uint64_t seed_counter = 0;
  EngineStats st;
};

namespace {

std::shared_ptr<const model::InferWeights> pack_for(const model::Transformer& m, WeightFormat f) {
  if (f == WeightFormat::kF32 || m.head() != model::HeadKind::kLm) return nullptr;
  return model::pack_infer_weights(m, f == WeightFormat::kBF16 ? tensor::PackDType::kBF16 : tensor::PackDType::kF32);
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
  im.packed = pack_for(*model, opts.weight_format);
  im.model = std::move(model);
  im.version = version;
  im.tok = std::move(tokenizer);
  im.opts = opts;
  const int64_t pages = model::KvCache::pages_for_bytes(cfg_, opts.kv_cache_bytes, opts.page_size);
  try {
    im.cache = std::make_unique<model::KvCache>(cfg_, pages, opts.page_size);
  } catch (const ValueError& e) {  // too large for this machine: say which budget sized it
    const std::string msg = e.what();
    throw ValueError("engine", strcat(msg.substr(msg.find("] ") + 2), "; the KV cache budget is ", opts.kv_cache_bytes,
                                      " bytes (explorer.rollout_model.kv_cache_bytes, --kv-cache-mb for serve)"));
  }
  im.st.kv_pages_total = im.cache->num_pages();  // /health is true before the first step
  im.st.kv_pages_free = im.cache->free_pages();
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
  auto packed = pack_for(*model, impl_->opts.weight_format);  // in the caller's thread
  std::unique_lock<std::mutex> l(impl_->mu);
  impl_->next_packed = std::move(packed);
  impl_->next_model = std::move(model);
  impl_->next_version = version;
  impl_->swap_pending = true;
  impl_->cv.notify_all();
  impl_->swap_cv.wait(l, [&] { return !impl_->swap_pending || impl_->stop; });
}

int64_t Engine::model_version() const { return impl_->version.load(); }

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  EngineStats s = impl_->st;
  s.waiting = static_cast<int64_t>(impl_->waiting.size());
  return s;
}

namespace {

int64_t pages_of(int64_t tokens, int64_t ps) { return (tokens + ps - 1) / ps; }

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

void Engine::loop() {
  // OpenMP's thread count is per thread: give the scheduler thread the process-wide setting.
  set_num_threads(num_threads());
  auto& im = *impl_;
  const int64_t ps = im.opts.page_size;
  const int64_t v = cfg_.vocab_size;

  auto finish_sample = [&](Request& r, Sample& s, const std::string& reason) {
    if (s.done) return;
    s.done = true;
    s.out.finish_reason = reason;
    if (s.dec) {
      s.text += s.dec->finish();
      s.out.text = s.text;
    }
    model::kv_free(*im.cache, s.kv);
    emit(r, s, -1, 0.0f, true);
  };
  auto finish_request = [&](const std::shared_ptr<Request>& r, const std::string& reason,
                            const std::string& error = "") {
    if (r->prompt_kv.pages.size()) model::kv_free(*im.cache, r->prompt_kv);
    if (r->samples.empty()) {  // never prefilled: report n empty completions
      for (int64_t i = 0; i < r->p.n; ++i) {
        Completion c;
        c.finish_reason = reason;
        c.model_version = im.version;
        r->result.completions.push_back(c);
      }
    } else {
      for (auto& s : r->samples) {
        finish_sample(*r, s, reason);
        r->result.completions.push_back(std::move(s.out));
      }
    }
    r->result.error = error;
    im.committed -= r->committed;
    r->committed = 0;
    {  // stats first, so a caller woken by this request sees them
      std::lock_guard<std::mutex> l(im.mu);
      ++im.st.finished;
      if (r->in_running) --im.st.running;
      r->in_running = false;
      im.st.kv_pages_total = im.cache->num_pages();
      im.st.kv_pages_free = im.cache->free_pages();
    }
    {
      std::lock_guard<std::mutex> l(r->mu);
      r->finished = true;
    }
    r->cv.notify_all();
  };

  // Appends a sampled token to a sample and applies the stop rules.
  auto accept = [&](Request& r, Sample& s, const TokenChoice& c) {
    s.out.token_ids.push_back(c.token);
    s.out.logprobs.push_back(c.logprob);
    if (r.p.top_logprobs > 0) s.out.top_logprobs.push_back(c.top);
    s.out.model_version = im.version;
    const int64_t n_gen = static_cast<int64_t>(s.out.token_ids.size());
    std::string reason;
    const bool is_eos = std::find(eos_.begin(), eos_.end(), c.token) != eos_.end();
    const bool is_stop_id =
        std::find(r.p.stop_token_ids.begin(), r.p.stop_token_ids.end(), c.token) != r.p.stop_token_ids.end();
    if (((is_eos && !r.p.ignore_eos) || is_stop_id) && n_gen >= r.p.min_tokens) reason = "stop";
    if (reason.empty() && n_gen >= r.max_new) reason = "length";
    if (s.dec) {
      // A token that ends the generation (EOS / stop id) is not part of the text.
      const size_t before = s.text.size();
      // Ids the model has but the tokenizer lacks (vocabulary padding) decode to no text.
      if (reason != "stop" && c.token < im.tok->vocab_size() && !im.tok->id_to_token(c.token).empty())
        s.text += s.dec->push(c.token);
      size_t cut = std::string::npos;
      if (reason != "stop" && !r.p.stop.empty() && n_gen >= r.p.min_tokens) {
        // A stop string wins over "length" when the last token completes it.
        size_t max_stop = 0;
        for (const auto& st : r.p.stop) max_stop = std::max(max_stop, st.size());
        const size_t from = before >= max_stop ? before - max_stop + 1 : 0;
        for (const auto& st : r.p.stop) {
          const size_t at = s.text.find(st, from);
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
      model::kv_free(*im.cache, s.kv);
      emit(r, s, c.token, c.logprob, true);
    }
  };

  for (;;) {
    {
      std::unique_lock<std::mutex> l(im.mu);
      im.cv.wait(l, [&] {
        return im.stop || !im.waiting.empty() || !im.running.empty() || !im.prefilling.empty() || im.swap_pending;
      });
      if (im.stop) break;
    }
    // Weight swap between steps.
    bool hold_admission = false;
    {
      std::unique_lock<std::mutex> l(im.mu);
      if (im.swap_pending) {
        if (im.opts.swap_policy == SwapPolicy::kAbort) {
          l.unlock();
          for (auto& r : im.running) finish_request(r, "abort");
          im.running.clear();
          for (auto& r : im.prefilling) finish_request(r, "abort");
          im.prefilling.clear();
          l.lock();
        }
        if (im.running.empty() && im.prefilling.empty()) {
          im.model = std::move(im.next_model);
          im.packed = std::move(im.next_packed);
          im.version = im.next_version;
          im.st.model_version = im.next_version;
          im.swap_pending = false;
          im.swap_cv.notify_all();
        } else {
          hold_admission = true;
        }
      }
    }
    // Cancellations and deadlines.
    const auto now = Clock::now();
    for (auto* list : {&im.running, &im.prefilling})
      for (auto it = list->begin(); it != list->end();) {
        auto& r = *it;
        if (r->cancelled || now > r->deadline) {
          finish_request(r, r->cancelled ? "cancelled" : "timeout");
          it = list->erase(it);
        } else {
          ++it;
        }
      }
    // Admission: while less than one step's prefill budget is pending (so a burst of requests gets
    // its first tokens step by step instead of all after one long prefill).
    int64_t prefill_tokens = 0;
    int64_t pending_prefill = 0;
    int64_t running_samples = 0;
    for (auto& r : im.running) running_samples += r->p.n;
    for (auto& r : im.prefilling) {
      running_samples += r->p.n;
      pending_prefill += static_cast<int64_t>(r->prompt.size()) - r->prefill_done;
    }
    while (!hold_admission) {
      std::shared_ptr<Request> r;
      {
        std::lock_guard<std::mutex> l(im.mu);
        if (im.waiting.empty()) break;
        r = im.waiting.front();
      }
      auto pop = [&] {
        std::lock_guard<std::mutex> l(im.mu);
        im.waiting.pop_front();
      };
      if (r->cancelled || Clock::now() > r->deadline) {
        pop();
        finish_request(r, r->cancelled ? "cancelled" : "timeout");
        continue;
      }
      const int64_t plen = static_cast<int64_t>(r->prompt.size());
      const int64_t need = pages_of(plen, ps) + r->p.n * (pages_of(r->max_new, ps) + 1);
      if (need > im.cache->num_pages()) {
        pop();
        finish_request(r, "error",
                       strcat("[engine] request needs ", need, " KV pages (", plen, " prompt tokens + ", r->p.n,
                              " x ", r->max_new, " new), the cache has ", im.cache->num_pages(),
                              "; raise the KV cache budget or lower max_tokens / n"));
        continue;
      }
      if (im.committed + need > im.cache->num_pages()) break;
      if (pending_prefill >= im.opts.max_prefill_tokens) break;
      if (running_samples + r->p.n > im.opts.max_running && !(im.running.empty() && im.prefilling.empty())) break;
      pop();
      im.committed += need;
      r->committed = need;
      const bool ok = model::kv_reserve(*im.cache, r->prompt_kv, plen);
      TRINITY_ASSERT(ok, "committed KV pages were not available");
      pending_prefill += plen;
      running_samples += r->p.n;
      im.prefilling.push_back(r);
    }
    // Build the step: prefill chunks first (up to max_prefill_tokens prompt tokens, in admission
    // order; a longer prompt continues next step), then one decode row per live sample.
    std::vector<int32_t> tokens;
    std::vector<model::InferSeg> segs;
    std::vector<int64_t> logit_rows;
    struct Target {
      Request* r;
      int64_t sample;  // -1: a prefill (samples drawn from this row)
    };
    std::vector<Target> targets;
    std::vector<int64_t> chunks;  // prompt tokens of im.prefilling[i] in this step
    for (auto& r : im.prefilling) {
      const int64_t plen = static_cast<int64_t>(r->prompt.size());
      const int64_t chunk = std::min(plen - r->prefill_done, im.opts.max_prefill_tokens - prefill_tokens);
      if (chunk <= 0) break;
      chunks.push_back(chunk);
      prefill_tokens += chunk;
      const int64_t b = static_cast<int64_t>(tokens.size());
      tokens.insert(tokens.end(), r->prompt.begin() + r->prefill_done, r->prompt.begin() + r->prefill_done + chunk);
      segs.push_back({&r->prompt_kv, b, static_cast<int64_t>(tokens.size())});
      if (r->prefill_done + chunk == plen) {  // the last chunk: its last row gives the first token
        logit_rows.push_back(static_cast<int64_t>(tokens.size()) - 1);
        targets.push_back({r.get(), -1});
      }
    }
    for (auto& r : im.running)
      for (auto& s : r->samples) {
        if (s.done) continue;
        const bool ok = model::kv_reserve(*im.cache, s.kv, 1);
        TRINITY_ASSERT(ok, "committed KV pages were not available");
        const int64_t b = static_cast<int64_t>(tokens.size());
        tokens.push_back(s.out.token_ids.back());
        segs.push_back({&s.kv, b, b + 1});
        logit_rows.push_back(b);
        targets.push_back({r.get(), s.index});
      }
    if (tokens.empty()) continue;
    try {
      im.model->forward_infer(tokens, segs, *im.cache, logit_rows, im.logits, im.scratch, im.packed.get());
    } catch (const std::exception& e) {
      log::error("engine: step failed: ", e.what());
      for (auto& r : im.prefilling) finish_request(r, "error", e.what());
      im.prefilling.clear();
      for (auto& r : im.running) finish_request(r, "error", e.what());
      im.running.clear();
      continue;
    }
    for (auto& sg : segs) sg.kv->len += sg.row_end - sg.row_begin;
    // Requests whose prompt is now complete leave `prefilling` (their samples are set up below).
    std::vector<std::shared_ptr<Request>> admitted;
    for (size_t i = 0; i < chunks.size(); ++i) im.prefilling[i]->prefill_done += chunks[i];
    for (auto it = im.prefilling.begin(); it != im.prefilling.end();) {
      if ((*it)->prefill_done == static_cast<int64_t>((*it)->prompt.size())) {
        admitted.push_back(*it);
        it = im.prefilling.erase(it);
      } else {
        ++it;
      }
    }
    // Sampling: set up the samples of new requests, draw every row's token in parallel (each job
    // owns its sample's rng and a thread-local scratch), then apply the stop rules in row order.
    int64_t generated = 0;
    try {
      struct Job {
        Request* r;
        Sample* s;
        const float* row;
        TokenChoice c;
        std::string err;
      };
      std::vector<Job> jobs;
      jobs.reserve(targets.size());
      for (size_t i = 0; i < targets.size(); ++i) {
        Request& r = *targets[i].r;
        const float* row = im.logits.data() + static_cast<int64_t>(i) * v;
        if (targets[i].sample < 0) {
          r.samples.resize(static_cast<size_t>(r.p.n));
          for (int64_t k = 0; k < r.p.n; ++k) {
            Sample& s = r.samples[static_cast<size_t>(k)];
            s.index = k;
            s.rng.reseed(r.p.seed ? *r.p.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(k)
                                  : ++im.seed_counter * 0xD1B54A32D192ED03ULL);
            if (im.tok) s.dec = std::make_unique<tok::StreamDecoder>(*im.tok, true);
            if (r.p.constraint) s.con = r.p.constraint->start();
            s.kv = model::kv_fork(*im.cache, r.prompt_kv);
            jobs.push_back({&r, &s, row, {}, {}});
          }
        } else {
          jobs.push_back({&r, &r.samples[static_cast<size_t>(targets[i].sample)], row, {}, {}});
        }
      }
      parallel_for_dynamic(static_cast<int64_t>(jobs.size()), [&](int64_t j) {
        Job& jb = jobs[static_cast<size_t>(j)];
        const Request& r = *jb.r;
        const Sample& s = *jb.s;
        try {
          thread_local std::vector<float> scratch;
          std::vector<int32_t> banned, history;
          const int64_t n_gen = static_cast<int64_t>(s.out.token_ids.size());
          if (n_gen < r.p.min_tokens) {
            banned = r.p.stop_token_ids;
            if (!r.p.ignore_eos) banned.insert(banned.end(), eos_.begin(), eos_.end());
          }
          if (r.p.repetition_penalty != 1.0) {
            history = r.prompt;
            history.insert(history.end(), s.out.token_ids.begin(), s.out.token_ids.end());
          }
          // sample_token leaves the row unmodified, so the n samples of a prompt share it; a
          // constraint masks a private copy.
          float* row = const_cast<float*>(jb.row);
          if (s.con) {
            thread_local std::vector<float> masked;
            masked.assign(jb.row, jb.row + v);
            s.con->mask(masked.data(), v);
            row = masked.data();
          }
          jb.c = sample_token(row, v, r.p, history, banned, jb.s->rng, scratch);
          if (s.con) s.con->advance(jb.c.token);
        } catch (const std::exception& e) {
          jb.err = e.what();
        }
      }, 8 * v);
      // A row that cannot be sampled (non-finite logits, everything masked) fails its own request
      // only; the other requests of the step go on.
      std::vector<std::pair<Request*, std::string>> failed;
      auto failed_of = [&](const Request* r) {
        return std::find_if(failed.begin(), failed.end(), [&](const auto& f) { return f.first == r; });
      };
      for (const Job& jb : jobs)
        if (!jb.err.empty() && failed_of(jb.r) == failed.end()) failed.emplace_back(jb.r, jb.err);
      for (Job& jb : jobs) {
        if (failed_of(jb.r) != failed.end()) continue;
        ++generated;
        accept(*jb.r, *jb.s, jb.c);
      }
      for (size_t i = 0; i < targets.size(); ++i)
        if (targets[i].sample < 0 && failed_of(targets[i].r) == failed.end()) {
          model::kv_free(*im.cache, targets[i].r->prompt_kv);
          targets[i].r->prefilled = true;
        }
      for (const auto& [req, err] : failed) {
        log::error("engine: a request failed while sampling: ", err);
        for (auto* list : {&admitted, &im.running}) {
          auto it = std::find_if(list->begin(), list->end(), [&](const auto& r) { return r.get() == req; });
          if (it == list->end()) continue;
          finish_request(*it, "error", err);
          list->erase(it);
        }
      }
    } catch (const std::exception& e) {
      // A failure while sampling or decoding must not kill the scheduler: fail this step's requests.
      log::error("engine: sampling failed: ", e.what());
      for (auto& r : admitted) finish_request(r, "error", e.what());
      admitted.clear();
      for (auto& r : im.prefilling) finish_request(r, "error", e.what());
      im.prefilling.clear();
      for (auto& r : im.running) finish_request(r, "error", e.what());
      im.running.clear();
    }
    for (auto& r : admitted) {
      r->in_running = true;
      im.running.push_back(r);
      std::lock_guard<std::mutex> l(im.mu);
      ++im.st.running;
    }
    for (auto it = im.running.begin(); it != im.running.end();) {
      auto& r = *it;
      const bool all_done = std::all_of(r->samples.begin(), r->samples.end(), [](const Sample& s) { return s.done; });
      if (all_done) {
        finish_request(r, "stop");
        it = im.running.erase(it);
      } else {
        ++it;
      }
    }
    std::lock_guard<std::mutex> l(im.mu);
    ++im.st.steps;
    im.st.prompt_tokens += prefill_tokens;
    im.st.generated_tokens += generated;
    im.st.kv_pages_total = im.cache->num_pages();
    im.st.kv_pages_free = im.cache->free_pages();
  }
  // Shutdown: everything unfinished ends with "abort".
  for (auto& r : im.running) finish_request(r, "abort");
  im.running.clear();
  for (auto& r : im.prefilling) finish_request(r, "abort");
  im.prefilling.clear();
  std::deque<std::shared_ptr<Request>> rest;
  {
    std::lock_guard<std::mutex> l(im.mu);
    rest.swap(im.waiting);
    im.swap_pending = false;
  }
  im.swap_cv.notify_all();
  for (auto& r : rest) finish_request(r, "abort");
}

}  // namespace trinity::engine
