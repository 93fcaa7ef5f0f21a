// Data-parallel training under mpirun (issue 17 §3), end to end with the real binary and OpenMPI:
// - 2 ranks train to the same weights as 1 rank on the same global batches (GRPO, and PPO with its
//   critic), with uneven micro-batches per rank, and log the same loss metrics;
// - a run resumes from a checkpoint with a different rank count (1 -> 2 and 2 -> 1) and still ends
//   at the 1-rank weights;
// - a rank killed with SIGKILL ends the job (mpirun exits non-zero) within a deadline;
// - a stopped (SIGSTOP) rank ends the job through the collective deadline (TRINITY_DIST_TIMEOUT)
//   with an error naming the collective, instead of hanging it.
// Experiences are made here (random token ids, rollout logprobs and rewards), so every run trains
// on exactly the same batches.
#include <dirent.h>

#include <cmath>
#include <random>

#include "buffer/config.h"
#include "buffer/experience.h"
#include "buffer/storage.h"
#include "core/error.h"
#include "launcher/e2e_util.h"
#include "model/checkpoint_dtype.h"
#include "model/safetensors.h"
#include "model/transformer.h"

namespace trinity::test {
namespace {

constexpr int kGroup = 4, kTasks = 4;  // 16 experiences a step

const std::string& root() {
  static ScratchRootCleanup cleanup;
  static const std::string r = [] {
    // mpirun refuses root unless told; in containers the shared-memory transport's single-copy
    // mechanism (CMA) is often not permitted, and binding would pin a 2-thread rank to one core.
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    setenv("OMPI_MCA_hwloc_base_binding_policy", "none", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    setenv("TRINITY_THREADS", "1", 1);
    // Under the dev build's ASan, OpenMPI's components (dlclose'd at MPI_Finalize, so no suppression
    // can name them) leave allocations LeakSanitizer reports at exit; leak checks stay on everywhere else.
    const char* asan = std::getenv("ASAN_OPTIONS");
    setenv("ASAN_OPTIONS", (std::string(asan ? asan : "") + (asan && *asan ? ":" : "") + "detect_leaks=0").c_str(), 1);
    const std::string d = (fs::temp_directory_path() / ("trinity-dist-test-" + std::to_string(getpid()))).string();
    fs::remove_all(d);
    fs::create_directories(d);
    cleanup.path = d;
    const RunOut m =
        trinity({"init-model", "--arch", "qwen2", "--hidden", "64", "--layers", "2", "--heads", "4", "--intermediate",
                 "128", "--max-pos", "96", "--tokenizer", "bytes", "--seed", "5", "--out", d + "/model"},
                d + "/init.log");
    EXPECT_EQ(m.rc, 0) << m.out;
    const RunOut data = trinity(
        {"make-data", "arithmetic", "--out", d + "/data", "--train", "64", "--eval", "4", "--sft", "8", "--seed", "3"},
        d + "/data.log");
    EXPECT_EQ(data.rc, 0) << data.out;
    return d;
  }();
  return r;
}

std::string mpirun() {
  for (const char* p : {"/usr/bin/mpirun", "/usr/local/bin/mpirun"})
    if (fs::exists(p)) return p;
  ADD_FAILURE() << "mpirun not found: scripts/setup installs openmpi-bin";
  return "mpirun";
}

// One explore step's experiences: kTasks GRPO groups of kGroup runs, prompts 5-12 tokens,
// responses 3-14 tokens, rewards in {0, .25, ..., 1}, and the explorer-side GRPO advantages
// (reward - group mean) / (group std + 1e-6) on every response token (PPO computes its own).
std::vector<buffer::Experience> make_step(int64_t step) {
  std::mt19937 rng(static_cast<uint32_t>(1000 + step));
  std::uniform_int_distribution<int> tok(3, 250), plen(5, 12), rlen(3, 14), rew(0, 4);
  std::uniform_real_distribution<float> lp(-4.0f, -0.05f);
  std::vector<buffer::Experience> out;
  for (int t = 0; t < kTasks; ++t)
    for (int r = 0; r < kGroup; ++r) {
      buffer::Experience e;
      e.eid.batch = std::to_string(step);
      e.eid.task = t, e.eid.run = r;
      e.eid.suffix = trinity::strcat("s", step, "t", t, "r", r);
      e.prompt_length = plen(rng);
      const int n = rlen(rng);
      for (int i = 0; i < e.prompt_length + n; ++i) e.tokens.push_back(tok(rng));
      for (int i = 0; i < n; ++i) e.logprobs.push_back(lp(rng));
      e.action_mask.assign(static_cast<size_t>(n), 1);
      e.reward = 0.25 * rew(rng);
      out.push_back(std::move(e));
    }
  for (int t = 0; t < kTasks; ++t) {
    double mean = 0, var = 0;
    for (int r = 0; r < kGroup; ++r) mean += *out[static_cast<size_t>(t * kGroup + r)].reward / kGroup;
    for (int r = 0; r < kGroup; ++r) {
      const double d = *out[static_cast<size_t>(t * kGroup + r)].reward - mean;
      var += d * d / (kGroup - 1);
    }
    for (int r = 0; r < kGroup; ++r) {
      auto& e = out[static_cast<size_t>(t * kGroup + r)];
      e.advantages.assign(e.logprobs.size(), static_cast<float>((*e.reward - mean) / (std::sqrt(var) + 1e-6)));
    }
  }
  return out;
}

// steps [from, to] as JSONL lines
void write_jsonl(const std::string& path, int64_t from, int64_t to) {
  std::ofstream f(path);
  for (int64_t s = from; s <= to; ++s)
    for (const auto& e : make_step(s)) f << buffer::experience_to_json(e) << "\n";
}

buffer::StorageConfig sqlite_buffer(const std::string& path) {
  buffer::StorageConfig c;
  c.name = "exp";
  c.storage_type = "sql";
  c.path = "sqlite:///" + path;
  return c;
}

void write_sqlite(const std::string& path, int64_t from, int64_t to) {
  auto s = buffer::open_storage(sqlite_buffer(path));
  for (int64_t k = from; k <= to; ++k) ASSERT_TRUE(s->write(make_step(k)));
}

std::string config(const std::string& name, const std::string& algorithm, const std::string& storage_type,
                   const std::string& path) {
  std::string y = R"(project: t
name: NAME
mode: train
checkpoint_root_dir: ROOT/ckpt
continue_from_checkpoint: true
model:
  model_path: ROOT/model
  max_prompt_tokens: 32
  max_response_tokens: 16
algorithm:
  algorithm_type: ALG
  repeat_times: 4
  optimizer: {lr: 1e-3}
buffer:
  batch_size: 4
  trainer_input:
    experience_buffer: {name: exp, storage_type: STORAGE, path: 'PATH', max_read_timeout: 120}
trainer:
  save_interval: 1
  total_steps: 3
  micro_batch_size: 3
)";
  auto rep = [&](const std::string& from, const std::string& to) {
    for (size_t p = y.find(from); p != std::string::npos; p = y.find(from, p + to.size()))
      y.replace(p, from.size(), to);
  };
  rep("ROOT", root());
  rep("NAME", name);
  rep("ALG", algorithm);
  rep("STORAGE", storage_type);
  rep("PATH", path);
  return write_config(root(), name, y);
}

std::vector<std::string> mpi_cmd(const std::string& cfg, const std::vector<std::string>& sets) {
  std::vector<std::string> a = {mpirun(), "-np", "2", trinity_bin(), "run", "--config", cfg};
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  return a;
}

// `trinity run` on `ranks` ranks (1: a plain process, no mpirun).
RunOut run(int ranks, const std::string& cfg, const std::vector<std::string>& sets, const std::string& log,
           double timeout_s = 120) {
  std::vector<std::string> a;
  if (ranks > 1)
    a = {mpirun(), "-np", std::to_string(ranks), trinity_bin()};
  else
    a = {trinity_bin()};
  a.insert(a.end(), {"run", "--config", cfg});
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  Proc p = spawn(a, log);
  RunOut r;
  r.rc = wait_exit(p, timeout_s);
  r.out = slurp(log);
  return r;
}

std::vector<float> weights(const std::string& step_dir, bool critic = false) {
  const auto m = critic ? model::Transformer::load(step_dir + "/critic", model::HeadKind::kValue)
                        : model::Transformer::load(model::exact_weights_dir(step_dir));
  return std::vector<float>(m.params(), m.params() + m.num_params());
}

double dist(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s);
}

double norm(const std::vector<float>& a) {
  return dist(a, std::vector<float>(a.size(), 0.0f));
}

// The weights of job `b` equal those of job `a` at `step` (rel. error < 1e-5, as the issue asks),
// and the update from the initial weights agrees too (the tighter check: < 1e-3 of its size).
void expect_same_weights(const std::string& a, const std::string& b, int64_t step, bool critic = false) {
  const std::string s = "/global_step_" + std::to_string(step);
  const auto wa = weights(job_dir(root(), a) + s, critic), wb = weights(job_dir(root(), b) + s, critic);
  const double rel = dist(wa, wb) / norm(wa);
  EXPECT_LT(rel, 1e-5) << a << " vs " << b << (critic ? " (critic)" : "");
  if (!critic) {
    const auto m0 = model::Transformer::load(root() + "/model");
    const double upd = dist(wa, std::vector<float>(m0.params(), m0.params() + m0.num_params()));
    EXPECT_GT(upd, 1e-3) << "the run did not move the weights: the comparison would prove nothing";
    EXPECT_LT(dist(wa, wb) / upd, 1e-3) << a << " vs " << b;
    std::printf("  update norm %.4g, difference / update %.3g\n", upd, dist(wa, wb) / upd);
  }
  std::printf("%s vs %s at step %lld%s: rel. error %.3g\n", a.c_str(), b.c_str(), static_cast<long long>(step),
              critic ? " (critic)" : "", rel);
}

void expect_same_metric(const std::string& a, const std::string& b, const std::string& key) {
  const auto ma = metric_values(read_metrics(job_dir(root(), a)), "trainer", key);
  const auto mb = metric_values(read_metrics(job_dir(root(), b)), "trainer", key);
  ASSERT_EQ(ma.size(), mb.size()) << key;
  ASSERT_FALSE(ma.empty()) << key;
  for (size_t i = 0; i < ma.size(); ++i)
    EXPECT_NEAR(ma[i], mb[i], 1e-4 * std::max(1.0, std::fabs(ma[i]))) << key << " at line " << i;
}

class DistTrain : public ::testing::TestWithParam<std::string> {};

TEST_P(DistTrain, TwoRanksEqualOneRank) {
  const std::string alg = GetParam();
  const std::string data = root() + "/exps_" + alg + ".jsonl";
  write_jsonl(data, 1, 3);
  const std::string one = "one_" + alg, two = "two_" + alg;
  RunOut r1 = run(1, config(one, alg, "file", data), {}, root() + "/" + one + ".log");
  ASSERT_EQ(r1.rc, 0) << r1.out;
  RunOut r2 = run(2, config(two, alg, "file", data), {}, root() + "/" + two + ".log");
  ASSERT_EQ(r2.rc, 0) << r2.out;
  EXPECT_NE(r2.out.find("data parallel over 2 ranks (mpi)"), std::string::npos) << r2.out;
  EXPECT_NE(r2.out.find("rank 1: done after 3 train steps"), std::string::npos) << r2.out;
  for (int64_t s : {1, 3}) expect_same_weights(one, two, s);
  for (const char* k :
       {"actor/pg_loss", "actor/grad_norm", "actor/pg_clipfrac", "critic/score/mean", "perf/total_num_tokens"})
    expect_same_metric(one, two, k);
  if (alg == "ppo") {
    expect_same_weights(one, two, 3, /*critic=*/true);
    for (const char* k : {"critic/vf_loss", "critic/grad_norm"}) expect_same_metric(one, two, k);
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, DistTrain, ::testing::Values("grpo", "ppo"));

// 1 rank for 2 steps, then 2 ranks to step 4 == 1 rank for 4 steps; and 2 ranks then 1 rank.
TEST(DistTrainResume, ChangesRankCountFromACheckpoint) {
  const std::string data = root() + "/exps_resume.jsonl";
  write_jsonl(data, 1, 4);
  auto cfg = [&](const std::string& name) { return config(name, "grpo", "file", data); };
  RunOut ref = run(1, cfg("ref4"), {"trainer.total_steps=4"}, root() + "/ref4.log");
  ASSERT_EQ(ref.rc, 0) << ref.out;
  for (auto [name, first, second] : {std::tuple{"r12", 1, 2}, std::tuple{"r21", 2, 1}}) {
    RunOut a = run(first, cfg(name), {"trainer.total_steps=2"}, root() + "/" + name + "_a.log");
    ASSERT_EQ(a.rc, 0) << a.out;
    RunOut b = run(second, cfg(name), {"trainer.total_steps=4"}, root() + "/" + name + "_b.log");
    ASSERT_EQ(b.rc, 0) << b.out;
    EXPECT_NE(b.out.find("resumed from"), std::string::npos) << b.out;
    expect_same_weights("ref4", name, 4);
  }
}

// mode both under mpirun: rank 0 explores and trains, rank 1 trains; the explorer gets the weights.
TEST(DistTrainModes, BothModeTrainsOnTwoRanks) {
  const std::string cfg = write_config(root(), "both2", base_yaml(root(), "both2"));
  Proc p = spawn(mpi_cmd(cfg, {}), root() + "/both2.log");
  const int rc = wait_exit(p, 120);
  const std::string out = slurp(p.log);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("rank 1: done after 4 train steps"), std::string::npos) << out;
  const auto m = read_metrics(job_dir(root(), "both2"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), (std::vector<int64_t>{1, 2, 3, 4}));
  // The explorer explored with the trainer's weights: its last steps report a newer version.
  const auto v = metric_values(m, "explorer", "rollout/model_version");
  ASSERT_FALSE(v.empty());
  EXPECT_GT(v.back(), 0);
}

// pid of the rank `rank` process that mpirun `parent` started (0: none yet).
pid_t rank_pid(pid_t parent, int rank) {
  DIR* d = opendir("/proc");
  pid_t found = 0;
  while (dirent* e = readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string stat = slurp(trinity::strcat("/proc/", pid, "/stat"));
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    if (std::atoi(stat.c_str() + close + 4) != parent) continue;  // field 4: ppid
    const std::string env = slurp(trinity::strcat("/proc/", pid, "/environ"));
    if (env.find(trinity::strcat("OMPI_COMM_WORLD_RANK=", rank, std::string(1, '\0'))) != std::string::npos)
      found = pid;
  }
  closedir(d);
  return found;
}

// kill -9 of rank 1 while rank 0 waits for experiences: the job ends within the deadline, and the
// run resumes on 1 rank from its last checkpoint to the weights of an uninterrupted 1-rank run.
TEST(DistTrainFailure, KilledRankEndsTheJobAndTheRunResumes) {
  const std::string db = root() + "/kill.db", ref_db = root() + "/kill_ref.db";
  write_sqlite(db, 1, 3);
  write_sqlite(ref_db, 1, 6);
  const std::string cfg = config("killed", "grpo", "sql", "sqlite:///" + db);
  Proc p = spawn(mpi_cmd(cfg, {"trainer.total_steps=6"}), root() + "/killed.log");
  const std::string job = job_dir(root(), "killed");
  ASSERT_TRUE(wait_for([&] { return fs::exists(job + "/global_step_3/huggingface"); }, 90)) << slurp(p.log);
  const pid_t r1 = rank_pid(p.pid, 1);
  ASSERT_GT(r1, 0) << "rank 1 of mpirun " << p.pid << " not found";
  const auto t0 = std::chrono::steady_clock::now();
  kill(r1, SIGKILL);
  const int rc = wait_exit(p, 60);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string out = slurp(p.log);
  EXPECT_NE(rc, -1) << "the job did not end within 60 s of a rank's death:\n" << out;
  EXPECT_NE(rc, 0) << out;
  EXPECT_LT(took, 60.0);
  EXPECT_NE(out.find("signal 9"), std::string::npos) << "mpirun should say which rank died and how:\n" << out;
  std::printf("job ended %.1f s after rank 1 was killed (exit %d)\n", took, rc);
  // Resume on one rank with the rest of the data.
  write_sqlite(db, 4, 6);
  RunOut r = run(1, cfg, {"trainer.total_steps=6"}, root() + "/killed_resume.log");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("(step 3)"), std::string::npos) << r.out;
  RunOut ref = run(1, config("killed_ref", "grpo", "sql", "sqlite:///" + ref_db), {"trainer.total_steps=6"},
                   root() + "/killed_ref.log");
  ASSERT_EQ(ref.rc, 0) << ref.out;
  expect_same_weights("killed_ref", "killed", 6);
}

