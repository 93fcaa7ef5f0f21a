// Trainer checkpoints: save -> load -> next step is bitwise identical to never stopping (actor,
// critic, optimizer moments, KL coefficient), also when the HF export is bf16 (the exact fp32 weights
// are kept in actor/), a failed save leaves no partial directory, pruning keeps the newest N, and
// sync-only weights carry no .full_checkpoint marker.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "model/checkpoint_dtype.h"
#include "model/safetensors.h"
#include "trainer/checkpoint_io.h"
#include "trainer_test_util.h"

using namespace trinity;
using namespace trinity::trainer;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("trinity_trainer_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::vector<buffer::Experience> ppo_batch(uint64_t seed) {
  Rng rng(seed);
  std::vector<buffer::Experience> b;
  for (int task = 0; task < 4; ++task) b.push_back(test::make_exp(rng, 3, 2 + task, 37, task, 0, task % 2 ? 1.0 : 0.0));
  return b;
}

PolicyTrainer make_trainer() {
  algo::AlgorithmSpec spec;
  spec.algorithm_type = "ppo";
  spec.kl_penalty_fn = "k1";  // adaptive controller state must survive the restart
  spec.kl_penalty_fn_args = {{"adaptive", true}, {"target_kl", 0.01}, {"horizon", 100}};
  TrainerOptions o;
  o.optim.lr = 1e-3;
  o.critic_optim.lr = 1e-3;
  o.schedule = LrSchedule{"cosine", 1, 10, 0.1};
  o.micro_batch_size = 2;
  return PolicyTrainer(test::tiny_model(), spec, o);
}

TEST(Checkpoint, ResumeIsBitwiseIdentical) {
  const std::string job = fresh_dir("resume");
  PolicyTrainer a = make_trainer();
  a.train_step(ppo_batch(1), 1);
  const std::string dir = save_trainer_checkpoint(job, 1, a, R"({"reader": {"offset": 4}})");
  EXPECT_TRUE(file::exists(dir + "/.full_checkpoint"));
  EXPECT_TRUE(file::exists(dir + "/huggingface/config.json"));
  EXPECT_TRUE(file::exists(dir + "/critic/model.safetensors"));
  EXPECT_TRUE(file::exists(dir + "/optimizer.safetensors"));
  EXPECT_EQ(read_iteration(job, "latest_checkpointed_iteration.txt"), 1);
  const auto ma = a.train_step(ppo_batch(2), 2);

  PolicyTrainer b = make_trainer();
  const auto ck = load_trainer_checkpoint(job, b);
  ASSERT_TRUE(ck.has_value());
  EXPECT_EQ(ck->step, 1);
  EXPECT_EQ(ck->extra_state_json, R"({"reader":{"offset":4}})");
  EXPECT_EQ(b.optimizer().steps(), 1);
  const auto mb = b.train_step(ppo_batch(2), 2);
  EXPECT_TRUE(test::same_params(a.actor(), b.actor()));
  EXPECT_TRUE(test::same_params(*a.critic(), *b.critic()));
  EXPECT_EQ(a.optimizer().m(), b.optimizer().m());
  EXPECT_EQ(a.algorithm().kl_penalty().coef(), b.algorithm().kl_penalty().coef());
  EXPECT_EQ(ma.at("actor/pg_loss"), mb.at("actor/pg_loss"));
  EXPECT_EQ(ma.at("critic/vf_loss"), mb.at("critic/vf_loss"));
  // A trainer that did not load differs (the check can fail).
  PolicyTrainer c = make_trainer();
  c.train_step(ppo_batch(2), 2);
  EXPECT_FALSE(test::same_params(a.actor(), c.actor()));
  fs::remove_all(job);
}

// The JSON header of a safetensors file, read by hand (8-byte little-endian length, then JSON).
nlohmann::json safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string h(static_cast<size_t>(n), '\0');
  in.read(h.data(), static_cast<std::streamsize>(n));
  return nlohmann::json::parse(h);
}

