// End-to-end tests of the model commands of the `trinity` binary: init-model for each family
// read back by the PyTorch reference (our checkpoints, their math), debug logprobs / grad, and
// the error paths (corrupt or truncated safetensors, missing shard, bad config, bad flags and
// inputs), each a single "trinity: error: [component] ..." line naming the culprit, exit code 1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/file.h"

using namespace trinity;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kTrinity = std::string(TRINITY_BINARY_DIR) + "/trinity";
const std::string kGolden = std::string(TRINITY_SOURCE_DIR) + "/tests/golden";

struct Result {
  int code;
  std::string err;
};

Result run(const std::string& args) {
  const std::string errf = fs::temp_directory_path() / ("trinity_cli_err_" + std::to_string(getpid()));
  const int rc = std::system((kTrinity + " " + args + " >/dev/null 2>" + errf).c_str());
  Result r{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, file::exists(errf) ? file::read_all(errf) : ""};
  fs::remove(errf);
  return r;
}

class CliModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trinity_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/tokens.jsonl") << "{\"tokens\": [1, 5, 9, 2, 77, 3]}\n{\"tokens\": [4, 4]}\n"
                                             "{\"tokens\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string model(const std::string& arch, const std::string& extra = "") {
    const std::string out = dir_ + "/" + arch;
    Result r = run("init-model --arch " + arch + " --hidden 48 --layers 2 --heads 4 --kv-heads 2 "
                   "--intermediate 64 --vocab 101 --seed 3 --std 0.2 --out " + out + " " + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    return out;
  }
  std::string dir_;
};

void expect_one_error_line(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("trinity: error: [", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
}

}  // namespace

TEST_F(CliModel, InitModelCheckpointsMatchPytorchReference) {
  for (const std::string arch : {"qwen2", "qwen3", "llama"}) {
    const std::string m = model(arch, arch == "qwen3" ? "--tie --head-dim 16" : arch == "llama" ? "--dtype bf16" : "");
    ASSERT_EQ(run("debug logprobs --model " + m + " --input " + dir_ + "/tokens.jsonl --output " + m + "/ours.jsonl").code, 0);
    const std::string py = "/usr/bin/python3 " + kGolden + "/torch_logprobs.py " + m + " " + dir_ +
                           "/tokens.jsonl " + m + "/torch.jsonl";
    ASSERT_EQ(std::system(py.c_str()), 0) << py;
    std::ifstream a(m + "/ours.jsonl"), b(m + "/torch.jsonl");
    std::string la, lb;
    int lines = 0;
    while (std::getline(a, la) && std::getline(b, lb)) {
      auto ja = json::parse(la), jb = json::parse(lb);
      ASSERT_EQ(ja["logprobs"].size(), jb["logprobs"].size());
      for (size_t i = 0; i < ja["logprobs"].size(); ++i) {
        EXPECT_NEAR(ja["logprobs"][i].get<double>(), jb["logprobs"][i].get<double>(), 1e-4) << arch;
        EXPECT_NEAR(ja["entropy"][i].get<double>(), jb["entropy"][i].get<double>(), 1e-4) << arch;
      }
      ++lines;
    }
    EXPECT_EQ(lines, 3) << arch;
  }
}

TEST_F(CliModel, GradWritesEveryParameterUnderItsHfName) {
  const std::string m = model("qwen2");
  ASSERT_EQ(run("debug grad --model " + m + " --input " + dir_ + "/tokens.jsonl --output " + dir_ + "/g.safetensors").code, 0);
  const std::string raw = file::read_all(dir_ + "/g.safetensors");
  for (const char* name : {"model.embed_tokens.weight", "model.layers.1.self_attn.q_proj.bias",
                           "model.layers.0.mlp.down_proj.weight", "lm_head.weight", "model.norm.weight"})
    EXPECT_NE(raw.find(name), std::string::npos) << name;
}

TEST_F(CliModel, TruncatedSafetensorsNamesTheFile) {
  const std::string m = model("qwen2");
  fs::resize_file(m + "/model.safetensors", fs::file_size(m + "/model.safetensors") / 2);
  expect_one_error_line(run("debug logprobs --model " + m + " --input " + dir_ + "/tokens.jsonl --output " + dir_ + "/o"),
                        "model.safetensors");
}

TEST_F(CliModel, CorruptHeaderNamesTheFile) {
  const std::string m = model("qwen2");
  {
    std::fstream f(m + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    f.write("!!!!", 4);
  }
  expect_one_error_line(run("debug logprobs --model " + m + " --input " + dir_ + "/tokens.jsonl --output " + dir_ + "/o"),
                        "model.safetensors");
}

TEST_F(CliModel, MissingShardNamesTheShard) {
  const std::string m = model("llama");
  fs::rename(m + "/model.safetensors", m + "/model-00001-of-00002.safetensors");
  std::ofstream(m + "/model.safetensors.index.json")
      << "{\"weight_map\": {\"model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\", "
         "\"lm_head.weight\": \"model-00002-of-00002.safetensors\"}}";
  expect_one_error_line(run("debug logprobs --model " + m + " --input " + dir_ + "/tokens.jsonl --output " + dir_ + "/o"),
                        "model-00002-of-00002.safetensors");
}

TEST_F(CliModel, UnsupportedModelTypeIsNamed) {
  const std::string m = model("qwen2");
  std::string cfg = file::read_all(m + "/config.json");
  cfg.replace(cfg.find("\"qwen2\""), 7, "\"gpt2\"");
  std::ofstream(m + "/config.json") << cfg;
  expect_one_error_line(run("debug logprobs --model " + m + " --input " + dir_ + "/tokens.jsonl --output " + dir_ + "/o"),
                        "gpt2");
}

TEST_F(CliModel, BadInputsAreNamed) {
  const std::string m = model("qwen3", "--head-dim 12");
  std::ofstream(dir_ + "/bad.jsonl") << "{\"tokens\": [1, 2]}\n{\"tokens\": [1, 500]}\n";
  expect_one_error_line(run("debug logprobs --model " + m + " --input " + dir_ + "/bad.jsonl --output " + dir_ + "/o"),
                        "bad.jsonl:2: token id 500");
  std::ofstream(dir_ + "/bad2.jsonl") << "{\"tokens\": [1, 2]\n";
  expect_one_error_line(run("debug logprobs --model " + m + " --input " + dir_ + "/bad2.jsonl --output " + dir_ + "/o"),
                        "bad2.jsonl:1: invalid JSON");
  expect_one_error_line(run("debug logprobs --model " + m + " --input " + dir_ + "/tokens.jsonl --outptu x"),
                        "--outptu");
  expect_one_error_line(run("init-model --arch gpt2 --hidden 8 --layers 1 --heads 2 --out " + dir_ + "/x"),
                        "gpt2");
  Result r = run("no-such-command");
  EXPECT_EQ(r.code, 2);
}
