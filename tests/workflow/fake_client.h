// Test helpers shared by workflow-level tests: a scripted FakeModelClient (canned replies, exact
// ids, recorded calls, unique per-token logprobs so alignment can be checked) and a tiny byte-level
// tokenizer with ChatML special tokens. With a tok::ChatFormatter it renders real chat templates
// (e.g. Qwen3's); without one it renders plain ChatML. Other test folders may include it as
// "workflow/fake_client.h".
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "workflow/model_client.h"

namespace trinity::testing {

// Byte-level BPE without merges: ids 0..255 are bytes; 256 <|endoftext|>, 257 <|im_start|>,
// 258 <|im_end|> (special).
inline tok::Tokenizer byte_tokenizer() {
  using json = nlohmann::json;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[tok::uni::bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  json added = json::array();
  int id = 256;
  for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"})
    added.push_back({{"id", id++}, {"content", t}, {"special", true}, {"normalized", false}, {"lstrip", false},
                     {"rstrip", false}, {"single_word", false}});
  json t;
  t["version"] = "1.0";
  t["added_tokens"] = added;
  t["normalizer"] = nullptr;
  t["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  t["post_processor"] = nullptr;
  t["decoder"] = {{"type", "ByteLevel"}};
  t["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}};
  return tok::Tokenizer::from_json(t.dump(), "byte_tokenizer.json");
}

struct FakeReply {
  std::string text;
  std::string finish_reason = "stop";  // "stop" appends eos_ids[0] to the ids
};

class FakeModelClient : public workflow::ModelClient {
 public:
  struct Call {
    std::string kind;  // generate_ids | generate | chat
    std::vector<int32_t> prompt_ids;
    std::string prompt_text;
    std::string messages_json;
    workflow::GenOptions opt;
    std::vector<workflow::Sample> samples;  // what it returned
  };

  FakeModelClient(tok::Tokenizer tok, std::vector<int32_t> eos, std::optional<tok::ChatFormatter> chat = std::nullopt)
      : tok_(std::move(tok)), eos_(std::move(eos)), chat_(std::move(chat)) {}

  // Canned replies, consumed in order (one per sample); when empty, `responder` is asked, else "".
  void push(FakeReply r) {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(r));
  }
  std::function<FakeReply(const Call&, int64_t sample_index)> responder;
  int64_t version = 3;
  int64_t max_len = 32768;
  std::atomic<bool> cancel{false};

  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }

  std::vector<workflow::Sample> generate_ids(const std::vector<int32_t>& prompt_ids,
                                             const workflow::GenOptions& opt) override {
    Call c{"generate_ids", prompt_ids, tok_.decode(prompt_ids), "", opt, {}};
    return sample(std::move(c));
  }
  std::vector<workflow::Sample> generate(const std::string& prompt, const workflow::GenOptions& opt) override {
    Call c{"generate", tok_.encode(prompt), prompt, "", opt, {}};
    return sample(std::move(c));
  }
  std::vector<workflow::Sample> chat(const std::string& messages_json, const workflow::GenOptions& opt,
                                     const std::string& tools_json = "") override {
    const std::string text = render_chat_template(messages_json, true, tools_json, opt.enable_thinking);
    Call c{"chat", tok_.encode(text), text, messages_json, opt, {}};
    return sample(std::move(c));
  }
  std::vector<int32_t> apply_chat_template(const std::string& messages_json, bool add_generation_prompt,
                                           const std::string& tools_json = "",
                                           std::optional<bool> enable_thinking = std::nullopt) override {
    return tok_.encode(render_chat_template(messages_json, add_generation_prompt, tools_json, enable_thinking));
  }
  std::string render_chat_template(const std::string& messages_json, bool add_generation_prompt,
                                   const std::string& tools_json = "",
                                   std::optional<bool> enable_thinking = std::nullopt) override {
    check_cancel();
    if (chat_) {  // plain ChatML (below) ignores tools, as a template without tool support does
      tok::ChatOptions o;
      o.add_generation_prompt = add_generation_prompt;
      o.enable_thinking = enable_thinking;
      if (!tools_json.empty()) o.tools = tok::jinja::Value::from_json(tools_json);
      return chat_->render(tok::jinja::Value::from_json(messages_json), o);
    }
    std::string out;
    for (const auto& m : nlohmann::json::parse(messages_json))
      out += "<|im_start|>" + m["role"].get<std::string>() + "\n" + m["content"].get<std::string>() + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
  }
  std::vector<float> logprobs(const std::vector<int32_t>& tokens, double) override {
    return std::vector<float>(tokens.empty() ? 0 : tokens.size() - 1, -1.0f);
  }
  const tok::Tokenizer& tokenizer() const override { return tok_; }
  std::vector<int32_t> eos_ids() const override { return eos_; }
  int64_t model_version() const override { return version; }
  int64_t max_model_len() const override { return max_len; }
  bool cancelled() const override { return cancel.load(); }

 private:
  void check_cancel() const {
    if (cancel.load()) throw workflow::CancelledError("attempt cancelled");
  }

  std::vector<workflow::Sample> sample(Call c) {
    check_cancel();
    std::vector<workflow::Sample> out;
    for (int64_t i = 0; i < c.opt.n; ++i) {
      FakeReply r;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (!queue_.empty()) {
          r = queue_.front();
          queue_.pop_front();
        } else if (responder) {
          r = responder(c, i);
        }
      }
      workflow::Sample s;
      s.prompt_ids = c.prompt_ids;
      s.ids = tok_.encode(r.text);
      s.finish_reason = r.finish_reason;
      if (c.opt.max_tokens && static_cast<int64_t>(s.ids.size()) >= *c.opt.max_tokens) {
        s.ids.resize(static_cast<size_t>(std::max<int64_t>(0, *c.opt.max_tokens)));
        s.finish_reason = "length";
      } else if (r.finish_reason == "stop" && !eos_.empty()) {
        s.ids.push_back(eos_[0]);
      }
      for (size_t k = 0; k < s.ids.size(); ++k) s.logprobs.push_back(-0.001f * static_cast<float>(++serial_));
      s.text = tok_.decode(s.ids, /*skip_special_tokens=*/true);
      s.model_version = version;
      out.push_back(std::move(s));
    }
    c.samples = out;
    std::lock_guard<std::mutex> l(mu_);
    calls_.push_back(std::move(c));
    return out;
  }

  tok::Tokenizer tok_;
  std::vector<int32_t> eos_;
  std::optional<tok::ChatFormatter> chat_;
  mutable std::mutex mu_;
  std::deque<FakeReply> queue_;
  std::vector<Call> calls_;
  int64_t serial_ = 0;
};

}  // namespace trinity::testing
