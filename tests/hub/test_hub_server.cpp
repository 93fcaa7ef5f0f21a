// Hub ids against tests/hub/fake_hub.py (a Hub-shaped server on 127.0.0.1, HF_ENDPOINT points at
// it, HF_HUB_CACHE at a fresh folder per test): a tiny model (made by `trinity init-model`) and
// JSONL/CSV/parquet dataset repos downloaded into the huggingface_hub cache layout (refs, relative
// symlinks to blobs named by sha256 / git sha1), revisions by tag and commit, the gated-repo and
// not-found errors, a connection dropped mid-file (the download resumes with Range and is
// byte-identical), a renamed repo's relative redirect, README `configs:` with subset and split in
// load_dataset's file order (read through the buffer), the cache reused offline, and the model
// loaded by id through the launcher's resolve_hub_models, `trinity config check`, `trinity tokenize`
// and `trinity debug logprobs` (offline error).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../cli/cli_util.h"
#include "buffer/dataset.h"
#include "config/config.h"
#include "core/error.h"
#include "core/sha256.h"
#include "hub/client.h"
#include "hub/data_files.h"
#include "hub/model.h"
#include "hub_server.h"
#include "launcher/launcher.h"
#include "model/transformer.h"
#include "tokenizer/model_files.h"

namespace trinity::hub {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::FakeHub;

const std::string kC1 = "1111111111111111111111111111111111111111";  // main
const std::string kC0 = "0000000000000000000000000000000000000abc";  // tag v1

std::string read(const std::string& p) {
  return test::slurp(p);
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

class HubServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = (fs::temp_directory_path() / ("trinity_hub_server_" + std::to_string(getpid()))).string();
    fs::remove_all(root_);
    fs::create_directories(root_);
    const auto r = test::run_trinity(root_,
                                     "init-model --arch qwen2 --hidden 32 --layers 1 --heads 2 --intermediate 64 "
                                     "--max-pos 64 --tokenizer bytes --seed 3 --out " +
                                         root_ + "/src_model",
                                     120);
    ASSERT_EQ(r.code, 0) << r.err;
    const fs::path tree = fs::path(root_) / "tree";
    for (const char* repo : {"Org/Tiny", "Org/Gated"}) {
      const fs::path d = tree / "models" / repo;
      for (const auto& c : {kC1, kC0}) {
        fs::create_directories(d / "commits" / c);
        for (const auto& e : fs::directory_iterator(root_ + "/src_model"))
          fs::copy_file(e.path(), d / "commits" / c / e.path().filename());
        write(d / "commits" / c / "README.md", "# tiny\n");
        write(d / "commits" / c / "pytorch_model.bin", "not read by trinity");
      }
      write(d / "commits" / kC0 / "generation_config.json", "{\"v\": 0}");
      write(d / "refs.json", json{{"main", kC1}, {"v1", kC0}}.dump());
    }
    write(tree / "models/Org/Gated/gated", "");
    const fs::path math = tree / "datasets/Org/Math";
    write(math / "refs.json", json{{"main", kC1}}.dump());
    const fs::path mc = math / "commits" / kC1;
    write(mc / "README.md",
          "---\nconfigs:\n- config_name: easy\n  data_files:\n  - split: train\n    path: easy/train-*.jsonl\n"
          "  - split: test\n    path: easy/test.jsonl\n- config_name: hard\n  data_files:\n  - split: train\n"
          "    path: hard/*.csv\n---\n# math\n");
    write(mc / "easy/train-1.jsonl", "{\"q\": \"3+3\", \"a\": \"6\"}\n");
    write(mc / "easy/train-0.jsonl", "{\"q\": \"1+1\", \"a\": \"2\"}\n{\"q\": \"2+2\", \"a\": \"4\"}\n");
    write(mc / "easy/test.jsonl", "{\"q\": \"5+5\", \"a\": \"10\"}\n");
    write(mc / "hard/y.csv", "q,a\n8*8,64\n");
    write(mc / "hard/x.csv", "q,a\n9*9,81\n7*7,49\n");
    const fs::path pq = tree / "datasets/Org/Pq";
    write(pq / "refs.json", json{{"main", kC1}}.dump());
    write(pq / "commits" / kC1 / "data/train-00000-of-00001.parquet",
          std::string("PAR1") + std::string(3000, 'p') + "PAR1");
    write(pq / "commits" / kC1 / "data/test-00000-of-00001.parquet", "PAR1tPAR1");
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // A server over the tree with `extra` options, HF_ENDPOINT at it and a fresh HF_HUB_CACHE.
  std::unique_ptr<FakeHub> serve(std::vector<std::string> extra = {}) {
    log_ = root_ + "/log_" + std::to_string(n_++) + ".jsonl";
    std::vector<std::string> a = {"--root",  root_ + "/tree",       "--token", "secret", "--log", log_,
                                  "--moved", "Org/OldTiny=Org/Tiny"};
    a.insert(a.end(), extra.begin(), extra.end());
    auto s = std::make_unique<FakeHub>(a);
    EXPECT_EQ(s->error, "");
    cache_ = root_ + "/cache_" + std::to_string(n_);
    for (const char* k : {"HF_TOKEN", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME"})
      unsetenv(k);
    setenv("HF_HOME", (root_ + "/hf_home").c_str(), 1);  // no token file there
    setenv("HF_ENDPOINT", s->endpoint().c_str(), 1);
    setenv("HF_HUB_CACHE", cache_.c_str(), 1);
    return s;
  }
  std::vector<json> requests() const {
    std::vector<json> out;
    std::istringstream in(read(log_));
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
  static std::string src(const std::string& f) { return read(root_ + "/src_model/" + f); }

  static inline std::string root_;
  static inline int n_ = 0;
  std::string log_, cache_;
};

TEST_F(HubServer, ModelDownloadHasTheHuggingfaceHubLayout) {
  auto s = serve();
  const std::string dir = resolve_model_dir("Org/Tiny", "model.model_path");
  const fs::path repo = fs::path(cache_) / "models--Org--Tiny";
  EXPECT_EQ(dir, (repo / "snapshots" / kC1).string());
  EXPECT_EQ(read((repo / "refs/main").string()), kC1);
  // LFS file: blob named by sha256; small file: by its git blob sha1; relative symlinks
  const fs::path st = fs::path(dir) / "model.safetensors";
  ASSERT_TRUE(fs::is_symlink(st));
  EXPECT_EQ(fs::read_symlink(st).string(), "../../blobs/" + sha256_hex(src("model.safetensors")));
  const std::string cfg_target = fs::read_symlink(fs::path(dir) / "config.json").string();
  EXPECT_EQ(cfg_target.size(), std::string("../../blobs/").size() + 40) << cfg_target;
  EXPECT_EQ(read(st.string()), src("model.safetensors"));
  EXPECT_EQ(read(dir + "/tokenizer.json"), src("tokenizer.json"));
  EXPECT_FALSE(fs::exists(dir + "/README.md"));  // only what trinity reads
  EXPECT_FALSE(fs::exists(dir + "/pytorch_model.bin"));
  for (const auto& e : fs::directory_iterator(repo / "blobs"))
    EXPECT_EQ(e.path().extension(), "") << "left behind: " << e.path();
  // The token is never sent: none is set. The LFS GET went to the CDN route after a 302.
  int cdn = 0;
  for (const auto& r : requests()) cdn += r["path"].get<std::string>().rfind("/cdn/", 0) == 0 && r["method"] == "GET";
  EXPECT_EQ(cdn, 1);
  // A second resolution downloads nothing; offline with a dead endpoint it still resolves.
  const size_t before = requests().size();
  EXPECT_EQ(resolve_model_dir("Org/Tiny"), dir);
  for (size_t i = before; i < requests().size(); ++i)
    EXPECT_EQ(requests()[i]["path"].get<std::string>().find("/resolve/"), std::string::npos);
  setenv("HF_ENDPOINT", "http://127.0.0.1:1", 1);
  EXPECT_EQ(resolve_model_dir("Org/Tiny"), dir);  // unreachable: falls back to the cache
  setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_EQ(resolve_model_dir("Org/Tiny"), dir);
  EXPECT_NE(describe_model("Org/Tiny").find("cached (snapshot " + dir), std::string::npos);
}

TEST_F(HubServer, RevisionByTagAndByCommit) {
  auto s = serve();
  const std::string v1 = resolve_model_dir("Org/Tiny@v1");
  EXPECT_EQ(v1, cache_ + "/models--Org--Tiny/snapshots/" + kC0);
  EXPECT_EQ(read(cache_ + "/models--Org--Tiny/refs/v1"), kC0);
  EXPECT_EQ(read(v1 + "/generation_config.json"), "{\"v\": 0}");
  const std::string c1 = resolve_model_dir("Org/Tiny@" + kC1);
  EXPECT_EQ(c1, cache_ + "/models--Org--Tiny/snapshots/" + kC1);
  EXPECT_FALSE(fs::exists(cache_ + "/models--Org--Tiny/refs/" + kC1));  // a commit needs no ref
  EXPECT_FALSE(fs::exists(cache_ + "/models--Org--Tiny/refs/main"));
  // identical files share one blob across snapshots
  EXPECT_EQ(fs::read_symlink(v1 + "/model.safetensors"), fs::read_symlink(c1 + "/model.safetensors"));
}

TEST_F(HubServer, GatedRepoNeedsTheToken) {
  auto s = serve();
  try {
    resolve_model_dir("Org/Gated");
    FAIL();
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("gated or private"), std::string::npos) << m;
    EXPECT_NE(m.find("HF_TOKEN"), std::string::npos) << m;
  }
  setenv("HF_TOKEN", "wrong", 1);
  EXPECT_THROW(resolve_model_dir("Org/Gated"), IoError);
  setenv("HF_TOKEN", "secret", 1);
  const std::string dir = resolve_model_dir("Org/Gated");
  EXPECT_EQ(read(dir + "/model.safetensors"), src("model.safetensors"));
  // the token goes to the Hub, never to the CDN (another origin)
  bool hub_auth = false;
  for (const auto& r : requests()) {
    const std::string p = r["path"];
    if (p.rfind("/cdn/", 0) == 0) {
      EXPECT_EQ(r["auth"], "") << p;
    }
    if (p.find("/Org/Gated/resolve/") != std::string::npos && r["auth"] == "Bearer secret") hub_auth = true;
  }
  EXPECT_TRUE(hub_auth);
}

TEST_F(HubServer, NotFoundErrorsNameWhatIsMissing) {
  auto s = serve();
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const IoError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { resolve_model_dir("Org/Nope"); }).find("model repository 'Org/Nope' not found"),
            std::string::npos);
  EXPECT_NE(message([] { resolve_model_dir("Org/Tiny@nobranch"); }).find("revision 'nobranch' not found"),
            std::string::npos);
  const HubClient client(HubEnv::from_environment());
  const RepoRef ref{RepoType::kModel, "Org/Tiny", "main"};
  EXPECT_NE(
      message([&] { client.download(ref, kC1, "nope.json"); }).find("file 'nope.json' not found in model Org/Tiny"),
      std::string::npos);
  EXPECT_TRUE(
      fs::exists(cache_ + "/models--Org--Tiny/.no_exist/" + kC1 + "/nope.json"));  // as huggingface_hub marks it
}

TEST_F(HubServer, DroppedConnectionResumesWithRange) {
  auto s = serve({"--drop-once", "model.safetensors"});
  const std::string dir = resolve_model_dir("Org/Tiny");
  EXPECT_EQ(read(dir + "/model.safetensors"), src("model.safetensors"));  // byte-identical
  std::vector<std::string> ranges;
  for (const auto& r : requests())
    if (r["path"].get<std::string>().rfind("/cdn/", 0) == 0 && r["method"] == "GET") ranges.push_back(r["range"]);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], "");
  const size_t half = src("model.safetensors").size() / 2;
  EXPECT_EQ(ranges[1], "bytes=" + std::to_string(half) + "-");  // resumed, not restarted
}

