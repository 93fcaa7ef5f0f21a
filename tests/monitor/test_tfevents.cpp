// TensorBoard event files: CRC32C known vectors, and files written by Monitor decoded by the
// test's independent reader (tf_decoder.h): CRCs verify, file_version first, tags/values/steps
// round trip, text summaries carry the text. Optional oracle: protoc --decode with the real
// tensorflow Event field layout (skipped when protobuf-compiler is not installed).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "monitor/monitor.h"
#include "monitor/tfevents.h"
#include "tf_decoder.h"

namespace fs = std::filesystem;
using namespace trinity::monitor;

namespace {

std::string temp_dir() {
  std::string t = (fs::temp_directory_path() / "trinity_tfevents_XXXXXX").string();
  if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
  return t;
}
std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(TfEvents, Crc32cKnownVectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(tfdec::crc32c_bitwise("123456789"), 0xE3069283u);
  EXPECT_EQ(masked_crc32c("123456789"), tfdec::mask(0xE3069283u));
}

TEST(TfEvents, RecordFraming) {
  const std::string rec = tfrecord("hello");
  ASSERT_EQ(rec.size(), 8u + 4 + 5 + 4);
  std::vector<std::string> recs;
  std::string err;
  ASSERT_TRUE(tfdec::read_records(rec, recs, err)) << err;
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0], "hello");
  std::string bad = rec;
  bad[13] ^= 1;  // flip a payload bit: the data CRC must catch it
  recs.clear();
  EXPECT_FALSE(tfdec::read_records(bad, recs, err));
  EXPECT_EQ(err, "data crc");
}

TEST(TfEvents, MonitorEventFileRoundTrips) {
  const std::string dir = temp_dir();
  std::string path;
  {
    Monitor m(dir, "trainer", "tensorboard");
    path = m.event_file_path();
    m.log({{"actor/pg_loss", -0.0123}, {"critic/score/mean", 0.41}}, 1);
    m.log({{"actor/pg_loss", 0.5}, {"time/step", 1.25}}, 2);
    m.log({{"neg_step_ok", 3.0}}, 123456789012LL);
    m.log_text("rollout_examples", "prompt | response | 1.0", 2);
  }
  ASSERT_EQ(fs::path(path).parent_path(), fs::path(dir) / "monitor/tensorboard/trainer");
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u);
  std::vector<std::string> recs;
  std::string err;
  ASSERT_TRUE(tfdec::read_records(slurp(path), recs, err)) << err;
  ASSERT_EQ(recs.size(), 5u);
  const auto e0 = tfdec::decode_event(recs[0]);
  EXPECT_EQ(e0.file_version, "brain.Event:2");
  EXPECT_NEAR(e0.wall_time, double(time(nullptr)), 10.0);
  const auto e1 = tfdec::decode_event(recs[1]);
  EXPECT_EQ(e1.step, 1);
  ASSERT_EQ(e1.scalars.size(), 2u);
  EXPECT_EQ(e1.scalars[0].tag, "actor/pg_loss");
  EXPECT_EQ(e1.scalars[0].value, -0.0123f);
  EXPECT_EQ(e1.scalars[1].tag, "critic/score/mean");
  EXPECT_EQ(e1.scalars[1].value, 0.41f);
  EXPECT_GE(e1.wall_time, e0.wall_time);
  const auto e2 = tfdec::decode_event(recs[2]);
  EXPECT_EQ(e2.step, 2);
  ASSERT_EQ(e2.scalars.size(), 2u);
  EXPECT_EQ(e2.scalars[1].tag, "time/step");
  EXPECT_EQ(e2.scalars[1].value, 1.25f);
  EXPECT_EQ(tfdec::decode_event(recs[3]).step, 123456789012LL);
  const auto e4 = tfdec::decode_event(recs[4]);
  EXPECT_EQ(e4.step, 2);
  ASSERT_EQ(e4.texts.size(), 1u);
  EXPECT_EQ(e4.texts[0].first, "rollout_examples");
  EXPECT_EQ(e4.texts[0].second, "prompt | response | 1.0");
  fs::remove_all(dir);
}

TEST(TfEvents, TwoMonitorsSameRoleGetDistinctFiles) {
  const std::string dir = temp_dir();
  Monitor a(dir, "explorer", "tensorboard");
  Monitor b(dir, "explorer", "tensorboard");
  EXPECT_NE(a.event_file_path(), b.event_file_path());
  fs::remove_all(dir);
}

// Oracle: Google's own protobuf parser (protoc --decode) with the tensorflow Event/Summary schema.
TEST(TfEvents, ProtocDecodesEvents) {
  if (std::system("command -v protoc >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "protoc not installed (Debian protobuf-compiler)";
  const std::string dir = temp_dir();
  std::ofstream(dir + "/event.proto") << R"(syntax = "proto3";
package tensorflow;
message TensorShapeProto { message Dim { int64 size = 1; string name = 2; } repeated Dim dim = 2; }
message TensorProto { int32 dtype = 1; TensorShapeProto tensor_shape = 2; repeated bytes string_val = 8; }
message SummaryMetadata { message PluginData { string plugin_name = 1; bytes content = 2; } PluginData plugin_data = 1; }
message Summary { message Value { string tag = 1; float simple_value = 2; TensorProto tensor = 8; SummaryMetadata metadata = 9; }
  repeated Value value = 1; }
message Event { double wall_time = 1; int64 step = 2; oneof what { string file_version = 3; Summary summary = 5; } }
)";
  std::ofstream(dir + "/e.bin", std::ios::binary) << event_scalars(1700000000.5, 42, {{"rollout/accuracy/mean", 0.75}});
  std::ofstream(dir + "/t.bin", std::ios::binary) << event_text(1700000000.5, 7, "ex", "hi");
  const std::string cmd = "cd " + dir + " && protoc --decode=tensorflow.Event event.proto < e.bin > e.txt 2>&1 && "
                          "protoc --decode=tensorflow.Event event.proto < t.bin > t.txt 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir + "/e.txt") << slurp(dir + "/t.txt");
  const std::string e = slurp(dir + "/e.txt");
  EXPECT_NE(e.find("wall_time: 1700000000.5"), std::string::npos) << e;
  EXPECT_NE(e.find("step: 42"), std::string::npos) << e;
  EXPECT_NE(e.find("tag: \"rollout/accuracy/mean\""), std::string::npos) << e;
  EXPECT_NE(e.find("simple_value: 0.75"), std::string::npos) << e;
  const std::string t = slurp(dir + "/t.txt");
  EXPECT_NE(t.find("plugin_name: \"text\""), std::string::npos) << t;
  EXPECT_NE(t.find("string_val: \"hi\""), std::string::npos) << t;
  EXPECT_NE(t.find("dtype: 7"), std::string::npos) << t;
  fs::remove_all(dir);
}
