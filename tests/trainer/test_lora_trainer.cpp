// The trainer with LoRA: a GRPO / PPO step moves only the adapters (the base bitwise unchanged, the
// optimizer sized to the adapters), the reference policy is the base (KL of a fresh adapter is 0),
// snapshot() carries the adapters (merged it is the merged model), and a checkpoint (PEFT adapter in
// actor/lora_adapter, merged huggingface/, no merged fp32 copy) resumes bitwise, a sync writes only
// the adapter; a LoRA checkpoint refuses a config without LoRA and vice versa.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/file.h"
#include "model/lora.h"
#include "trainer/checkpoint_io.h"
#include "trainer_test_util.h"

using namespace trinity;
using namespace trinity::trainer;
namespace fs = std::filesystem;

namespace {

std::vector<buffer::Experience> group_batch(uint64_t seed) {
  Rng rng(seed);
  std::vector<buffer::Experience> b;
  for (int run = 0; run < 4; ++run) b.push_back(test::make_exp(rng, 3, 4, 37, 0, run, run % 2 ? 1.0 : 0.0));
  for (int run = 0; run < 4; ++run) b.push_back(test::make_exp(rng, 2, 3, 37, 1, run, run < 2 ? 1.0 : 0.0));
  return b;
}

model::LoraConfig lora4() {
  model::LoraConfig c;
  c.rank = 4;
  c.alpha = 8;
  return c;
}

PolicyTrainer make_lora_trainer(const std::string& algorithm, bool ckpt = false) {
  model::Transformer m = test::tiny_model();
  m.add_lora(lora4(), 5);
  m.set_gradient_checkpointing(ckpt);
  algo::AlgorithmSpec spec;
  spec.algorithm_type = algorithm;
  if (algorithm == "grpo_verl") spec.kl_loss_fn_args = {{"kl_coef", 0.1}};
  TrainerOptions o;
  o.optim.lr = 1e-2;
  o.critic_optim.lr = 1e-3;
  o.micro_batch_size = 3;
  return PolicyTrainer(std::move(m), spec, o);
}

std::string fresh_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("trinity_lora_trainer_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::vector<float> flat(const std::vector<tensor::Tensor>& ts) {
  std::vector<float> out;
  for (const auto& t : ts) out.insert(out.end(), t.f32(), t.f32() + t.numel());
  return out;
}

}  // namespace

TEST(LoraTrainer, StepsMoveOnlyTheAdaptersAndTheReferenceIsTheBase) {
  for (const std::string alg : {"grpo_verl", "ppo"}) {
    PolicyTrainer t = make_lora_trainer(alg);
    const model::Transformer base = test::tiny_model();
    EXPECT_EQ(t.reference(), nullptr) << "no copy of the base for the reference";
    EXPECT_EQ(static_cast<int64_t>(t.optimizer().m().size()), t.actor().num_trainable());
    const auto before = flat(t.actor().lora_tensors());
    const auto m1 = t.train_step(group_batch(1), 1);
    if (alg == "grpo_verl") {
      EXPECT_NEAR(m1.at("actor/kl_loss"), 0.0, 1e-6) << "a fresh adapter is the base: KL 0";
    }
    t.train_step(group_batch(2), 2);
    const auto m3 = t.train_step(group_batch(3), 3);
    EXPECT_TRUE(test::same_params(t.actor(), base)) << alg << ": the base weights must not move";
    EXPECT_NE(flat(t.actor().lora_tensors()), before) << alg << ": the adapters must move";
    if (alg == "grpo_verl") {
      EXPECT_GT(m3.at("actor/kl_loss"), 0.0) << "trained adapters differ from the base";
    }
    // snapshot(): the base as held plus a copy of the adapters (the engine merges them into its
    // packed copy); it computes what the adapted actor computes, and merged it is the merged model.
    const auto snap = t.snapshot();
    EXPECT_TRUE(snap->has_lora() && snap->lora_enabled());
    EXPECT_TRUE(test::same_params(*snap, base));
    EXPECT_EQ(flat(snap->lora_tensors()), flat(t.actor().lora_tensors()));
    const auto b = model::Batch::next_token({{1, 5, 9, 2, 7, 3}});
    std::vector<float> lp1, lp2, lp3, ent;
    t.actor().forward(b, lp1, ent);
    const_cast<model::Transformer&>(*snap).forward(b, lp2, ent);
    EXPECT_EQ(lp1, lp2);
    model::Transformer merged = model::merged_copy(*snap);
    EXPECT_FALSE(merged.has_lora());
    EXPECT_FALSE(test::same_params(merged, base));
    merged.forward(b, lp3, ent);
    for (size_t i = 0; i < lp1.size(); ++i) EXPECT_NEAR(lp1[i], lp3[i], 1e-5);
  }
}

TEST(LoraTrainer, CheckpointingGivesTheSameSteps) {
  PolicyTrainer a = make_lora_trainer("grpo_verl", false), b = make_lora_trainer("grpo_verl", true);
  for (int s = 1; s <= 2; ++s) {
    const auto ma = a.train_step(group_batch(10 + s), s);
    const auto mb = b.train_step(group_batch(10 + s), s);
    EXPECT_NEAR(ma.at("actor/pg_loss"), mb.at("actor/pg_loss"), 1e-6);
  }
  const auto fa = flat(a.actor().lora_tensors()), fb = flat(b.actor().lora_tensors());
  for (size_t i = 0; i < fa.size(); ++i) ASSERT_NEAR(fa[i], fb[i], 1e-5);
}

