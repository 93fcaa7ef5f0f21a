// Tasksets: JSONL / JSON array / CSV files and directories (split, subset_name), format keys, bad rows
// (skipped + counted with line numbers, or errors when strict), parquet errors, selectors, mixing,
// epochs / total_steps, resume of the scheduler, and config parsing with unknown-key paths.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "buffer/config_json.h"
#include "buffer/dataset.h"
#include "buffer/task_scheduler.h"
#include "core/error.h"
#include "test_util.h"

using namespace trinity::buffer;
using trinity::buffer::testing::temp_dir;

namespace {

void write_file(const std::string& p, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(p).parent_path());
  std::ofstream(p) << text;
}

std::string jsonl(int n, int start = 0, const std::string& extra = "") {
  std::string s;
  for (int i = start; i < start + n; ++i)
    s += "{\"question\": \"q" + std::to_string(i) + "\", \"answer\": \"" + std::to_string(i) + "\"" + extra + "}\n";
  return s;
}

TasksetConfig ts_cfg(const std::string& path) {
  TasksetConfig c;
  c.name = "t";
  c.path = path;
  c.format.prompt_key = "question";
  c.format.response_key = "answer";
  return c;
}

std::shared_ptr<const Taskset> load(const TasksetConfig& c) { return std::make_shared<const Taskset>(Taskset::load(c)); }

}  // namespace

TEST(BufferDataset, ReadsJsonlJsonArrayCsv) {
  const std::string d = temp_dir("ds");
  write_file(d + "/a.jsonl", jsonl(3));
  write_file(d + "/b.json", "[{\"question\": \"x\", \"answer\": 1}, {\"question\": \"y\", \"answer\": 2}]");
  write_file(d + "/c.csv", "\xEF\xBB\xBFquestion,answer\n\"hello, \"\"world\"\"\",42\n\"multi\nline\",7\n");
  Taskset a = Taskset::load(ts_cfg(d + "/a.jsonl"));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a.at(1).task_desc, "q1");
  EXPECT_EQ(a.at(1).truth, "1");
  EXPECT_EQ(a.at(2).index.row, 2);
  Taskset b = Taskset::load(ts_cfg(d + "/b.json"));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b.at(1).truth, "2");  // non-string cells are kept as JSON text
  Taskset c = Taskset::load(ts_cfg(d + "/c.csv"));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.at(0).task_desc, "hello, \"world\"");
  EXPECT_EQ(c.at(1).task_desc, "multi\nline");
  EXPECT_EQ(c.at(1).truth, "7");
}

TEST(BufferDataset, FormatKeysFillTheTask) {
  const std::string d = temp_dir("fmt");
  write_file(d + "/t.jsonl",
             "{\"q\": \"2+2\", \"a\": \"4\", \"sys\": \"row system\", \"wf\": \"math_workflow\", "
             "\"msgs\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tl\": [{\"name\": \"calc\"}]}\n"
             "{\"q\": \"3+3\"}\n");
  TasksetConfig c;
  c.path = d + "/t.jsonl";
  c.index = 3;
  c.format.prompt_key = "q";
  c.format.response_key = "a";
  c.format.system_prompt_key = "sys";
  c.format.system_prompt = "default system";
  c.format.reply_prefix = "Answer:";
  c.format.workflow_key = "wf";
  c.format.messages_key = "msgs";
  c.format.tools_key = "tl";
  c.default_workflow_type = "simple_workflow";
  c.default_reward_fn_type = "accuracy";
  c.workflow_args = "{\"k\": 2}";
  c.rollout_args.temperature = 0.5;
  c.repeat_times = 4;
  Taskset t = Taskset::load(c);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at(0).system_prompt, "row system");
  EXPECT_EQ(t.at(1).system_prompt, "default system");
  EXPECT_EQ(t.at(0).workflow, "math_workflow");
  EXPECT_EQ(t.at(1).workflow, "simple_workflow");
  EXPECT_EQ(t.at(1).reward_fn, "accuracy");
  EXPECT_EQ(t.at(0).reply_prefix, "Answer:");
  EXPECT_EQ(t.at(0).messages, "[{\"content\":\"hi\",\"role\":\"user\"}]");
  EXPECT_EQ(t.at(0).tools, "[{\"name\":\"calc\"}]");
  EXPECT_EQ(t.at(1).truth, "");
  EXPECT_EQ(t.at(0).workflow_args, "{\"k\":2}");
  EXPECT_EQ(t.at(0).rollout_args.temperature, 0.5);
  EXPECT_EQ(t.at(0).repeat_times, 4);
  EXPECT_EQ(t.at(1).index, (TaskIndex{3, 1}));
  EXPECT_EQ(nlohmann::json::parse(t.at(0).raw).at("q"), "2+2");
}

