// LoRA end to end with the real binary: a GRPO run (mode both) with model.lora_configs and
// activation checkpointing writes PEFT adapters in actor/lora_adapter and a merged huggingface/
// (the base model directory untouched); `trinity export merge` of the saved adapter reproduces that
// merged checkpoint byte for byte; a rerun resumes the adapter; a new run starts from the adapter.
#include <gtest/gtest.h>

#include <httplib.h>
#include <signal.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "e2e_util.h"

using namespace trinity::test;

namespace {

// `trinity serve` on a free port with `extra` flags; returns the greedy completion of `prompt` (text
// and token logprobs), then stops the server.
json serve_completion(const std::string& root, const std::string& name, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {trinity_bin(), "serve", "--port", "0", "--no-access-log"};
  args.insert(args.end(), extra.begin(), extra.end());
  Proc p = spawn(args, root + "/" + name + ".log");
  int port = 0;
  wait_for(
      [&] {
        const std::string out = slurp(p.log);
        const size_t at = out.find("listening on http://127.0.0.1:");
        if (at != std::string::npos) port = std::atoi(out.c_str() + at + 30);
        return port > 0 || out.find("error") != std::string::npos;
      },
      60);
  json res;
  if (port > 0) {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(60, 0);
    const json req = {{"prompt", "12+30="}, {"max_tokens", 6}, {"temperature", 0.0}, {"logprobs", 1}};
    auto r = cli.Post("/v1/completions", req.dump(), "application/json");
    if (r && r->status == 200) res = json::parse(r->body)["choices"][0];
  }
  kill(p.pid, SIGTERM);
  wait_exit(p, 30);
  EXPECT_GT(port, 0) << slurp(p.log);
  return res;
}

std::string lora_yaml(const std::string& name, const std::string& lora_extra = "") {
  std::string y = base_yaml(shared_root(), name);
  y.insert(y.find("  max_prompt_tokens"),
           "  lora_configs:\n    - name: lora\n      lora_rank: 4\n      lora_alpha: 8\n" + lora_extra);
  y += "  gradient_checkpointing: true\n";
  // Byte-level prompts with the chat template need more than the base config's 24 tokens (a longer
  // prompt becomes a masked dummy that trains nothing).
  y.replace(y.find("max_prompt_tokens: 24"), 21, "max_prompt_tokens: 56");
  // The tiny model earns no reward (all advantages 0): an entropy bonus gives the adapters a gradient.
  y.insert(y.find("  optimizer:"), "  entropy_loss_fn: default\n  entropy_loss_fn_args: {entropy_coef: 0.5}\n");
  return y;
}

}  // namespace