TEST(LoraTrainer, CheckpointHoldsAPeftAdapterAndResumesBitwise) {
  const std::string job = fresh_dir("resume");
  PolicyTrainer a = make_lora_trainer("grpo_verl");
  a.train_step(group_batch(1), 1);
  const std::string dir = save_trainer_checkpoint(job, 1, a);
  EXPECT_TRUE(model::is_adapter_dir(dir + "/actor/lora_adapter"));
  const model::LoraConfig saved = model::read_adapter_config(dir + "/actor/lora_adapter");
  EXPECT_EQ(saved.rank, 4);
  EXPECT_EQ(saved.alpha, 8.0);
  EXPECT_EQ(saved.targets(), a.actor().lora_config().targets());
  // huggingface/ is the merged model.
  const model::Transformer hf = model::Transformer::load(dir + "/huggingface");
  EXPECT_TRUE(test::same_params(hf, model::merged_copy(*a.snapshot())));
  a.train_step(group_batch(2), 2);

  PolicyTrainer b = make_lora_trainer("grpo_verl");
  const auto ck = load_trainer_checkpoint(job, b);
  ASSERT_TRUE(ck.has_value());
  b.train_step(group_batch(2), 2);
  EXPECT_EQ(flat(a.actor().lora_tensors()), flat(b.actor().lora_tensors()));
  EXPECT_EQ(a.optimizer().m(), b.optimizer().m());
  EXPECT_TRUE(test::same_params(a.actor(), b.actor()));

  // The adapter is the exact state: a bf16 export gets no merged fp32 copy in actor/, and a sync
  // writes only the adapter (model::StepWeights loads base + adapter).
  CheckpointOptions bf;
  bf.hf_dtype = tensor::DType::kBF16;
  const std::string d2 = save_trainer_checkpoint(job, 2, a, "{}", bf);
  EXPECT_TRUE(fs::exists(d2 + "/huggingface/config.json"));
  EXPECT_FALSE(fs::exists(d2 + "/actor/config.json"));
  EXPECT_TRUE(model::is_adapter_dir(d2 + "/actor/lora_adapter"));
  EXPECT_EQ(save_sync_weights(job, 3, a), job + "/global_step_3/actor/lora_adapter");
  EXPECT_TRUE(model::is_adapter_dir(job + "/global_step_3/actor/lora_adapter"));
  EXPECT_FALSE(fs::exists(job + "/global_step_3/huggingface"));
  PolicyTrainer b2 = make_lora_trainer("grpo_verl");
  ASSERT_EQ(load_trainer_checkpoint(job, b2)->step, 2);
  EXPECT_EQ(flat(a.actor().lora_tensors()), flat(b2.actor().lora_tensors()));

  // A trainer without LoRA cannot resume it (and the other way round).
  algo::AlgorithmSpec spec;
  spec.algorithm_type = "grpo_verl";
  PolicyTrainer full(test::tiny_model(), spec, {});
  EXPECT_THROW(load_trainer_checkpoint(job, full), ValueError);
  const std::string job2 = fresh_dir("full");
  save_trainer_checkpoint(job2, 1, full);
  PolicyTrainer c = make_lora_trainer("grpo_verl");
  EXPECT_THROW(load_trainer_checkpoint(job2, c), ValueError);
  fs::remove_all(job);
  fs::remove_all(job2);
}

// Full fine-tuning from bf16 values: a reference copy held in bf16 (reference_storage kBF16, what the
// launcher picks for a bf16 checkpoint) gives bitwise the same training as an fp32 copy; a LoRA
// actor on a bf16-held base trains the same adapters as on an fp32 base of equal values.
TEST(LoraTrainer, Bf16HeldReferenceAndBaseTrainAsFp32) {
  model::Transformer base = test::tiny_model();
  {
    model::Transformer held(base.config(), model::HeadKind::kLm, model::WeightStorage::kBF16);
    held.copy_weights_from(base);  // round the layer weights to bf16 values
    base.copy_weights_from(held);
  }
  algo::AlgorithmSpec spec;
  spec.algorithm_type = "grpo_verl";
  spec.kl_loss_fn_args = {{"kl_coef", 0.1}};
  std::vector<float> kl[2], weights[2];
  for (int i = 0; i < 2; ++i) {
    TrainerOptions o;
    o.optim.lr = 1e-2;
    o.micro_batch_size = 3;
    o.reference_storage = i == 0 ? model::WeightStorage::kF32 : model::WeightStorage::kBF16;
    PolicyTrainer t(clone(base, model::WeightStorage::kF32), spec, o);
    ASSERT_NE(t.reference(), nullptr);
    EXPECT_EQ(t.reference()->weight_storage(), o.reference_storage);
    for (int s = 1; s <= 3; ++s)
      kl[i].push_back(static_cast<float>(t.train_step(group_batch(s), s).at("actor/kl_loss")));
    weights[i].assign(t.actor().params(), t.actor().params() + t.actor().num_params());
  }
  EXPECT_EQ(kl[0], kl[1]);
  EXPECT_NE(kl[0].back(), 0.0f) << "the actor moved away from the reference";
  EXPECT_TRUE(weights[0] == weights[1]);

  std::vector<float> adapters[2];
  for (int i = 0; i < 2; ++i) {
    model::Transformer m = clone(base, i == 0 ? model::WeightStorage::kF32 : model::WeightStorage::kBF16);
    m.add_lora(lora4(), 5);
    TrainerOptions o;
    o.optim.lr = 1e-2;
    o.micro_batch_size = 3;
    PolicyTrainer t(std::move(m), spec, o);
    for (int s = 1; s <= 3; ++s) t.train_step(group_batch(s), s);
    adapters[i] = flat(t.actor().lora_tensors());
  }
  EXPECT_TRUE(adapters[0] == adapters[1]);
}
