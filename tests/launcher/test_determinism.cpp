// Determinism end to end: two identical GRPO runs (same seed and config) with 16 concurrent
// runners write byte-identical checkpoints. The runners' requests reach the engine in a different
// order and are batched differently in each run, so this holds only because every stage is
// order independent: batch-invariant engine kernels (a sequence's logprobs do not depend on its
// step-mates), sampling seeds from (seed, step, task, sample), experiences written in task order.
#include <gtest/gtest.h>

#include "e2e_util.h"

using namespace trinity::test;

namespace {

std::string root() {
  return shared_root();
}

// All *.safetensors files of a job's final checkpoint, by relative path.
std::map<std::string, std::string> checkpoint_bytes(const std::string& job) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(job))
    if (e.is_regular_file() && e.path().extension() == ".safetensors")
      out[fs::relative(e.path(), job).string()] = slurp(e.path().string());
  return out;
}

}  // namespace

TEST(Determinism, SameSeedSameCheckpointBytesWith16Runners) {
  std::map<std::string, std::string> first;
  for (const char* name : {"det_a", "det_b"}) {
    std::string y = base_yaml(root(), name);
    const std::string cfg = write_config(root(), name, y);
    const RunOut r = trinity::test::trinity(
        {"run", "--config", cfg, "--set", "explorer.runner_per_model=16", "--set", "algorithm.repeat_times=4", "--set",
         "buffer.batch_size=8", "--set", "buffer.total_steps=6", "--set", "trainer.save_interval=6", "--set",
         "explorer.eval_interval=100", "--set", "model.max_response_tokens=8"},
        root() + "/" + name + ".log", 120);
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto bytes = checkpoint_bytes(job_dir(root(), name));
    ASSERT_FALSE(bytes.empty()) << "no checkpoint in " << job_dir(root(), name);
    if (first.empty()) {
      first = bytes;
      continue;
    }
    ASSERT_EQ(bytes.size(), first.size());
    for (const auto& [path, b] : bytes) {
      ASSERT_TRUE(first.count(path)) << path;
      EXPECT_TRUE(b == first.at(path)) << path << " differs between two runs with the same seed and config";
    }
  }
}
