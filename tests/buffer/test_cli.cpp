// `trinity buffer stats|head|export` on a sqlite buffer written by the library: counts, histogram,
// lossless export (re-read through the JSONL storage), and clear errors for missing / parquet paths.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "buffer/storage.h"
#include "test_util.h"

using namespace trinity::buffer;
using trinity::buffer::testing::make_exp;
using trinity::buffer::testing::temp_dir;

namespace {

struct CmdResult {
  int rc;
  std::string out;
};

CmdResult run(const std::string& args) {
  const std::string cmd = std::string(TRINITY_BINARY_DIR) + "/trinity " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  CmdResult r{-1, ""};
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace

TEST(BufferCli, StatsHeadExport) {
  const std::string dir = temp_dir("cli");
  const std::string db = dir + "/b.db";
  std::vector<Experience> in;
  {
    StorageConfig c;
    c.storage_type = "sql";
    c.path = "sqlite:///" + db;
    auto s = open_storage(c);
    for (int i = 0; i < 10; ++i) in.push_back(make_exp(i, 20, /*pending=*/i >= 8, /*version=*/i % 3));
    s->write(in);
    ReadRequest r;
    r.batch_size = 3;
    ReadResult got = s->read(r);
    s->ack(got.lease);
  }
  CmdResult st = run("buffer stats --json --path sqlite:///" + db);
  ASSERT_EQ(st.rc, 0) << st.out;
  auto j = nlohmann::json::parse(st.out);
  EXPECT_EQ(j["total"], 10);
  EXPECT_EQ(j["pending"], 2);
  EXPECT_EQ(j["consumed"], 3);
  EXPECT_EQ(j["ready"], 5);
  EXPECT_EQ(j["by_model_version"]["0"], 4);
  EXPECT_EQ(j["reward"]["count"], 8);
  int64_t hist = 0;
  for (const auto& b : j["reward"]["histogram"]) hist += b["count"].get<int64_t>();
  EXPECT_EQ(hist, 8);
  CmdResult text = run("buffer stats --path " + db);
  ASSERT_EQ(text.rc, 0) << text.out;
  EXPECT_NE(text.out.find("pending 2"), std::string::npos) << text.out;

  CmdResult head = run("buffer head --n 2 --path " + db);
  ASSERT_EQ(head.rc, 0) << head.out;
  EXPECT_NE(head.out.find(in[0].eid.uid()), std::string::npos) << head.out;
  EXPECT_EQ(head.out.find(in[2].eid.uid()), std::string::npos);

  CmdResult ex = run("buffer export --path " + db + " --out " + dir + "/out.jsonl");
  ASSERT_EQ(ex.rc, 0) << ex.out;
  auto back = open_storage_url(dir + "/out.jsonl")->scan(0, 100);
  ASSERT_EQ(back.size(), 10u);
  for (size_t i = 0; i < back.size(); ++i) {
    Experience want = in[i];
    want.use_count = back[i].use_count;
    EXPECT_TRUE(back[i] == want) << i;
  }
  CmdResult again = run("buffer stats --json --path " + dir + "/out.jsonl");
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_EQ(nlohmann::json::parse(again.out)["total"], 10);

  CmdResult missing = run("buffer stats --path " + dir + "/nope.db");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.out.find("no such file"), std::string::npos) << missing.out;
  CmdResult pq = run("buffer head --path " + dir + "/x.parquet");
  EXPECT_EQ(pq.rc, 1);
  CmdResult wrong = run("buffer stats --path " + db + "#nope");
  EXPECT_EQ(wrong.rc, 1);
  EXPECT_NE(wrong.out.find("buffers there: experience_buffer"), std::string::npos) << wrong.out;
  CmdResult noflag = run("buffer stats");
  EXPECT_NE(noflag.rc, 0);
}