TEST_F(HubServer, RenamedRepoFollowsRelativeRedirects) {
  auto s = serve();
  const std::string dir = resolve_model_dir("Org/OldTiny");
  EXPECT_EQ(dir, cache_ + "/models--Org--OldTiny/snapshots/" + kC1);
  EXPECT_EQ(read(dir + "/config.json"), src("config.json"));
}

TEST_F(HubServer, DatasetConfigsSubsetAndSplitInOrder) {
  auto s = serve();
  const auto files = buffer::resolve_data_files("Org/Math", "train", "easy");
  const std::string snap = cache_ + "/datasets--Org--Math/snapshots/" + kC1;
  EXPECT_EQ(files, (std::vector<std::string>{snap + "/easy/train-0.jsonl", snap + "/easy/train-1.jsonl"}));
  EXPECT_FALSE(fs::exists(snap + "/hard/x.csv"));  // only the matching files are downloaded
  EXPECT_EQ(read(cache_ + "/datasets--Org--Math/refs/main"), kC1);
  buffer::FormatConfig fmt;
  fmt.prompt_key = "q";
  fmt.response_key = "a";
  buffer::LoadReport rep;
  const auto rows = buffer::Taskset::load_rows("Org/Math", "train", "easy", fmt, buffer::DatasetKind::kTask, true, rep);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NE(rows[0].json.find("1+1"), std::string::npos);
  EXPECT_NE(rows[2].json.find("3+3"), std::string::npos);
  const auto test = buffer::Taskset::load_rows("Org/Math", "test", "easy", fmt, buffer::DatasetKind::kTask, true, rep);
  ASSERT_EQ(test.size(), 1u);
  EXPECT_NE(test[0].json.find("5+5"), std::string::npos);
  EXPECT_EQ(buffer::resolve_data_files("Org/Math", "train", "hard"),
            (std::vector<std::string>{snap + "/hard/x.csv", snap + "/hard/y.csv"}));
  const auto hard = buffer::Taskset::load_rows("Org/Math", "train", "hard", fmt, buffer::DatasetKind::kTask, true, rep);
  ASSERT_EQ(hard.size(), 3u);  // CSV rows, files in path order
  EXPECT_NE(hard[0].json.find("9*9"), std::string::npos);
  EXPECT_NE(hard[2].json.find("8*8"), std::string::npos);
  EXPECT_THROW(buffer::resolve_data_files("Org/Math", "train", "medium"), ConfigError);
  // The dataset file list came from the paginated tree API (2 entries a page).
  int tree_pages = 0;
  for (const auto& r : requests())
    tree_pages += r["path"].get<std::string>().find("/api/datasets/Org/Math/tree/") != std::string::npos;
  EXPECT_GE(tree_pages, 3);
  // offline: from the cache
  setenv("HF_DATASETS_OFFLINE", "1", 1);
  setenv("HF_ENDPOINT", "http://127.0.0.1:1", 1);
  EXPECT_EQ(buffer::resolve_data_files("Org/Math", "train", "easy"), files);
}

