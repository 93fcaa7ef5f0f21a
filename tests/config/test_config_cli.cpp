// `trinity config check`: every examples/*.yaml present at test time must validate (globbed at run
// time, so new examples are covered automatically); a bad config exits 1 with file:line; --set repeats.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct CliRun {
  int rc;
  std::string out, err;
};

CliRun run(const std::string& args) {
  const std::string tmp = (fs::temp_directory_path() / ("trinity_cfg_cli_" + std::to_string(::getpid()))).string();
  const std::string cmd = std::string(TRINITY_BINARY_DIR) + "/trinity config check " + args + " >" + tmp + ".out 2>" +
                          tmp + ".err";
  const int st = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(tmp + ".out"), slurp(tmp + ".err")};
}

std::string write_cfg(const std::string& name, const std::string& text) {
  const auto dir = fs::temp_directory_path() / ("trinity_cfg_cli_dir_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

const char* kGood =
    "algorithm: {algorithm_type: grpo, repeat_times: 4}\n"
    "model: {model_path: /m, max_model_len: 256, trust_remote_code: true}\n"
    "buffer:\n  batch_size: 2\n  explorer_input:\n    taskset: {path: /d.jsonl}\n    default_workflow_type: math_workflow\n";

}  // namespace

TEST(ConfigCli, EveryExampleValidates) {
  const fs::path ex = fs::path(TRINITY_SOURCE_DIR) / "examples";
  int n = 0;
  if (fs::exists(ex))
    for (const auto& e : fs::recursive_directory_iterator(ex)) {
      if (e.path().extension() != ".yaml" && e.path().extension() != ".yml") continue;
      ++n;
      const CliRun r = run("--config " + e.path().string());
      EXPECT_EQ(r.rc, 0) << e.path() << "\n" << r.err;
    }
  if (n == 0) GTEST_SKIP() << "no examples/*.yaml yet";
}

TEST(ConfigCli, GoodConfigPrintsResolvedYamlAndWarnings) {
  const CliRun r = run("--config " + write_cfg("good.yaml", kGood) + " --set buffer.batch_size=3 --set=trainer.save_interval=7");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("train_batch_size: 12"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("save_interval: 7"), std::string::npos);
  EXPECT_NE(r.err.find("model.trust_remote_code has no effect"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is valid (1 warning)"), std::string::npos) << r.err;
}

TEST(ConfigCli, BadConfigExitsOneWithLocation) {
  const std::string p = write_cfg("bad.yaml", std::string(kGood) + "trainer:\n  grad_clipp: 1.0\n");
  const CliRun r = run("--config " + p);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("bad.yaml:9"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'grad_clip'"), std::string::npos) << r.err;
  const CliRun missing = run("--config /nonexistent/trinity.yaml");
  EXPECT_EQ(missing.rc, 1);
}

// A workflow name no built-in has fails the check (not a run in which every task fails), naming the
// taskset and the closest name; a Python class (upstream's `examples.x.Workflow`) says how to bring it.
TEST(ConfigCli, UnknownWorkflowNamesAreErrors) {
  std::string typo = kGood;
  typo.replace(typo.find("math_workflow"), 13, "math_workflw");
  const CliRun r = run("--config " + write_cfg("typo.yaml", typo));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("[config] taskset 'taskset_0': workflow 'math_workflw' is not a trinity workflow (did you mean "
                       "'math_workflow'?)"),
            std::string::npos)
      << r.err;

  std::string py = kGood;
  py.replace(py.find("math_workflow"), 13, "examples.bots.workflow.BOTSMathBoxedWorkflow");
  const CliRun p = run("--config " + write_cfg("py.yaml", py));
  EXPECT_EQ(p.rc, 1);
  EXPECT_NE(p.err.find("is a Python class"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("command_workflow"), std::string::npos) << p.err;

  // Eval tasksets and stages are checked too.
  const std::string eval =
      std::string(kGood) +
      "    eval_tasksets:\n      - {name: ev, path: /e.jsonl, default_workflow_type: nope_workflow}\n";
  const CliRun e = run("--config " + write_cfg("eval.yaml", eval));
  EXPECT_EQ(e.rc, 1);
  EXPECT_NE(e.err.find("eval taskset 'ev': workflow 'nope_workflow'"), std::string::npos) << e.err;
}
