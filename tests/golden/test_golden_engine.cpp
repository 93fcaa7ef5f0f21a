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

}  // namespace

TEST_P(Golden, LogprobsAndEntropyMatchPytorch) {
  const std::string d = dir_of(GetParam());
  const std::string out = d + "/trinity_logprobs.jsonl";
  ASSERT_EQ(run(kTrinity + " debug logprobs --model " + d + " --input " + d + "/tokens.jsonl --output " + out), 0);
  auto got = read_jsonl(out), want = read_jsonl(d + "/expected_logprobs.jsonl");
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
        EXPECT_LT(err, 3e-5) << GetParam() << " " << key << " seq " << i << " pos " << t;
      }
    }
  }
  std::printf("%s: max |logprob/entropy - torch| = %.2e\n", GetParam().c_str(), max_err);
}

TEST_P(Golden, EveryParameterGradientMatchesPytorch) {
  const std::string d = dir_of(GetParam());
  const std::string out = d + "/trinity_grads.safetensors";
  ASSERT_EQ(run(kTrinity + " debug grad --model " + d + " --input " + d + "/tokens.jsonl --output " + out), 0);
  auto got = model::SafetensorsFile::open(out);
  auto want = model::SafetensorsFile::open(d + "/expected_grads.safetensors");
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
    EXPECT_LT(rel, 3e-5) << GetParam() << " gradient of " << name;
  }
  std::printf("%s: worst relative L2 gradient error = %.2e\n", GetParam().c_str(), worst);
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