TEST_F(HubServer, ParquetShardsResolve) {
  auto s = serve();
  const auto files = resolve_dataset_files("Org/Pq", "train", "");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], cache_ + "/datasets--Org--Pq/snapshots/" + kC1 + "/data/train-00000-of-00001.parquet");
  const std::string body = std::string("PAR1") + std::string(3000, 'p') + "PAR1";
  EXPECT_EQ(fs::read_symlink(files[0]).string(), "../../../blobs/" + sha256_hex(body));
  EXPECT_EQ(read(files[0]), body);
}

TEST_F(HubServer, LauncherAndConfigCheckUseHubIds) {
  auto s = serve();
  config::Config c;
  c.model.model_path = c.model.critic_model_path = "Org/Tiny";
  c.explorer.auxiliary_models.resize(1);
  c.explorer.auxiliary_models[0].model_path = "Org/Tiny@v1";
  const config::Config r = launcher::resolve_hub_models(c);
  EXPECT_EQ(r.model.model_path, cache_ + "/models--Org--Tiny/snapshots/" + kC1);
  EXPECT_EQ(r.model.critic_model_path, r.model.model_path);
  EXPECT_EQ(r.explorer.auxiliary_models[0].model_path, cache_ + "/models--Org--Tiny/snapshots/" + kC0);
  const model::Transformer m = model::Transformer::load(r.model.model_path);
  const tok::Tokenizer t = tok::load_model_tokenizer(r.model.model_path, m.config().vocab_size);
  EXPECT_EQ(m.config().hidden_size, 32);
  EXPECT_FALSE(t.encode("hi").empty());

  // `trinity config check` says what is cached and what would be downloaded, without downloading.
  const std::string yaml = root_ + "/hub.yaml";
  std::ofstream(yaml) << "project: hub\nname: hub\ncheckpoint_root_dir: " << root_ << "/ck\n"
                      << "model: {model_path: Org/Tiny, max_prompt_tokens: 32, max_response_tokens: 8}\n"
                      << "algorithm: {algorithm_type: grpo, repeat_times: 2, optimizer: {lr: 1e-3}}\n"
                      << "buffer:\n  batch_size: 2\n  total_steps: 1\n  explorer_input:\n    taskset:\n"
                      << "      name: math\n      path: Org/Math\n      subset_name: easy\n"
                      << "      format: {prompt_key: q, response_key: a}\n"
                      << "    default_workflow_type: math_workflow\n";
  const std::string env = "HF_ENDPOINT=" + s->endpoint() + " HF_HUB_CACHE=" + cache_;
  const size_t before = requests().size();
  const auto out = test::run_trinity(root_, "config check --config " + yaml, 60, env);
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.err.find("model.model_path: Hub model Org/Tiny@main: cached (snapshot " + r.model.model_path),
            std::string::npos)
      << out.err;
  EXPECT_NE(
      out.err.find("taskset math: Hub dataset Org/Math@main: not cached; would be downloaded from " + s->endpoint()),
      std::string::npos)
      << out.err;
  EXPECT_EQ(requests().size(), before);  // no network
  EXPECT_FALSE(fs::exists(cache_ + "/datasets--Org--Math"));
}

TEST_F(HubServer, CliCommandsTakeHubIds) {
  auto s = serve();
  const std::string in = root_ + "/tok_in.jsonl", out = root_ + "/tok_out.jsonl";
  std::ofstream(in) << "{\"text\": \"hi\"}\n";
  const std::string env = "HF_ENDPOINT=" + s->endpoint() + " HF_HUB_CACHE=" + cache_;
  auto r = test::run_trinity(root_, "tokenize --tokenizer Org/Tiny --input " + in + " --output " + out, 60, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(read(out))["ids"], json::array({104, 105}));  // the bytes tokenizer: 'h', 'i'
  // tokenize fetches the tokenizer files only, not the weights
  EXPECT_TRUE(fs::exists(cache_ + "/models--Org--Tiny/snapshots/" + kC1 + "/tokenizer.json"));
  EXPECT_FALSE(fs::exists(cache_ + "/models--Org--Tiny/snapshots/" + kC1 + "/model.safetensors"));
  // offline with the weights missing: one clear error line, exit 1
  r = test::run_trinity(root_, "debug logprobs --model Org/Tiny --input " + in + " --output " + out, 60,
                        "HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:1 HF_HUB_CACHE=" + cache_);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing from the cache: model.safetensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trinity::hub
