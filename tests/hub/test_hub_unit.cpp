// Hub layer without a network: repo ids and cache folder names, the environment, fsspec globs,
// load_dataset's data file resolution (README configs, default split patterns, subsets), the model
// files trinity downloads, and offline use of a cache laid out as huggingface_hub writes it --
// including the one clear error when a file is missing. HF_ENDPOINT points at a closed port, so
// any network access would fail the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "hf_cache.h"
#include "hub/cache.h"
#include "hub/client.h"
#include "hub/data_files.h"
#include "hub/env.h"
#include "hub/http.h"
#include "hub/model.h"
#include "hub/repo.h"

namespace trinity::hub {
namespace {

namespace fs = std::filesystem;
using Files = std::vector<std::string>;

TEST(HubRepo, Ids) {
  auto r = parse_repo_id("Qwen/Qwen2.5-1.5B-Instruct", RepoType::kModel);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, "Qwen/Qwen2.5-1.5B-Instruct");
  EXPECT_EQ(r->revision, "main");
  EXPECT_EQ(repo_folder_name(*r), "models--Qwen--Qwen2.5-1.5B-Instruct");
  r = parse_repo_id("openai/gsm8k@v1.0", RepoType::kDataset);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, "openai/gsm8k");
  EXPECT_EQ(r->revision, "v1.0");
  EXPECT_EQ(repo_folder_name(*r), "datasets--openai--gsm8k");
  EXPECT_TRUE(parse_repo_id("gpt2", RepoType::kModel));
  for (const char* bad :
       {"/abs/path", "./rel", "../up", "~/x", "a/b/c", "a--b/c", "a/..b", "-a/b", "a/b@", "a b/c", ""})
    EXPECT_FALSE(parse_repo_id(bad, RepoType::kModel)) << bad;
  EXPECT_TRUE(is_commit_sha(std::string(40, 'a')));
  EXPECT_FALSE(is_commit_sha(std::string(40, 'g')));
  EXPECT_FALSE(is_commit_sha("main"));
}

TEST(HubRepo, ExistingLocalPathIsNeverAnId) {
  const std::string d = "hub_unit_local_" + std::to_string(getpid());
  fs::create_directories(d + "/model");
  EXPECT_FALSE(parse_repo_id(d + "/model", RepoType::kModel));
  EXPECT_EQ(resolve_model_dir(d + "/model"), d + "/model");
  fs::remove_all(d);
}

TEST(HubHttp, QuoteAndEtag) {
  EXPECT_EQ(url_quote("refs/pr/1", ""), "refs%2Fpr%2F1");
  EXPECT_EQ(url_quote("data/train 1.csv"), "data/train%201.csv");
  EXPECT_EQ(normalize_etag("W/\"abc\""), "abc");
  EXPECT_EQ(normalize_etag("\"abc\""), "abc");
  EXPECT_EQ(HttpClient::resolve_url("http://h:1/a/resolve/main/x", "/b/resolve/main/x"), "http://h:1/b/resolve/main/x");
  EXPECT_EQ(HttpClient::resolve_url("http://h:1/a/b", "https://cdn/x"), "https://cdn/x");
}