// SIGSTOP of rank 1: rank 0's next all-reduce passes its deadline and ends the job with an error
// that names the collective and the setting.
TEST(DistTrainFailure, StoppedRankEndsTheJobAtTheCollectiveDeadline) {
  const std::string db = root() + "/stop.db";
  write_sqlite(db, 1, 2);
  const std::string cfg = config("stopped", "grpo", "sql", "sqlite:///" + db);
  setenv("TRINITY_DIST_TIMEOUT", "5", 1);
  Proc p = spawn(mpi_cmd(cfg, {"trainer.total_steps=6"}), root() + "/stopped.log");
  unsetenv("TRINITY_DIST_TIMEOUT");
  const std::string job = job_dir(root(), "stopped");
  ASSERT_TRUE(wait_for([&] { return fs::exists(job + "/global_step_2/huggingface"); }, 90)) << slurp(p.log);
  const pid_t r1 = rank_pid(p.pid, 1);
  ASSERT_GT(r1, 0);
  kill(r1, SIGSTOP);
  write_sqlite(db, 3, 4);  // rank 0 reads step 3, sends it and waits in the all-reduce
  const int rc = wait_exit(p, 60);
  const std::string out = slurp(p.log);
  EXPECT_NE(rc, -1) << "the job hung with a stopped rank:\n" << out;
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("did not complete within 5 s (TRINITY_DIST_TIMEOUT)"), std::string::npos) << out;
  kill(r1, SIGKILL);  // in case mpirun left it stopped
}