TEST(LoraRun, TrainsAdaptersSavesPeftAndResumes) {
  const std::string root = shared_root();
  for (const char* j : {"lora_a", "lora_b", "lora_c"}) fs::remove_all(job_dir(root, j));
  const std::string base_bytes = slurp(root + "/model/model.safetensors");
  const std::string cfg = write_config(root, "lora_a", lora_yaml("lora_a"));
  RunOut r = trinity::test::trinity({"run", "--config", cfg}, root + "/lora_a.log", 120);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("trainable parameters of"), std::string::npos) << r.out;
  const std::string job = job_dir(root, "lora_a");
  const std::string step4 = job + "/global_step_4";
  ASSERT_TRUE(fs::exists(step4 + "/actor/lora_adapter/adapter_config.json"));
  ASSERT_TRUE(fs::exists(step4 + "/actor/lora_adapter/adapter_model.safetensors"));
  const json ac = json::parse(slurp(step4 + "/actor/lora_adapter/adapter_config.json"));
  EXPECT_EQ(ac["r"], 4);
  EXPECT_EQ(ac["lora_alpha"], 8.0);
  EXPECT_EQ(ac["target_modules"].size(), 7u);
  EXPECT_TRUE(slurp(root + "/model/model.safetensors") == base_bytes) << "the base model directory must not change";
  const std::string merged_bytes = slurp(step4 + "/huggingface/model.safetensors");
  EXPECT_TRUE(merged_bytes != base_bytes) << "the adapters trained, so the merged model differs from the base";
  const auto m = read_metrics(job);
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss").size(), 4u);
  EXPECT_GT(metric_values(m, "trainer", "actor/grad_norm").back(), 0.0);

  // export merge of the saved adapter == the run's merged huggingface/ export.
  r = trinity::test::trinity({"export", "merge", "--base", root + "/model", "--adapter", step4 + "/actor/lora_adapter",
                              "--out", root + "/lora_a_merged"},
                             root + "/lora_a_merge.log");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(slurp(root + "/lora_a_merged/model.safetensors") == merged_bytes) << "export merge != the run's export";

  // `trinity serve --model BASE --adapter DIR` serves what the merged export serves (and not the base).
  const json with_adapter =
      serve_completion(root, "serve_adapter", {"--model", root + "/model", "--adapter", step4 + "/actor/lora_adapter"});
  const json merged = serve_completion(root, "serve_merged", {"--model", root + "/lora_a_merged"});
  const json base = serve_completion(root, "serve_base", {"--model", root + "/model"});
  ASSERT_TRUE(with_adapter.is_object() && merged.is_object() && base.is_object());
  EXPECT_EQ(with_adapter["text"], merged["text"]);
  const auto& la = with_adapter["logprobs"]["token_logprobs"];
  const auto& lm = merged["logprobs"]["token_logprobs"];
  const auto& lb = base["logprobs"]["token_logprobs"];
  ASSERT_EQ(la.size(), lm.size());
  double vs_base = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    EXPECT_NEAR(la[i].get<double>(), lm[i].get<double>(), 1e-4) << "token " << i;
    if (i < lb.size()) vs_base = std::max(vs_base, std::abs(la[i].get<double>() - lb[i].get<double>()));
  }
  EXPECT_GT(vs_base, 1e-6) << "the adapter changes what is served";

  // Resume: two more steps on top of the adapter of step 4.
  r = trinity::test::trinity({"run", "--config", cfg, "--set", "buffer.total_steps=6"}, root + "/lora_a2.log", 120);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(job + "/global_step_6/actor/lora_adapter/adapter_model.safetensors"));
  const auto m2 = read_metrics(job);
  EXPECT_EQ(metric_steps(m2, "trainer", "actor/pg_loss").back(), 6);

  // A new job starting from that adapter: its first rollouts use the merged weights.
  const std::string cfg_b =
      write_config(root, "lora_b", lora_yaml("lora_b", "      path: " + step4 + "/actor/lora_adapter\n"));
  r = trinity::test::trinity(
      {"run", "--config", cfg_b, "--set", "buffer.total_steps=2", "--set", "trainer.save_interval=2"},
      root + "/lora_b.log", 120);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("adapter_config.json wins"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(job_dir(root, "lora_b") + "/global_step_2/actor/lora_adapter/adapter_model.safetensors"));

  // A bad adapter path is one clear error.
  const std::string cfg_c = write_config(root, "lora_c", lora_yaml("lora_c", "      path: " + root + "/nowhere\n"));
  r = trinity::test::trinity({"run", "--config", cfg_c}, root + "/lora_c.log", 60);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("not a PEFT adapter directory"), std::string::npos) << r.out;
}