TEST(BufferDataset, BadRowsSkippedCountedAndReported) {
  const std::string d = temp_dir("badrows");
  write_file(d + "/t.jsonl", jsonl(2) + "{\"answer\": \"no question\"}\n\n{broken json\n[1,2]\n" + jsonl(1, 5));
  TasksetConfig c = ts_cfg(d + "/t.jsonl");
  Taskset t = Taskset::load(c);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.report().rows_read, 6);
  EXPECT_EQ(t.report().rows_skipped, 3);
  ASSERT_EQ(t.report().problems.size(), 3u);
  EXPECT_NE(t.report().problems[0].find("t.jsonl:3: missing required key 'question'"), std::string::npos)
      << t.report().problems[0];
  EXPECT_NE(t.report().problems[1].find("t.jsonl:5: invalid JSON"), std::string::npos) << t.report().problems[1];
  EXPECT_NE(t.report().problems[2].find("t.jsonl:6: row is not a JSON object"), std::string::npos);
  c.strict = true;
  try {
    Taskset::load(c);
    FAIL();
  } catch (const trinity::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("t.jsonl:3"), std::string::npos) << e.what();
  }
  write_file(d + "/bad.csv", "question,answer\nx,1\ny\n");
  Taskset csv = Taskset::load(ts_cfg(d + "/bad.csv"));
  EXPECT_EQ(csv.size(), 1u);
  EXPECT_NE(csv.report().problems.at(0).find("bad.csv:3: 1 CSV fields where the header has 2"), std::string::npos);
  write_file(d + "/empty.jsonl", "{\"x\": 1}\n");
  EXPECT_THROW(Taskset::load(ts_cfg(d + "/empty.jsonl")), trinity::ValueError);
  write_file(d + "/broken.json", "[{\"question\": 1},");
  EXPECT_THROW(Taskset::load(ts_cfg(d + "/broken.json")), trinity::ValueError);
}

// Rows of a workflow that reads its own fields (frozen lake: seed / size / p, no prompt) are kept
// when the explorer says the workflow needs no prompt; otherwise they are skipped as before.
TEST(BufferDataset, PromptNotRequiredKeepsRowsWithoutIt) {
  const std::string d = temp_dir("noprompt");
  write_file(d + "/lake.jsonl", "{\"seed\": 1, \"size\": 3, \"p\": 0.8}\n{\"seed\": 2, \"size\": 4, \"p\": 0.8}\n");
  TasksetConfig c;
  c.name = "lake";
  c.path = d + "/lake.jsonl";
  EXPECT_THROW(Taskset::load(c), trinity::ValueError);  // default: a task needs its prompt key
  c.prompt_required = false;
  const Taskset t = Taskset::load(c);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.report().rows_skipped, 0);
  EXPECT_EQ(t.at(1).task_desc, "");
  EXPECT_NE(t.at(1).raw.find("seed"), std::string::npos) << t.at(1).raw;
}

