// The engine against PyTorch on three checkpoints written by make_fixtures.py: qwen2 (q/k/v bias,
// GQA), qwen3 (q/k norm, head_dim != hidden/heads, tied embeddings), llama (llama3 rope scaling,
// bf16 weights). Logprobs and entropy within 3e-5 absolute (through `trinity debug logprobs`),
// every parameter gradient within 3e-5 relative L2 (through `trinity debug grad`), and ten AdamW
// steps with clipping and a cosine schedule reproducing PyTorch's loss trajectory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "trainer/optimizer.h"

using namespace trinity;
using json = nlohmann::json;

namespace {

const std::string kFixtures = std::string(TRINITY_BINARY_DIR) + "/golden";
const std::string kTrinity = std::string(TRINITY_BINARY_DIR) + "/trinity";

std::vector<json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::string dir_of(const std::string& name) {
  const std::string d = kFixtures + "/" + name;
  if (!file::exists(d + "/config.json"))
    ADD_FAILURE() << "missing fixture " << d << ": run ctest (the golden_fixtures test writes it)";
  return d;
}

int run(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class Golden : public ::testing::TestWithParam<std::string> {};

// Per-token logprobs and entropy of `got` vs `want` (JSONL files), each within 3e-5.
void expect_logprobs_match(const std::string& got_path, const std::string& want_path, const std::string& what) {
  auto got = read_jsonl(got_path), want = read_jsonl(want_path);
  ASSERT_EQ(got.size(), want.size());
  double max_err = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    for (const char* key : {"logprobs", "entropy"}) {
      const auto& g = got[i][key];
      const auto& w = want[i][key];
      ASSERT_EQ(g.size(), w.size()) << key << " of sequence " << i;
      for (size_t t = 0; t < g.size(); ++t) {
        const double err = std::abs(g[t].get<double>() - w[t].get<double>());
        max_err = std::max(max_err, err);
        EXPECT_LT(err, 3e-5) << what << " " << key << " seq " << i << " pos " << t;
      }
    }
  }
  std::printf("%s: max |logprob/entropy - torch| = %.2e\n", what.c_str(), max_err);
}

// Every tensor of `want_path` in `got_path`, each within 3e-5 relative L2.
void expect_grads_match(const std::string& got_path, const std::string& want_path, const std::string& what) {
  auto got = model::SafetensorsFile::open(got_path);
  auto want = model::SafetensorsFile::open(want_path);
  ASSERT_EQ(got.names(), want.names());
  double worst = 0;
  for (const auto& name : want.names()) {
    const auto& g = got.get(name);
    const auto& w = want.get(name);
    ASSERT_EQ(g.shape(), w.shape()) << name;
    double num = 0, den = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double a = g.f32()[i], b = w.f32()[i];
      num += (a - b) * (a - b);
      den += b * b;
    }
    const double rel = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
    worst = std::max(worst, rel);
    EXPECT_LT(rel, 3e-5) << what << " gradient of " << name;
  }
  std::printf("%s: worst relative L2 gradient error = %.2e\n", what.c_str(), worst);
}

}  // namespace

TEST_P(Golden, LogprobsAndEntropyMatchPytorch) {
  const std::string d = dir_of(GetParam());
  const std::string out = d + "/trinity_logprobs.jsonl";
  ASSERT_EQ(run(kTrinity + " debug logprobs --model " + d + " --input " + d + "/tokens.jsonl --output " + out), 0);
  expect_logprobs_match(out, d + "/expected_logprobs.jsonl", GetParam());
}

TEST_P(Golden, EveryParameterGradientMatchesPytorch) {
  const std::string d = dir_of(GetParam());
  const std::string out = d + "/trinity_grads.safetensors";
  ASSERT_EQ(run(kTrinity + " debug grad --model " + d + " --input " + d + "/tokens.jsonl --output " + out), 0);
  expect_grads_match(out, d + "/expected_grads.safetensors", GetParam());
}

// Activation checkpointing recomputes each layer in the backward: the same gradients.
TEST_P(Golden, CheckpointedGradientsMatchPytorch) {
  const std::string d = dir_of(GetParam());
  const std::string out = d + "/trinity_grads_ckpt.safetensors";
  ASSERT_EQ(
      run(kTrinity + " debug grad --checkpointing --model " + d + " --input " + d + "/tokens.jsonl --output " + out),
      0);
  expect_grads_match(out, d + "/expected_grads.safetensors", GetParam() + " (checkpointed)");
}

