// model::StepWeights, the weights of a job's step directory as checkpoint-synced explorers load
// them: a LoRA step (only actor/lora_adapter) is the base plus that adapter, computing exactly what
// the trainer's model computes, and every version shares one base (the engine reuses its packed
// copy); a plain step loads its exact weights (actor/ before huggingface/); a step holding neither is
// one clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file.h"
#include "core/rng.h"
#include "lora_test_util.h"
#include "model/infer_weights.h"
#include "model/lora.h"
#include "model/step_weights.h"
#include "model/transformer.h"
#include "test_util.h"

using namespace trinity;
using namespace trinity::model;

namespace {

void set_adapters(Transformer& m, uint64_t seed) {
  Rng r(seed);
  for (auto& t : m.lora_tensors())
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(r.normal()) * 0.3f;
}

std::vector<float> flat(const std::vector<tensor::Tensor>& ts) {
  std::vector<float> out;
  for (const auto& t : ts) out.insert(out.end(), t.f32(), t.f32() + t.numel());
  return out;
}

std::vector<float> logprobs(const Transformer& m) {
  std::vector<float> lp, ent;
  const_cast<Transformer&>(m).forward(model::testing::random_batch({5, 7}, 3), lp, ent);
  return lp;
}

void save_step_adapter(const Transformer& m, const std::string& step, const std::string& base) {
  file::make_dirs(step + "/actor");
  save_adapter(m, step_adapter_dir(step), base);
}

}  // namespace

TEST(StepWeights, LoraStepIsTheBasePlusItsAdapterOnOneSharedBase) {
  model::testing::ScratchDir d;
  const std::string base = d.file("base");
  {
    Transformer f(model::testing::tiny_lora_config(Arch::kQwen2));
    f.init_random(11, 0.2f);
    SaveOptions so;
    so.dtype = tensor::DType::kBF16;  // held as stored: the layer weights stay bf16
    f.save(base, so);
  }
  // The trainer: the base with adapters, two versions of them.
  Transformer t = Transformer::load(base, HeadKind::kLm, lossless_storage(base));
  ASSERT_EQ(t.weight_storage(), WeightStorage::kBF16);
  t.add_lora(model::testing::lora4(), 7);
  set_adapters(t, 1);
  save_step_adapter(t, d.file("global_step_1"), base);
  const std::vector<float> lp1 = logprobs(t), a1 = flat(t.lora_tensors());
  set_adapters(t, 2);
  save_step_adapter(t, d.file("global_step_2"), base);

  StepWeights w(base);
  const auto m1 = w.load(d.file("global_step_1"));
  ASSERT_TRUE(m1->has_lora());
  EXPECT_EQ(flat(m1->lora_tensors()), a1);
  const std::vector<float> got = logprobs(*m1);
  ASSERT_EQ(got.size(), lp1.size());
  EXPECT_EQ(std::memcmp(got.data(), lp1.data(), sizeof(float) * got.size()), 0) << "what the trainer computes";

  const auto m2 = w.load(d.file("global_step_2"));
  EXPECT_EQ(flat(m2->lora_tensors()), flat(t.lora_tensors()));
  EXPECT_EQ(m2->held(), w.base()->held()) << "the base is shared, not loaded again";
  EXPECT_EQ(m2->params(), w.base()->params());
  ASSERT_NE(m1->frozen_base_id(), nullptr);
  EXPECT_EQ(m2->frozen_base_id(), m1->frozen_base_id());
  const auto p1 = pack_infer_weights(*m1, tensor::PackDType::kF32, LoraPacking::kUnmerged);
  const auto p2 = pack_infer_weights(*m2, tensor::PackDType::kF32, LoraPacking::kUnmerged, p1.get());
  EXPECT_EQ(p2->base, p1->base) << "the engine packs the base once";
  EXPECT_EQ(std::memcmp(logprobs(*m2).data(), logprobs(t).data(), sizeof(float) * lp1.size()), 0);

  // A start adapter (model.lora_configs[].path) on the same base.
  const auto s = w.with_adapter(step_adapter_dir(d.file("global_step_1")));
  EXPECT_EQ(flat(s->lora_tensors()), a1);
  EXPECT_EQ(s->held(), w.base()->held());
}

TEST(StepWeights, PlainStepLoadsItsExactWeights) {
  model::testing::ScratchDir d;
  Transformer f(model::testing::tiny_lora_config(Arch::kLlama));
  f.init_random(5, 0.2f);
  const std::string step = d.file("global_step_3");
  SaveOptions bf;
  bf.dtype = tensor::DType::kBF16;
  f.save(step + "/huggingface", bf);
  StepWeights w(d.file("unused_base"));  // a plain step never reads the base
  const auto rounded = w.load(step);
  EXPECT_FALSE(rounded->has_lora());
  EXPECT_EQ(rounded->weight_storage(), WeightStorage::kBF16) << "held as stored";
  f.save(step + "/actor");  // the exact fp32 copy wins over the rounded export
  const auto exact = w.load(step);
  EXPECT_EQ(exact->weight_storage(), WeightStorage::kF32);
  EXPECT_EQ(std::memcmp(exact->params(), f.params(), sizeof(float) * static_cast<size_t>(f.num_params())), 0);

  file::make_dirs(d.file("global_step_4"));
  EXPECT_THROW_MSG(w.load(d.file("global_step_4")), IoError, "global_step_4: holds no weights", "actor/lora_adapter");
}