// A bf16 rollout engine with the trainer's rollout correction: the mismatch to the fp32 trainer is
// measured and the importance weights applied; with the fp32 engine (the default) the logprobs agree.
TEST(LoraRun, Bf16RolloutsWithTruncatedImportanceSampling) {
  const std::string root = shared_root();
  double kl[2] = {0, 0}, ratio_max[2] = {0, 0};
  int i = 0;
  for (const char* dtype : {"float32", "bfloat16"}) {
    const std::string name = std::string("tis_") + dtype;
    fs::remove_all(job_dir(root, name));
    std::string y = lora_yaml(name);
    y += "  rollout_correction: {bypass_mode: false, rollout_is: token, rollout_is_threshold: 2.0}\n";
    y.replace(y.find("explorer:\n"), 10, std::string("explorer:\n  rollout_model: {weight_dtype: ") + dtype + "}\n");
    const RunOut r =
        trinity::test::trinity({"run", "--config", write_config(root, name, y), "--set", "buffer.total_steps=2"},
                               root + "/" + name + ".log", 120);
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto m = read_metrics(job_dir(root, name));
    ASSERT_TRUE(has_metric(m, "trainer", "rollout_corr/kl")) << dtype;
    kl[i] = std::abs(metric_values(m, "trainer", "rollout_corr/kl").front());
    ratio_max[i] = metric_values(m, "trainer", "rollout_corr/ratio_max").front();
    EXPECT_TRUE(has_metric(m, "trainer", "rollout_corr/is_weight_mean")) << dtype;
    EXPECT_TRUE(has_metric(m, "trainer", "time/old_log_prob")) << dtype;
    ++i;
  }
  EXPECT_LT(kl[0], 1e-5) << "the fp32 engine's logprobs are the trainer's";
  EXPECT_LT(std::abs(ratio_max[0] - 1.0), 1e-3);
  EXPECT_GT(kl[1], 10 * kl[0] + 1e-6) << "bf16 weights change the rollout logprobs";
  EXPECT_GT(ratio_max[1], ratio_max[0]);
}

namespace {

// A PEFT adapter on q_proj of the shared tiny model (hidden 32, 1 layer) with B = 0: merging it
// changes nothing, so `export merge` with it converts a model's dtype exactly.
std::string zero_adapter(const std::string& dir) {
  fs::create_directories(dir);
  write_text(dir + "/adapter_config.json",
             R"({"peft_type": "LORA", "r": 1, "lora_alpha": 1, "target_modules": ["q_proj"], "lora_dropout": 0.0})");
  const std::string pre = "base_model.model.model.layers.0.self_attn.q_proj.";
  const json h = {{pre + "lora_A.weight", {{"dtype", "F32"}, {"shape", {1, 32}}, {"data_offsets", {0, 128}}}},
                  {pre + "lora_B.weight", {{"dtype", "F32"}, {"shape", {32, 1}}, {"data_offsets", {128, 256}}}}};
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  const float half = 0.5f;
  for (int i = 0; i < 32; ++i) bytes.append(reinterpret_cast<const char*>(&half), 4);  // A
  bytes.append(128, '\0');                                                             // B = 0
  write_text(dir + "/adapter_model.safetensors", bytes);
  return dir;
}

}  // namespace

// A bf16 base model stays bf16 in the LoRA trainer's memory (and the rollout engine's): the run
// trains exactly the adapters a run on the same values widened to fp32 trains, and its merged
// huggingface/ export is bf16 like its base.
TEST(LoraRun, Bf16BaseIsHeldAsStoredAndTrainsTheSameAdapters) {
  const std::string root = shared_root();
  const std::string zero = zero_adapter(root + "/zero_adapter");
  const std::string bf16 = root + "/model_bf16", f32 = root + "/model_bf16_as_f32";
  RunOut r = trinity::test::trinity(
      {"export", "merge", "--base", root + "/model", "--adapter", zero, "--out", bf16, "--dtype", "bfloat16"},
      root + "/to_bf16.log");
  ASSERT_EQ(r.rc, 0) << r.out;
  r = trinity::test::trinity({"export", "merge", "--base", bf16, "--adapter", zero, "--out", f32, "--dtype", "float32"},
                             root + "/to_f32.log");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string adapters[2], logs[2];
  int i = 0;
  for (const std::string& base : {bf16, f32}) {
    const std::string name = i == 0 ? "lora_held" : "lora_widened";
    fs::remove_all(job_dir(root, name));
    std::string y = lora_yaml(name);
    y.replace(y.find(root + "/model\n"), root.size() + 7, base + "\n");
    r = trinity::test::trinity({"run", "--config", write_config(root, name, y), "--set", "buffer.total_steps=2",
                                "--set", "trainer.save_interval=2"},
                               root + "/" + name + ".log", 120);
    ASSERT_EQ(r.rc, 0) << r.out;
    logs[i] = r.out;
    const std::string step = job_dir(root, name) + "/global_step_2";
    adapters[i] = slurp(step + "/actor/lora_adapter/adapter_model.safetensors");
    const json cfg = json::parse(slurp(step + "/huggingface/config.json"));
    EXPECT_EQ(cfg["torch_dtype"], i == 0 ? "bfloat16" : "float32") << "save_hf_dtype auto keeps the base's dtype";
    ++i;
  }
  EXPECT_NE(logs[0].find("layer weights held in bf16"), std::string::npos) << logs[0];
  EXPECT_EQ(logs[1].find("layer weights held in bf16"), std::string::npos) << logs[1];
  ASSERT_FALSE(adapters[0].empty());
  EXPECT_TRUE(adapters[0] == adapters[1]) << "bf16-held and fp32 bases of equal values train the same adapters";
}