TEST(BufferDataset, DirectoriesSplitsSubsetsParquet) {
  const std::string d = temp_dir("dirs");
  write_file(d + "/plain/part1.jsonl", jsonl(2));
  write_file(d + "/plain/part2.jsonl", jsonl(3));
  write_file(d + "/splits/train.jsonl", jsonl(4));
  write_file(d + "/splits/test.jsonl", jsonl(1));
  write_file(d + "/nested/main/test/0.jsonl", jsonl(2));
  write_file(d + "/nested/main/train-00000-of-00002.jsonl", jsonl(5));
  write_file(d + "/nested/main/train-00001-of-00002.jsonl", jsonl(5));
  write_file(d + "/pq/train.parquet", "PAR1");
  EXPECT_EQ(Taskset::load(ts_cfg(d + "/plain")).size(), 5u);
  EXPECT_EQ(Taskset::load(ts_cfg(d + "/splits")).size(), 4u);
  TasksetConfig c = ts_cfg(d + "/splits");
  c.split = "test";
  EXPECT_EQ(Taskset::load(c).size(), 1u);
  c.split = "validation";
  EXPECT_THROW(Taskset::load(c), trinity::IoError);
  TasksetConfig n = ts_cfg(d + "/nested");
  n.subset_name = "main";
  EXPECT_EQ(Taskset::load(n).size(), 10u);
  n.split = "test";
  EXPECT_EQ(Taskset::load(n).size(), 2u);
  n.subset_name = "nope";
  EXPECT_THROW(Taskset::load(n), trinity::IoError);
  // Parquet is read (buffer/parquet; parquet_golden_test covers real files); a broken one names the file.
  try {
    Taskset::load(ts_cfg(d + "/pq"));
    FAIL();
  } catch (const trinity::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("train.parquet: not a parquet file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Taskset::load(ts_cfg(d + "/pq/train.parquet")), trinity::IoError);
  EXPECT_THROW(Taskset::load(ts_cfg(d + "/missing")), trinity::IoError);
}

TEST(BufferDataset, SftAndDpoRowsValidated) {
  const std::string d = temp_dir("sft");
  write_file(d + "/sft.jsonl",
             "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}\n{\"prompt\": \"x\"}\n");
  write_file(d + "/dpo.jsonl", "{\"prompt\": \"p\", \"chosen\": \"c\", \"rejected\": \"r\"}\n{\"prompt\": \"p\", \"chosen\": \"c\"}\n");
  FormatConfig f;
  f.messages_key = "messages";
  LoadReport rep;
  auto rows = Taskset::load_rows(d + "/sft.jsonl", "train", "", f, DatasetKind::kSft, false, rep);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(rep.rows_skipped, 1);
  LoadReport rep2;
  f.prompt_type = "plaintext";
  auto dpo = Taskset::load_rows(d + "/dpo.jsonl", "train", "", f, DatasetKind::kDpo, false, rep2);
  EXPECT_EQ(dpo.size(), 1u);
  EXPECT_NE(rep2.problems.at(0).find("dpo.jsonl:2: missing required key 'rejected'"), std::string::npos);
}

// ---- selectors and scheduler ----

namespace {
std::vector<int64_t> rows_of(const std::vector<Task>& b) {
  std::vector<int64_t> r;
  for (const auto& t : b) r.push_back(t.index.row);
  return r;
}
}  // namespace

TEST(BufferScheduler, SequentialEpochsAndSteps) {
  const std::string d = temp_dir("seq");
  write_file(d + "/t.jsonl", jsonl(5));
  auto ts = load(ts_cfg(d + "/t.jsonl"));
  TasksetScheduler s({ts}, 2, /*epochs=*/2);
  EXPECT_EQ(s.max_steps(), 5);  // 2 * 5 / 2
  std::vector<int64_t> all;
  while (auto b = s.next_batch()) {
    EXPECT_EQ(b->size(), 2u);
    for (auto r : rows_of(*b)) all.push_back(r);
  }
  EXPECT_EQ(all, (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  TasksetScheduler steps({ts}, 3, 1, /*total_steps=*/4);
  int n = 0;
  while (steps.next_batch()) ++n;
  EXPECT_EQ(n, 4);
  TasksetScheduler eval({ts}, 2, 1, std::nullopt, /*is_eval=*/true);
  std::vector<size_t> sizes;
  while (auto b = eval.next_batch()) sizes.push_back(b->size());
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 2, 1}));  // eval keeps the last partial batch
}

TEST(BufferScheduler, ShuffleRandomEasy2Hard) {
  const std::string d = temp_dir("sel");
  std::string rows;
  for (int i = 0; i < 8; ++i)
    rows += "{\"question\": \"q" + std::to_string(i) + "\", \"acc\": " + std::to_string((i * 3) % 8) + "}\n";
  write_file(d + "/t.jsonl", rows);
  TasksetConfig c = ts_cfg(d + "/t.jsonl");
  c.data_selector.selector_type = "shuffle";
  auto ts = load(c);
  TasksetReader r(ts);
  auto e0 = rows_of(r.read(8)), e1 = rows_of(r.read(8));
  EXPECT_EQ(std::set<int64_t>(e0.begin(), e0.end()).size(), 8u);  // a permutation per epoch
  EXPECT_EQ(std::set<int64_t>(e1.begin(), e1.end()).size(), 8u);
  EXPECT_NE(e0, e1);
  TasksetReader again(ts);
  EXPECT_EQ(rows_of(again.read(8)), e0);  // deterministic from seed
  c.data_selector.seed = 7;
  TasksetReader other(load(c));
  EXPECT_NE(rows_of(other.read(8)), e0);

  c.data_selector.selector_type = "random";
  TasksetReader rnd(load(c));
  auto b = rows_of(rnd.read(5));
  EXPECT_EQ(std::set<int64_t>(b.begin(), b.end()).size(), 5u);  // without replacement within a read

  c.data_selector.selector_type = "offline_easy2hard";
  c.data_selector.feature_keys = {"acc"};
  TasksetReader easy(load(c));
  std::vector<double> acc;
  for (const auto& t : easy.read(8)) acc.push_back(nlohmann::json::parse(t.raw).at("acc").get<double>());
  EXPECT_TRUE(std::is_sorted(acc.rbegin(), acc.rend()));  // highest (easiest) first
  c.data_selector.selector_type = "bogus";
  EXPECT_THROW(TasksetReader(load(c)), trinity::ConfigError);
}

TEST(BufferScheduler, MixesTasksetsProportionallyAndResumes) {
  const std::string d = temp_dir("mix");
  write_file(d + "/a.jsonl", jsonl(30));
  write_file(d + "/b.jsonl", jsonl(10));
  TasksetConfig ca = ts_cfg(d + "/a.jsonl"), cb = ts_cfg(d + "/b.jsonl");
  cb.index = 1;
  auto a = load(ca), b = load(cb);
  TasksetScheduler s({a, b}, 8, /*epochs=*/2);
  EXPECT_EQ(s.max_steps(), 10);
  std::map<int64_t, int> per_set;
  std::vector<std::vector<int64_t>> seq;
  std::string mid_state;
  while (auto batch = s.next_batch()) {
    std::vector<int64_t> ids;
    for (const auto& t : *batch) {
      per_set[t.index.taskset_id]++;
      ids.push_back(t.index.taskset_id * 100 + t.index.row);
    }
    seq.push_back(ids);
    if (s.step() == 4) mid_state = s.state();
  }
  EXPECT_EQ(per_set[0], 60);  // exactly proportional over whole epochs
  EXPECT_EQ(per_set[1], 20);
  // Resume from step 4 replays steps 5..10 exactly.
  TasksetScheduler r({a, b}, 8, 2);
  r.load_state(mid_state);
  for (size_t k = 4; k < seq.size(); ++k) {
    auto batch = r.next_batch();
    ASSERT_TRUE(batch);
    std::vector<int64_t> ids;
    for (const auto& t : *batch) ids.push_back(t.index.taskset_id * 100 + t.index.row);
    EXPECT_EQ(ids, seq[k]) << "step " << k;
  }
  EXPECT_FALSE(r.next_batch());
  EXPECT_THROW(r.load_state("{\"step\": 1, \"taskset_states\": []}"), trinity::ValueError);
}

// ---- config ----

TEST(BufferConfig, FromJsonWithDefaultsAndUnknownKeys) {
  auto j = nlohmann::json::parse(R"({
    "name": "exp", "storage_type": "SQL", "path": "sqlite:///x.db", "capacity": 64,
    "replay_buffer": {"enable": true, "priority_fn": "decay_limit_randomization", "reuse_cooldown_time": 2.5,
                      "priority_fn_args": {"decay": 1.5, "use_count_limit": 4, "sigma": 0.1}},
    "format": {"prompt_key": "q"}})");
  StorageConfig s;
  storage_config_from_json(j, s, "buffer.trainer_input.experience_buffer");
  EXPECT_EQ(s.storage_type, "sql");
  EXPECT_EQ(s.capacity, 64);
  EXPECT_EQ(s.max_read_timeout, 1800.0);
  EXPECT_TRUE(s.replay_buffer.enable);
  EXPECT_EQ(s.replay_buffer.reuse_cooldown_time, 2.5);
  EXPECT_EQ(s.replay_buffer.use_count_limit, 4);
  EXPECT_EQ(s.format.prompt_key, "q");
  EXPECT_EQ(s.format.response_key, "response");

  auto bad = nlohmann::json::parse(R"({"name": "e", "replay_buffer": {"enabel": true}, "capcity": 3,
                                       "format": {"promt_key": "x"}})");
  std::vector<std::string> unknown;
  StorageConfig s2;
  storage_config_from_json(bad, s2, "buffer.trainer_input.experience_buffer", &unknown);
  std::sort(unknown.begin(), unknown.end());
  EXPECT_EQ(unknown, (std::vector<std::string>{"buffer.trainer_input.experience_buffer.capcity",
                                               "buffer.trainer_input.experience_buffer.format.promt_key",
                                               "buffer.trainer_input.experience_buffer.replay_buffer.enabel"}));
  try {
    storage_config_from_json(bad, s2, "buffer.x");
    FAIL();
  } catch (const trinity::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'buffer.x."), std::string::npos) << e.what();
  }
  EXPECT_THROW(storage_config_from_json(nlohmann::json::parse(R"({"capacity": "big"})"), s2, "b"),
               trinity::ConfigError);
  EXPECT_THROW(storage_config_from_json(nlohmann::json::parse(R"({"storage_type": "redis"})"), s2, "b"),
               trinity::ConfigError);

  auto t = nlohmann::json::parse(R"({"name": "gsm8k", "path": "data/gsm8k", "split": "test",
     "format": {"prompt_key": "question", "response_key": "answer"},
     "rollout_args": {"temperature": 1.0, "max_tokens": 256}, "workflow_args": {"a": 1},
     "default_workflow_type": "math_workflow", "task_selector": {"selector_type": "shuffle", "seed": 3},
     "repeat_times": 2, "total_steps": 9})");
  TasksetConfig tc;
  taskset_config_from_json(t, tc, "buffer.explorer_input.taskset");
  EXPECT_EQ(tc.split, "test");
  EXPECT_EQ(tc.rollout_args.max_tokens, 256);
  EXPECT_EQ(tc.data_selector.selector_type, "shuffle");
  EXPECT_EQ(tc.data_selector.seed, 3);
  EXPECT_EQ(tc.total_steps, 9);
  EXPECT_EQ(tc.storage_type, "file");
  EXPECT_EQ(tc.workflow_args, "{\"a\":1}");
  try {
    taskset_config_from_json(nlohmann::json::parse(R"({"rollout_args": {"temprature": 1}})"), tc,
                             "buffer.explorer_input.tasksets[0]");
    FAIL();
  } catch (const trinity::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("buffer.explorer_input.tasksets[0].rollout_args.temprature"),
              std::string::npos) << e.what();
  }
}
