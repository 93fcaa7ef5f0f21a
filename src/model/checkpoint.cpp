// HF checkpoint directories (see checkpoint.h). save_checkpoint writes everything into
// "<dir>.tmp.<pid>", fsyncs it, then swaps it into place: rename() when <dir> does not exist,
// renameat2(RENAME_EXCHANGE) when it does (one atomic step: <dir> is always the old or the new
// checkpoint), falling back to two renames on filesystems without it. An existing <dir> is only
// replaced when it is empty or looks like a checkpoint (config.json or *.safetensors), so a
// mistyped --out can never wipe an unrelated directory. param_specs mirrors transformers'
// Qwen2/Qwen3/Llama module trees (o_proj bias = attention_bias for llama/qwen3, never qwen2).
#include "model/checkpoint.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/file.h"

namespace trinity::model {

namespace fs = std::filesystem;
using tensor::DType;

std::vector<ParamSpec> param_specs(const ModelConfig& cfg) {
  const int64_t C = cfg.hidden_size, I = cfg.intermediate_size, V = cfg.vocab_size;
  const int64_t HS = cfg.head_dim, NH = cfg.num_attention_heads, NKV = cfg.num_key_value_heads;
  std::vector<ParamSpec> out;
  out.push_back({"model.embed_tokens.weight", {V, C}});
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string p = strcat("model.layers.", l, ".");
    out.push_back({p + "input_layernorm.weight", {C}});
    out.push_back({p + "self_attn.q_proj.weight", {NH * HS, C}});
    if (cfg.attention_bias) out.push_back({p + "self_attn.q_proj.bias", {NH * HS}});
    out.push_back({p + "self_attn.k_proj.weight", {NKV * HS, C}});
    if (cfg.attention_bias) out.push_back({p + "self_attn.k_proj.bias", {NKV * HS}});
    out.push_back({p + "self_attn.v_proj.weight", {NKV * HS, C}});
    if (cfg.attention_bias) out.push_back({p + "self_attn.v_proj.bias", {NKV * HS}});
    out.push_back({p + "self_attn.o_proj.weight", {C, NH * HS}});
    if (cfg.o_proj_bias()) out.push_back({p + "self_attn.o_proj.bias", {C}});
    if (cfg.qk_norm) {
      out.push_back({p + "self_attn.q_norm.weight", {HS}});
      out.push_back({p + "self_attn.k_norm.weight", {HS}});
    }
    out.push_back({p + "post_attention_layernorm.weight", {C}});
    out.push_back({p + "mlp.gate_proj.weight", {I, C}});
    out.push_back({p + "mlp.up_proj.weight", {I, C}});
    out.push_back({p + "mlp.down_proj.weight", {C, I}});
  }
  out.push_back({"model.norm.weight", {C}});
  if (!cfg.tie_word_embeddings) out.push_back({"lm_head.weight", {V, C}});
  return out;
}

std::vector<tensor::Tensor> load_params(const WeightSource& ws, const ModelConfig& cfg) {
  std::vector<tensor::Tensor> out;
  for (const ParamSpec& p : param_specs(cfg)) out.push_back(ws.get_f32(p.name, p.shape));
  return out;
}