// Explorer and trainer as two processes with LoRA (checkpoint sync): a sync writes only the adapter
// (no merged model), the explorer loads the base once and each version's adapter on it, so its
// rollout logprobs are the trainer's (the rollout correction's KL ~ 0 at every step while the
// versions advance); full checkpoints hold the adapter and the merged bf16 export, no fp32 copy.
TEST(LoraRun, ExploreAndTrainProcessesSyncOnlyTheAdapter) {
  const std::string root = shared_root();
  const std::string name = "lora_two_proc";
  fs::remove_all(job_dir(root, name));
  std::string y = lora_yaml(name);
  y += "  save_hf_dtype: bfloat16\n";
  y += "  rollout_correction: {bypass_mode: false, rollout_is: token, rollout_is_threshold: 2.0}\n";
  y += "synchronizer: {sync_timeout: 60}\n";
  const std::string cfg = write_config(root, name, y);
  const std::vector<std::string> common = {"--set", "buffer.trainer_input.experience_buffer.storage_type=sql",
                                           "--set", "buffer.trainer_input.experience_buffer.max_read_timeout=60",
                                           "--set", "explorer.eval_interval=100"};
  std::vector<std::string> ea = {trinity_bin(), "run", "--config", cfg, "--set", "mode=explore"};
  std::vector<std::string> ta = {trinity_bin(), "run", "--config", cfg, "--set", "mode=train"};
  ea.insert(ea.end(), common.begin(), common.end());
  ta.insert(ta.end(), common.begin(), common.end());
  Proc tp = spawn(ta, root + "/" + name + "_trainer.log");
  Proc ep = spawn(ea, root + "/" + name + "_explorer.log");
  const int erc = wait_exit(ep, 120), trc = wait_exit(tp, 120);
  ASSERT_EQ(erc, 0) << slurp(ep.log);
  ASSERT_EQ(trc, 0) << slurp(tp.log);
  const std::string job = job_dir(root, name);
  const auto m = read_metrics(job);
  EXPECT_EQ(metric_values(m, "explorer", "rollout/model_version"), (std::vector<double>{0, 1, 2, 3})) << slurp(ep.log);
  const auto kl = metric_values(m, "trainer", "rollout_corr/kl");
  ASSERT_EQ(kl.size(), 4u) << slurp(tp.log);
  for (size_t i = 0; i < kl.size(); ++i) EXPECT_LT(std::abs(kl[i]), 1e-5) << "step " << i + 1 << ": " << slurp(ep.log);
  for (const char* step : {"/global_step_1", "/global_step_3"}) {  // sync only
    EXPECT_TRUE(fs::exists(job + step + "/actor/lora_adapter/adapter_model.safetensors")) << step;
    EXPECT_FALSE(fs::exists(job + step + "/huggingface")) << step;
  }
  for (const char* step : {"/global_step_2", "/global_step_4"}) {  // full checkpoints
    EXPECT_TRUE(fs::exists(job + step + "/actor/lora_adapter/adapter_model.safetensors")) << step;
    EXPECT_EQ(json::parse(slurp(job + step + "/huggingface/config.json"))["torch_dtype"], "bfloat16") << step;
    EXPECT_FALSE(fs::exists(job + step + "/actor/config.json")) << step << ": no merged fp32 copy";
  }
}