// Clears every Hub variable, then sets `vars`.
void reset_env(std::initializer_list<std::pair<const char*, std::string>> vars) {
  for (const char* k :
       {"HF_ENDPOINT", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"})
    unsetenv(k);
  for (const auto& [k, v] : vars) setenv(k, v.c_str(), 1);
}

TEST(HubEnv, Defaults) {
  reset_env({{"HOME", "/home/u"}});
  HubEnv e = HubEnv::from_environment();
  EXPECT_EQ(e.endpoint, "https://huggingface.co");
  EXPECT_EQ(e.cache_dir, "/home/u/.cache/huggingface/hub");
  EXPECT_FALSE(e.offline);
  reset_env({{"HOME", "/home/u"},
             {"XDG_CACHE_HOME", "/xdg"},
             {"HF_ENDPOINT", "http://h:9/"},
             {"TRANSFORMERS_OFFLINE", "yes"}});
  e = HubEnv::from_environment();
  EXPECT_EQ(e.cache_dir, "/xdg/huggingface/hub");
  EXPECT_EQ(e.endpoint, "http://h:9");
  EXPECT_TRUE(e.offline);
  reset_env({{"HF_HOME", "/hf"}, {"HF_DATASETS_OFFLINE", "1"}});
  e = HubEnv::from_environment();
  EXPECT_EQ(e.cache_dir, "/hf/hub");
  EXPECT_FALSE(e.offline);
  EXPECT_TRUE(e.datasets_offline);
  reset_env({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", "/c"}, {"HF_HUB_OFFLINE", "0"}});
  EXPECT_EQ(HubEnv::from_environment().cache_dir, "/c");
  EXPECT_FALSE(HubEnv::from_environment().offline);
}

TEST(HubEnv, TokenFromFile) {
  const std::string home = (fs::temp_directory_path() / ("hub_home_" + std::to_string(getpid()))).string();
  fs::create_directories(home);
  std::ofstream(home + "/token") << "hf_file_token\n";
  reset_env({{"HF_HOME", home}});
  EXPECT_EQ(HubEnv::from_environment().token, "hf_file_token");
  std::ofstream(home + "/other") << "hf_other";
  reset_env({{"HF_HOME", home}, {"HF_TOKEN_PATH", home + "/other"}});
  EXPECT_EQ(HubEnv::from_environment().token, "hf_other");
  reset_env({{"HF_HOME", home}, {"HF_TOKEN", "hf_env"}});
  EXPECT_EQ(HubEnv::from_environment().token, "hf_env");
  fs::remove_all(home);
}

TEST(HubGlob, FsspecRules) {
  EXPECT_TRUE(glob_match("data/*.csv", "data/a.csv"));
  EXPECT_FALSE(glob_match("data/*.csv", "data/x/a.csv"));
  EXPECT_TRUE(glob_match("data/**", "data/x/a.csv"));
  EXPECT_TRUE(glob_match("**/a.csv", "a.csv"));
  EXPECT_TRUE(glob_match("**[-._ 0-9/]train[-._ 0-9]*", "data/train-00000-of-00001.parquet"));
  EXPECT_FALSE(glob_match("**[-._ 0-9/]train[-._ 0-9]*", "data/constrain.csv"));
  EXPECT_TRUE(glob_match("main/train-*", "main/train-0.jsonl"));
  EXPECT_TRUE(glob_match("file?.csv", "file1.csv"));
  EXPECT_TRUE(glob_match("x[!a].csv", "xb.csv"));
  EXPECT_FALSE(glob_match("x[!a].csv", "xa.csv"));
}

TEST(HubDataFiles, DefaultPatternsFileNames) {
  const Files repo = {"README.md", "test.csv", "train.csv", "validation.csv", "notes.txt"};
  EXPECT_EQ(select_data_files(repo, "", "", "train", "o/d"), Files{"train.csv"});
  EXPECT_EQ(select_data_files(repo, "", "", "test", "o/d"), Files{"test.csv"});
  EXPECT_EQ(select_data_files(repo, "", "", "validation", "o/d"), Files{"validation.csv"});
  // "eval" is a keyword of the test split, "dev" of validation
  EXPECT_EQ(select_data_files({"my_eval.jsonl", "dev.jsonl", "train_part.jsonl"}, "", "", "test", "o/d"),
            Files{"my_eval.jsonl"});
  EXPECT_EQ(select_data_files({"my_eval.jsonl", "dev.jsonl", "train_part.jsonl"}, "", "", "validation", "o/d"),
            Files{"dev.jsonl"});
  EXPECT_THROW(select_data_files(repo, "", "", "other", "o/d"), ConfigError);
}

TEST(HubDataFiles, FoldersShardsAndAllTrain) {
  // split folders win over file names
  EXPECT_EQ(select_data_files({"train/b.jsonl", "train/a.jsonl", "test/x.jsonl", "train-extra.jsonl"}, "", "", "train",
                              "o/d"),
            (Files{"train/a.jsonl", "train/b.jsonl"}));
  // sharded data/{split}-NNNNN-of-NNNNN: split names come from the files
  const Files sharded = {"data/train-00001-of-00002.parquet", "data/train-00000-of-00002.parquet",
                         "data/extra-00000-of-00001.parquet"};
  EXPECT_EQ(select_data_files(sharded, "", "", "train", "o/d"),
            (Files{"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"}));
  EXPECT_EQ(select_data_files(sharded, "", "", "extra", "o/d"), Files{"data/extra-00000-of-00001.parquet"});
  // no split names: everything is train, hidden files skipped, one format (most common)
  EXPECT_EQ(
      select_data_files({"b.jsonl", "a.json", ".hidden/c.jsonl", "__x/d.jsonl", "only.csv"}, "", "", "train", "o/d"),
      (Files{"a.json", "b.jsonl"}));
  EXPECT_THROW(select_data_files({"a.jsonl"}, "", "", "test", "o/d"), ConfigError);
}

TEST(HubDataFiles, SubsetFolderWithoutConfigs) {
  const Files repo = {"main/train.jsonl", "main/test.jsonl", "socratic/train.jsonl"};
  EXPECT_EQ(select_data_files(repo, "", "socratic", "train", "o/d"), Files{"socratic/train.jsonl"});
  EXPECT_EQ(select_data_files(repo, "", "main", "test", "o/d"), Files{"main/test.jsonl"});
  EXPECT_THROW(select_data_files(repo, "", "nope", "train", "o/d"), ConfigError);
}

TEST(HubDataFiles, ReadmeConfigs) {
  const std::string readme =
      "---\n"
      "license: mit\n"
      "configs:\n"
      "- config_name: main\n"
      "  data_files:\n"
      "  - split: train\n"
      "    path: main/train-*\n"
      "  - split: test\n"
      "    path: [main/test.csv, extra/more_test.csv]\n"
      "  default: true\n"
      "- config_name: socratic\n"
      "  data_dir: soc\n"
      "  data_files: {train: 'tr*.csv'}\n"
      "- config_name: plain\n"
      "  data_dir: plain\n"
      "---\n# card\n";
  const Files repo = {"README.md",  "main/train-1.csv", "main/train-0.csv", "main/test.csv", "extra/more_test.csv",
                      "soc/tr.csv", "soc/test.csv",     "plain/train.csv",  "plain/test.csv"};
  EXPECT_EQ(select_data_files(repo, readme, "", "train", "o/d"), (Files{"main/train-0.csv", "main/train-1.csv"}));
  // pattern order is kept (datasets concatenates each pattern's sorted matches)
  EXPECT_EQ(select_data_files(repo, readme, "main", "test", "o/d"), (Files{"main/test.csv", "extra/more_test.csv"}));
  EXPECT_EQ(select_data_files(repo, readme, "socratic", "train", "o/d"), Files{"soc/tr.csv"});
  EXPECT_EQ(select_data_files(repo, readme, "plain", "test", "o/d"), Files{"plain/test.csv"});
  try {
    select_data_files(repo, readme, "missing", "train", "o/d");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("configs: main, socratic, plain"), std::string::npos) << e.what();
  }
  EXPECT_THROW(select_data_files(repo, readme, "socratic", "test", "o/d"), ConfigError);
}

TEST(HubModelFiles, WhatTrinityReads) {
  const Files single = {"config.json", "tokenizer.json",        "model.safetensors",      "pytorch_model.bin",
                        "README.md",   "tokenizer_config.json", "generation_config.json", "onnx/model.safetensors",
                        "vocab.txt"};
  EXPECT_EQ(model_files(single, ""), (Files{"config.json", "generation_config.json", "tokenizer.json",
                                            "tokenizer_config.json", "model.safetensors"}));
  const Files sharded = {"config.json",
                         "model.safetensors.index.json",
                         "model-00001-of-00002.safetensors",
                         "model-00002-of-00002.safetensors",
                         "consolidated.safetensors",
                         "chat_template.jinja"};
  const std::string index =
      R"({"metadata": {}, "weight_map": {"a": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors"}})";
  EXPECT_EQ(model_files(sharded, index),
            (Files{"config.json", "chat_template.jinja", "model.safetensors.index.json",
                   "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
  EXPECT_EQ(model_files(sharded, index, false), (Files{"config.json", "chat_template.jinja"}));
}

// A cache written as huggingface_hub writes it, used offline (and with an endpoint that would fail).
class HubOfflineCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("trinity_hub_unit_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    test::write_hf_cache(dir_, "models--Org--Tiny", "main", kCommit,
                         {{"config.json", "{}"}, {"tokenizer.json", "{}"}, {"model.safetensors", "weights"}});
    test::write_hf_cache(dir_, "models--Org--NoWeights", "main", kCommit, {{"config.json", "{}"}});
    test::write_hf_cache(dir_, "datasets--Org--Math", "main", kCommit,
                         {{"README.md",
                           "---\nconfigs:\n- config_name: easy\n  data_files:\n  - split: train\n"
                           "    path: easy/*.jsonl\n---\n"},
                          {"easy/b.jsonl", "{}\n"},
                          {"easy/a.jsonl", "{}\n"},
                          {"hard/a.jsonl", "{}\n"}});
  }
  void TearDown() override { fs::remove_all(dir_); }
  static constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";
  std::string dir_;
};

TEST_F(HubOfflineCache, ModelFromCache) {
  reset_env({{"HF_HUB_CACHE", dir_}, {"HF_HUB_OFFLINE", "1"}, {"HF_ENDPOINT", "http://127.0.0.1:1"}});
  const std::string snap = dir_ + "/models--Org--Tiny/snapshots/" + kCommit;
  EXPECT_EQ(resolve_model_dir("Org/Tiny"), snap);
  EXPECT_EQ(resolve_model_dir(std::string("Org/Tiny@") + kCommit), snap);  // by commit
  EXPECT_EQ(fs::file_size(snap + "/model.safetensors"), 7u);               // through the relative symlink
  EXPECT_NE(describe_model("Org/Tiny").find("cached (snapshot " + snap), std::string::npos)
      << describe_model("Org/Tiny");
}

TEST_F(HubOfflineCache, OfflineMissingIsOneClearError) {
  reset_env({{"HF_HUB_CACHE", dir_}, {"HF_HUB_OFFLINE", "1"}, {"HF_ENDPOINT", "http://127.0.0.1:1"}});
  try {
    resolve_model_dir("Org/NoWeights", "model.model_path");
    FAIL();
  } catch (const IoError& e) {
    const std::string m = e.what();
    for (const char* want : {"[hub]", "model Org/NoWeights@main", "tokenizer.json", "model.safetensors", "snapshots/",
                             "HF_HUB_OFFLINE", "model.model_path"})
      EXPECT_NE(m.find(want), std::string::npos) << want << " in " << m;
  }
  try {
    resolve_model_dir("Org/Absent@v2");
    FAIL();
  } catch (const IoError& e) {
    const std::string m = e.what();
    for (const char* want : {"model Org/Absent@v2", "refs/v2", dir_.c_str(), "HF_HUB_OFFLINE"})
      EXPECT_NE(m.find(want), std::string::npos) << want << " in " << m;
  }
  EXPECT_NE(describe_model("Org/Absent").find("HF_HUB_OFFLINE is set: the run will fail"), std::string::npos);
}

TEST_F(HubOfflineCache, DatasetFromCache) {
  reset_env({{"HF_HUB_CACHE", dir_}, {"HF_DATASETS_OFFLINE", "1"}, {"HF_ENDPOINT", "http://127.0.0.1:1"}});
  const std::string snap = dir_ + "/datasets--Org--Math/snapshots/" + kCommit;
  EXPECT_EQ(resolve_dataset_files("Org/Math", "train", "easy"),
            (Files{snap + "/easy/a.jsonl", snap + "/easy/b.jsonl"}));
  try {
    resolve_dataset_files("Org/Math", "test", "easy");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("no split 'test'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trinity::hub