// A PEFT adapter (random A and B) on the base: logprobs, and the gradient of every lora_A / lora_B,
// against PyTorch through the merged weights W + alpha/r · B A.
TEST_P(Golden, LoraLogprobsAndAdapterGradientsMatchPytorch) {
  const std::string d = dir_of(GetParam());
  const std::string lp = d + "/trinity_lora_logprobs.jsonl", gr = d + "/trinity_lora_grads.safetensors";
  const std::string args = " --model " + d + " --adapter " + d + "/lora --input " + d + "/tokens.jsonl";
  ASSERT_EQ(run(kTrinity + " debug logprobs" + args + " --output " + lp), 0);
  expect_logprobs_match(lp, d + "/expected_lora_logprobs.jsonl", GetParam() + " + LoRA");
  ASSERT_EQ(run(kTrinity + " debug grad" + args + " --output " + gr), 0);
  expect_grads_match(gr, d + "/expected_lora_grads.safetensors", GetParam() + " LoRA");
  // Every adapter tensor has a gradient, and only those.
  EXPECT_EQ(model::SafetensorsFile::open(gr).names(),
            model::SafetensorsFile::open(d + "/lora/adapter_model.safetensors").names());
}

// `trinity export merge` writes a plain model that computes what base + adapter computes.
TEST_P(Golden, ExportMergeEqualsTheAdaptedModel) {
  const std::string d = dir_of(GetParam());
  const std::string merged = d + "/merged", lp = d + "/trinity_merged_logprobs.jsonl";
  ASSERT_EQ(run(kTrinity + " export merge --base " + d + " --adapter " + d + "/lora --out " + merged +
                " --dtype float32 >/dev/null"),
            0);
  EXPECT_FALSE(file::exists(merged + "/adapter_config.json"));
  ASSERT_EQ(run(kTrinity + " debug logprobs --model " + merged + " --input " + d + "/tokens.jsonl --output " + lp), 0);
  expect_logprobs_match(lp, d + "/expected_lora_logprobs.jsonl", GetParam() + " merged");
}

TEST_P(Golden, AdamWTrajectoryMatchesPytorch) {
  const std::string d = dir_of(GetParam());
  json spec = json::parse(file::read_all(d + "/expected_adamw.json"));
  auto m = model::Transformer::load(d);
  std::vector<std::vector<int32_t>> seqs;
  for (const auto& j : read_jsonl(d + "/tokens.jsonl")) seqs.push_back(j["tokens"].get<std::vector<int32_t>>());
  const auto batch = model::Batch::next_token(seqs);
  trainer::AdamWConfig oc;
  oc.lr = spec["lr"];
  oc.beta1 = spec["betas"][0];
  oc.beta2 = spec["betas"][1];
  oc.eps = spec["eps"];
  oc.weight_decay = spec["weight_decay"];
  trainer::AdamW opt(m.num_params(), oc);
  trainer::LrSchedule sched{"cosine", spec["warmup"], spec["total"], spec["min_lr_ratio"]};
  std::vector<float> lp, ent;
  const int steps = spec["total"];
  for (int s = 0; s < steps; ++s) {
    m.zero_grad();
    m.forward(batch, lp, ent);
    double loss = 0;
    for (float x : lp) loss -= x;
    loss /= static_cast<double>(lp.size());
    m.backward(std::vector<float>(lp.size(), -1.0f / static_cast<float>(lp.size())), {});
    const double norm = trainer::clip_grad_norm(m.grads(), m.num_params(), spec["grad_clip"]);
    opt.step(m.params(), m.grads(), oc.lr * sched.factor(s));
    const double want = spec["losses"][static_cast<size_t>(s)];
    const double want_norm = spec["grad_norms"][static_cast<size_t>(s)];
    EXPECT_NEAR(loss, want, 2e-4 * std::max(1.0, std::abs(want))) << GetParam() << " step " << s;
    EXPECT_NEAR(norm, want_norm, 1e-3 * want_norm) << GetParam() << " grad norm at step " << s;
  }
  m.forward(batch, lp, ent);
  double final_loss = 0;
  for (float x : lp) final_loss -= x;
  final_loss /= static_cast<double>(lp.size());
  EXPECT_NEAR(final_loss, spec["final_loss"].get<double>(), 2e-4 * std::max(1.0, final_loss));
  std::printf("%s: loss %.5f -> %.5f (torch %.5f)\n", GetParam().c_str(),
              spec["losses"][0].get<double>(), final_loss, spec["final_loss"].get<double>());
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, Golden, ::testing::Values("qwen2", "qwen3", "llama"));