TEST(Checkpoint, Bf16ExportIsRoundedFp32AndResumeStaysBitwise) {
  const std::string job = fresh_dir("bf16");
  // A bf16 base model is detected as such (the launcher's trainer.save_hf_dtype: auto).
  model::SaveOptions bf16;
  bf16.dtype = tensor::DType::kBF16;
  test::tiny_model().save(job + "/base_bf16", bf16);
  test::tiny_model().save(job + "/base_f32");
  EXPECT_EQ(model::stored_dtype(job + "/base_bf16"), tensor::DType::kBF16);
  EXPECT_EQ(model::stored_dtype(job + "/base_f32"), tensor::DType::kF32);

  PolicyTrainer a = make_trainer();
  a.train_step(ppo_batch(1), 1);
  CheckpointOptions o;
  o.hf_dtype = tensor::DType::kBF16;
  const std::string dir = save_trainer_checkpoint(job, 1, a, "{}", o);
  const std::string hf = dir + "/huggingface";
  const nlohmann::json header = safetensors_header(hf + "/model.safetensors");
  size_t tensors = 0;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    ++tensors;
    EXPECT_EQ(entry["dtype"], "BF16") << name;
  }
  EXPECT_EQ(tensors, a.actor().param_specs().size());
  EXPECT_EQ(nlohmann::json::parse(file::read_all(hf + "/config.json"))["torch_dtype"], "bfloat16");
  EXPECT_LT(fs::file_size(hf + "/model.safetensors"), fs::file_size(dir + "/actor/model.safetensors") * 6 / 10);
  // The export reloads as the fp32 weights rounded to nearest even, value by value.
  const auto ws = model::WeightSource::open_dir(hf);
  const auto params = a.actor().param_tensors();
  for (size_t i = 0; i < params.size(); ++i) {
    const tensor::Tensor& t = ws.get(a.actor().param_specs()[i].name);
    ASSERT_EQ(t.dtype(), tensor::DType::kBF16);
    ASSERT_EQ(t.numel(), params[i].numel());
    const auto* bits = static_cast<const uint16_t*>(t.data());
    for (int64_t k = 0; k < t.numel(); ++k)
      ASSERT_EQ(bits[k], tensor::f32_to_bf16(params[i].f32()[k])) << a.actor().param_specs()[i].name << "[" << k << "]";
  }
  // Resume reads the exact fp32 weights (actor/), not the rounded export: still bitwise.
  EXPECT_EQ(model::exact_weights_dir(dir), dir + "/actor");
  const auto ma = a.train_step(ppo_batch(2), 2);
  PolicyTrainer b = make_trainer();
  ASSERT_TRUE(load_trainer_checkpoint(job, b).has_value());
  const auto mb = b.train_step(ppo_batch(2), 2);
  EXPECT_TRUE(test::same_params(a.actor(), b.actor()));
  EXPECT_EQ(ma.at("actor/pg_loss"), mb.at("actor/pg_loss"));
  // An fp32 export has no actor/ copy.
  const std::string dir2 = save_trainer_checkpoint(job, 2, a);
  EXPECT_FALSE(fs::exists(dir2 + "/actor"));
  EXPECT_EQ(model::exact_weights_dir(dir2), dir2 + "/huggingface");
  EXPECT_EQ(safetensors_header(dir2 + "/huggingface/model.safetensors")["model.embed_tokens.weight"]["dtype"], "F32");
  fs::remove_all(job);
}

TEST(Checkpoint, FailedSaveLeavesNoPartialDirectory) {
  const std::string job = fresh_dir("atomic");
  PolicyTrainer a = make_trainer();
  save_trainer_checkpoint(job, 1, a);
  // Invalid extra state fails after nothing / the weights were written: no global_step_2, no tmp dir.
  EXPECT_THROW(save_trainer_checkpoint(job, 2, a, "{not json"), ValueError);
  // A failure mid-way (the tokenizer source does not exist) after the tmp dir was created.
  CheckpointOptions bad;
  bad.tokenizer_dir = job + "/no_such_tokenizer";
  EXPECT_THROW(save_trainer_checkpoint(job, 3, a, "{}", bad), Error);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(job)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"global_step_1", "latest_checkpointed_iteration.txt",
                                             "latest_state_dict_iteration.txt"}));
  EXPECT_EQ(read_iteration(job, "latest_checkpointed_iteration.txt"), 1);
  // A stale tmp dir of a dead process is cleaned by the next save.
  fs::create_directories(job + "/global_step_9.tmp-999999999");
  save_trainer_checkpoint(job, 4, a);
  EXPECT_FALSE(fs::exists(job + "/global_step_9.tmp-999999999"));
  fs::remove_all(job);
}

TEST(Checkpoint, PruneKeepsNewestAndSyncWeightsHaveNoMarker) {
  const std::string job = fresh_dir("prune");
  PolicyTrainer a = make_trainer();
  CheckpointOptions o;
  o.max_checkpoints_to_keep = 2;
  for (int s = 1; s <= 4; ++s) save_trainer_checkpoint(job, s, a, "{}", o);
  EXPECT_FALSE(fs::exists(job + "/global_step_1"));
  EXPECT_FALSE(fs::exists(job + "/global_step_2"));
  EXPECT_TRUE(fs::exists(job + "/global_step_3/.full_checkpoint"));
  EXPECT_TRUE(fs::exists(job + "/global_step_4/.full_checkpoint"));
  const std::string hf = save_sync_weights(job, 5, a);
  EXPECT_TRUE(fs::exists(hf + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(job + "/global_step_5/.full_checkpoint"));
  EXPECT_FALSE(fs::exists(job + "/global_step_5/optimizer.safetensors"));
  EXPECT_EQ(read_iteration(job, "latest_state_dict_iteration.txt"), 5);
  EXPECT_EQ(read_iteration(job, "latest_checkpointed_iteration.txt"), 4);
  const auto loaded = model::Transformer::load(hf);
  EXPECT_TRUE(test::same_params(loaded, a.actor()));
  EXPECT_EQ(prune_checkpoints(job, 1), 1);  // sync-only dirs are not counted or removed
  EXPECT_TRUE(fs::exists(job + "/global_step_5"));
  PolicyTrainer b = make_trainer();
  EXPECT_EQ(load_trainer_checkpoint(fresh_dir("empty"), b), std::nullopt);
  fs::remove_all(job);
}

}  // namespace