namespace {

[[noreturn]] void fail_ckpt(const std::string& path, const std::string& msg) {
  throw IoError("checkpoint", strcat(path, ": ", msg));
}

void fsync_path(const std::string& path, bool dir) {
  const int fd = ::open(path.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) fail_ckpt(path, strcat("cannot open for fsync: ", std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) fail_ckpt(path, strcat("fsync failed: ", std::strerror(e)));
}

// Empty, or holds config.json or a *.safetensors file.
bool looks_like_checkpoint(const std::string& dir) {
  std::error_code ec;
  bool empty = true;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    empty = false;
    const std::string name = e.path().filename().string();
    if (name == "config.json" || e.path().extension() == ".safetensors") return true;
  }
  return !ec && empty;
}

const char* const kTokenizerFiles[] = {
    "tokenizer.json",    "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
    "merges.txt",        "generation_config.json", "added_tokens.json",      "chat_template.jinja",
    "tokenizer.model",
};

// Puts the finished `tmp` directory at `target`, which exists (and is a directory) or not.
void swap_into_place(const std::string& tmp, const std::string& target) {
  std::error_code ec;
  if (!file::exists(target)) {
    if (::rename(tmp.c_str(), target.c_str()) != 0)
      fail_ckpt(target, strcat("cannot rename '", tmp, "' into place: ", std::strerror(errno)));
    return;
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(tmp, ec);  // now holds the old checkpoint
    return;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
    fail_ckpt(target, strcat("cannot exchange '", tmp, "' with it: ", std::strerror(errno)));
  // No RENAME_EXCHANGE here: move the old one aside, then the new one in (a crash between the two
  // leaves <dir>.old.<pid> holding the complete old checkpoint).
  const std::string old = strcat(target, ".old.", ::getpid());
  fs::remove_all(old, ec);
  if (::rename(target.c_str(), old.c_str()) != 0)
    fail_ckpt(target, strcat("cannot move the old checkpoint aside to '", old, "': ", std::strerror(errno)));
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int e = errno;
    ::rename(old.c_str(), target.c_str());
    fail_ckpt(target, strcat("cannot rename '", tmp, "' into place: ", std::strerror(e)));
  }
  fs::remove_all(old, ec);
}

}  // namespace

void save_checkpoint(const std::string& dir, const ModelConfig& cfg, const std::vector<NamedTensor>& tensors,
                     const SaveOptions& opts) {
  cfg.validate();
  if (opts.dtype != DType::kF32 && opts.dtype != DType::kBF16 && opts.dtype != DType::kF16)
    fail_ckpt(dir, "checkpoint dtype must be F32, BF16 or F16");
  std::map<std::string, const tensor::Tensor*> by_name;
  for (const NamedTensor& nt : tensors) by_name[nt.name] = nt.tensor;
  for (const ParamSpec& spec : param_specs(cfg)) {
    auto it = by_name.find(spec.name);
    if (it == by_name.end() || it->second == nullptr)
      fail_ckpt(dir, strcat("tensor '", spec.name, "' is missing from the tensors to save"));
    if (it->second->shape() != spec.shape)
      fail_ckpt(dir, strcat("tensor '", spec.name, "' has shape ", it->second->shape_str(), ", expected ",
                            tensor::shape_str(spec.shape)));
  }

  std::string target = dir;
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  if (target.empty()) fail_ckpt(dir, "empty checkpoint path");
  if (file::exists(target)) {
    if (!file::is_dir(target)) fail_ckpt(target, "exists and is not a directory");
    if (!looks_like_checkpoint(target))
      fail_ckpt(target,
                "exists and does not look like a checkpoint (no config.json or *.safetensors); "
                "refusing to replace it");
  }
  const fs::path parent = fs::path(target).parent_path();
  if (!parent.empty()) file::make_dirs(parent.string());
  std::string src_tok;
  if (!opts.copy_tokenizer_from.empty()) {
    if (!file::is_dir(opts.copy_tokenizer_from))
      fail_ckpt(opts.copy_tokenizer_from, "tokenizer source is not a directory");
    src_tok = opts.copy_tokenizer_from;
  }

  const std::string tmp = strcat(target, ".tmp.", ::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);  // a leftover of a crashed save by a process with our pid
  if (!fs::create_directory(tmp, ec) || ec)
    fail_ckpt(tmp, strcat("cannot create directory: ", ec ? ec.message() : "already exists"));
  try {
    ModelConfig c = cfg;
    c.torch_dtype = opts.dtype == DType::kBF16 ? "bfloat16" : opts.dtype == DType::kF16 ? "float16" : "float32";
    file::write_atomic(file::join(tmp, "config.json"), config_to_json(c));
    write_safetensors(file::join(tmp, "model.safetensors"), tensors, opts.dtype);
    if (!src_tok.empty()) {
      for (const char* name : kTokenizerFiles) {
        const std::string from = file::join(src_tok, name);
        if (!file::exists(from)) continue;
        const std::string to = file::join(tmp, name);
        fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
        if (ec) fail_ckpt(to, strcat("cannot copy '", from, "': ", ec.message()));
        fsync_path(to, false);
      }
    }
    fsync_path(tmp, true);
    swap_into_place(tmp, target);
    fsync_path(parent.empty() ? "." : parent.string(), true);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace trinity::model