// LoRA on a bf16 base over 2 ranks: every rank holds the frozen base in bf16 (rank 0 shares the bytes),
// and the adapters trained on 2 ranks match those of 1 rank on the same batches.
TEST(DistTrainModes, LoraOnABf16BaseTrainsOnTwoRanks) {
  const std::string bf16 = root() + "/model_bf16";
  if (!fs::exists(bf16 + "/config.json")) {
    const RunOut m =
        trinity({"init-model", "--arch",         "qwen2", "--hidden",  "64", "--layers",    "2",     "--heads",
                 "4",          "--intermediate", "128",   "--max-pos", "96", "--tokenizer", "bytes", "--seed",
                 "5",          "--dtype",        "bf16",  "--out",     bf16},
                root() + "/init_bf16.log");
    ASSERT_EQ(m.rc, 0) << m.out;
  }
  std::vector<float> adapters[2];
  for (int ranks : {1, 2}) {
    const std::string name = trinity::strcat("lora_bf16_", ranks);
    fs::remove_all(job_dir(root(), name));
    const std::string path = root() + "/" + name + ".db";
    fs::remove(path);
    write_sqlite(path, 1, 3);
    std::string y = slurp(config(name, "grpo", "sql", "sqlite:///" + path));
    y.replace(y.find(root() + "/model\n"), root().size() + 7, bf16 + "\n");
    y.insert(y.find("  max_prompt_tokens"), "  lora_configs: [{name: l, lora_rank: 4, lora_alpha: 8}]\n");
    const RunOut r = run(ranks, write_config(root(), name, y), {}, root() + "/" + name + ".log");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("layer weights held in bf16"), std::string::npos) << r.out;
    const auto f = model::SafetensorsFile::open(job_dir(root(), name) +
                                                "/global_step_3/actor/lora_adapter/adapter_model.safetensors");
    for (const auto& n : f.names()) {
      const auto& t = f.get(n);
      adapters[ranks - 1].insert(adapters[ranks - 1].end(), t.f32(), t.f32() + t.numel());
    }
  }
  ASSERT_EQ(adapters[0].size(), adapters[1].size());
  ASSERT_FALSE(adapters[0].empty());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < adapters[0].size(); ++i) {
    diff += std::pow(adapters[0][i] - adapters[1][i], 2);
    norm += std::pow(adapters[0][i], 2);
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-5) << "2 ranks train the adapters 1 rank trains";
}

}  // namespace
}  // namespace trinity::test
