// safetensors: F32/BF16/F16 write -> read round trips (bf16 bit-exact incl. ties-to-even and NaN),
// header layout, sharded directories, and every corrupt-file error with file and tensor named.
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace trinity::model {
namespace {

using tensor::DType;
using tensor::Tensor;
using testing::raw_safetensors;
using testing::read_bytes;
using testing::ScratchDir;
using testing::write_bytes;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

Tensor filled(std::vector<int64_t> shape, float scale) {
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = scale * static_cast<float>(std::sin(0.37 * i + scale));
  return t;
}

TEST(Safetensors, F32RoundTripIsBitExactWithMetadata) {
  ScratchDir d;
  Tensor a = filled({3, 5}, 1.5f), b = filled({7}, -2.f), scalar = filled({}, 3.f), empty(DType::kF32, {0, 4});
  const std::string p = d.file("m.safetensors");
  write_safetensors(p, {{"w.b", &b}, {"w.a", &a}, {"s", &scalar}, {"e", &empty}}, DType::kF32,
                    {{"format", "pt"}, {"step", "12"}});
  SafetensorsFile f = SafetensorsFile::open(p);
  EXPECT_EQ(f.path(), p);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"e", "s", "w.a", "w.b"}));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("step"), "12");
  for (auto [name, src] : std::vector<std::pair<std::string, const Tensor*>>{
           {"w.a", &a}, {"w.b", &b}, {"s", &scalar}, {"e", &empty}}) {
    const Tensor& t = f.get(name);
    EXPECT_EQ(t.dtype(), DType::kF32);
    EXPECT_EQ(t.shape(), src->shape()) << name;
    EXPECT_EQ(0, std::memcmp(t.data(), src->data(), src->nbytes())) << name;
  }
  EXPECT_TRUE(f.contains("s"));
  EXPECT_FALSE(f.contains("nope"));
  EXPECT_THROW_MSG(f.get("nope"), IoError, "[safetensors] " + p + ": no tensor 'nope'");
  // No temp file is left next to the output.
  for (const auto& e : std::filesystem::directory_iterator(d.path()))
    EXPECT_EQ(e.path().filename().string(), "m.safetensors");
}

TEST(Safetensors, HeaderIsCompactJsonPaddedWithSpacesTo8Bytes) {
  ScratchDir d;
  for (int n = 1; n <= 9; ++n) {  // different name lengths hit every padding amount
    Tensor t = filled({2}, 1.f);
    const std::string p = d.file("h.safetensors");
    write_safetensors(p, {{std::string(static_cast<size_t>(n), 'x'), &t}}, DType::kF32);
    const std::string bytes = read_bytes(p);
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    EXPECT_EQ(len % 8, 0u);
    EXPECT_EQ(bytes.size(), 8 + len + 8);
    const std::string header = bytes.substr(8, len);
    const size_t close = header.rfind('}');
    EXPECT_EQ(header.substr(close + 1), std::string(len - close - 1, ' '));
    EXPECT_LT(len - close - 1, 8u);
    EXPECT_EQ(header.rfind("{\"__metadata__\":{\"format\":\"pt\"}", 0), 0u) << header;
  }
}

TEST(Safetensors, Bf16RoundingIsBitExactIncludingTiesAndNaN) {
  struct Case {
    uint32_t f32;
    uint16_t bf16;
  };
  const Case cases[] = {
      {0x3F800000u, 0x3F80},  // 1.0
      {0x3F808000u, 0x3F80},  // exact tie, lower is even -> down
      {0x3F818000u, 0x3F82},  // exact tie, lower is odd -> up
      {0x3F808001u, 0x3F81},  // just above the tie -> up
      {0x3F807FFFu, 0x3F80},  // just below the tie -> down
      {0xBF818000u, 0xBF82},  // negative tie
      {0x80000000u, 0x8000},  // -0
      {0x00000001u, 0x0000},  // smallest subnormal rounds to +0
      {0x00018000u, 0x0002},  // subnormal tie -> even
      {0x7F7FFFFFu, 0x7F80},  // FLT_MAX rounds to +inf (as torch)
      {0x7F800000u, 0x7F80},  // +inf
      {0xFF800000u, 0xFF80},  // -inf
      {0x7FC00000u, 0x7FC0},  // canonical NaN
  };
  ScratchDir d;
  const int64_t n = static_cast<int64_t>(std::size(cases)) + 2;
  Tensor t(DType::kF32, {n});
  for (size_t i = 0; i < std::size(cases); ++i) t.f32()[i] = from_bits(cases[i].f32);
  t.f32()[n - 2] = from_bits(0x7F800001u);  // signalling NaN: naive rounding would make it +inf
  t.f32()[n - 1] = from_bits(0xFFFFFFFFu);  // NaN with all mantissa bits set: would overflow into the sign
  const std::string p = d.file("b.safetensors");
  write_safetensors(p, {{"t", &t}}, DType::kBF16);
  SafetensorsFile f = SafetensorsFile::open(p);
  const Tensor& r = f.get("t");
  ASSERT_EQ(r.dtype(), DType::kBF16);
  ASSERT_EQ(r.shape(), std::vector<int64_t>{n});
  const auto* h = static_cast<const uint16_t*>(r.data());
  for (size_t i = 0; i < std::size(cases); ++i)
    EXPECT_EQ(h[i], cases[i].bf16) << "f32 bits 0x" << std::hex << cases[i].f32;
  EXPECT_TRUE(std::isnan(tensor::bf16_to_f32(h[n - 2])));
  EXPECT_TRUE(std::isnan(tensor::bf16_to_f32(h[n - 1])));
  // Reading back to F32 is the exact upcast.
  WeightSource ws = WeightSource::open_dir(p);
  const Tensor up = ws.get_f32("t", {n});
  for (int64_t i = 0; i < n - 2; ++i)
    EXPECT_EQ(bits(up.f32()[i]), static_cast<uint32_t>(h[i]) << 16) << i;
}

TEST(Safetensors, Bf16AndF16SourcesConvert) {
  ScratchDir d;
  Tensor src = filled({4, 8}, 0.75f);
  Tensor as_bf16 = src.to(DType::kBF16), as_f16 = src.to(DType::kF16);
  const std::string p16 = d.file("f16.safetensors"), p32 = d.file("f32.safetensors");
  write_safetensors(p16, {{"x", &src}}, DType::kF16);
  write_safetensors(p32, {{"b", &as_bf16}, {"h", &as_f16}}, DType::kF32);
  SafetensorsFile f16 = SafetensorsFile::open(p16);
  EXPECT_EQ(f16.get("x").dtype(), DType::kF16);
  EXPECT_EQ(0, std::memcmp(f16.get("x").data(), as_f16.data(), as_f16.nbytes()));
  SafetensorsFile f32 = SafetensorsFile::open(p32);
  const Tensor b = as_bf16.to_f32(), h = as_f16.to_f32();
  EXPECT_EQ(0, std::memcmp(f32.get("b").data(), b.data(), b.nbytes()));
  EXPECT_EQ(0, std::memcmp(f32.get("h").data(), h.data(), h.nbytes()));
  // A BF16 tensor written as BF16 is copied byte for byte.
  const std::string pb = d.file("bb.safetensors");
  write_safetensors(pb, {{"b", &as_bf16}}, DType::kBF16);
  EXPECT_EQ(0, std::memcmp(SafetensorsFile::open(pb).get("b").data(), as_bf16.data(), as_bf16.nbytes()));
}

TEST(Safetensors, ViewsAreCopyOnWriteAndOutliveTheFileObject) {
  ScratchDir d;
  Tensor t = filled({16}, 1.f);
  const std::string p = d.file("v.safetensors");
  write_safetensors(p, {{"t", &t}}, DType::kF32);
  const std::string before = read_bytes(p);
  Tensor view;
  {
    SafetensorsFile f = SafetensorsFile::open(p);
    view = f.get("t");
  }
  EXPECT_EQ(view.f32()[3], t.f32()[3]);  // mapping kept alive by the view
  view.f32()[3] = 42.f;                  // private mapping: never reaches the file
  EXPECT_EQ(read_bytes(p), before);
}

TEST(Safetensors, WriteRejectsDuplicateAndReservedNames) {
  ScratchDir d;
  Tensor t = filled({2}, 1.f);
  const std::string p = d.file("w.safetensors");
  EXPECT_THROW_MSG(write_safetensors(p, {{"a", &t}, {"a", &t}}, DType::kF32), IoError, p, "tensor 'a' given twice");
  EXPECT_THROW_MSG(write_safetensors(p, {{"__metadata__", &t}}, DType::kF32), IoError, "invalid tensor name");
  EXPECT_FALSE(std::filesystem::exists(p));
  EXPECT_THROW_MSG(write_safetensors(d.file("no/such/dir/x.safetensors"), {{"a", &t}}, DType::kF32), IoError,
                   "no/such/dir/x.safetensors");
}

// ---- corrupt files ----------------------------------------------------------------------------

std::string good_file(const ScratchDir& d) {
  Tensor a = filled({4, 4}, 1.f), b = filled({8}, 2.f);
  const std::string p = d.file("good.safetensors");
  write_safetensors(p, {{"layer.a", &a}, {"layer.b", &b}}, DType::kF32);
  return p;
}

TEST(SafetensorsErrors, TruncatedFileNamesFileAndTensor) {
  ScratchDir d;
  const std::string p = good_file(d);
  const std::string bytes = read_bytes(p);
  const std::string t = d.file("trunc.safetensors");
  write_bytes(t, bytes.substr(0, bytes.size() - 5));  // cuts into layer.b (laid out last)
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, "[safetensors] " + t + ": tensor 'layer.b'",
                   "truncated");
  write_bytes(t, bytes.substr(0, 4));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "too short");
  write_bytes(t, bytes.substr(0, 40));  // inside the header
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "exceeds the file size");
  write_bytes(t, "");
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "0 bytes");
  EXPECT_THROW_MSG(SafetensorsFile::open(d.file("absent.safetensors")), IoError,
                   d.file("absent.safetensors"), "cannot open");
}

TEST(SafetensorsErrors, CorruptHeader) {
  ScratchDir d;
  std::string bytes = read_bytes(good_file(d));
  const std::string t = d.file("bad.safetensors");
  std::string b1 = bytes;
  b1[8 + 3] = '\x01';  // garbage inside the JSON
  write_bytes(t, b1);
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, "[safetensors] " + t + ": malformed header JSON");
  std::string b2 = bytes;
  b2[6] = '\x10';  // header length ~ 4.5e15
  write_bytes(t, b2);
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "header length", "100 MB limit");
  std::string b3 = bytes;
  b3[2] = '\x10';  // header length ~ 1 MB: beyond this small file
  write_bytes(t, b3);
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "exceeds the file size");
  write_bytes(t, raw_safetensors("[1,2,3]", ""));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "expected a JSON object");
  write_bytes(t, raw_safetensors(R"({"w": {"dtype": "F32", "shape": [2]}})", std::string(8, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "tensor 'w'", "data_offsets");
  write_bytes(t, raw_safetensors(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})",
                                 std::string(8, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "tensor 'w'", "not a non-negative integer");
}

TEST(SafetensorsErrors, OffsetsOutOfRangeOrNotMatchingShape) {
  ScratchDir d;
  const std::string t = d.file("o.safetensors");
  write_bytes(t, raw_safetensors(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})",
                                 std::string(24, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError,
                   t + ": tensor 'w': data_offsets [0, 20] span 20 bytes but shape [2, 3] of F32 needs 24");
  write_bytes(t, raw_safetensors(R"({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [8, 16]}})",
                                 std::string(12, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t + ": tensor 'w': data_offsets [8, 16] run past",
                   "12 bytes");
  write_bytes(t, raw_safetensors(R"({"w": {"dtype": "F16", "shape": [1], "data_offsets": [4, 2]}})",
                                 std::string(8, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, "tensor 'w'", "begin > end");
}

TEST(SafetensorsErrors, OverlappingTensors) {
  ScratchDir d;
  const std::string t = d.file("ov.safetensors");
  write_bytes(t, raw_safetensors(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
                                 std::string(16, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "tensors 'a' [0, 16) and 'b' [8, 16) overlap");
  // Nested inside a longer tensor that is not the immediate predecessor.
  write_bytes(t, raw_safetensors(R"({"a": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]},
                                     "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                                     "c": {"dtype": "F32", "shape": [1], "data_offsets": [16, 20]}})",
                                 std::string(32, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, "overlap");
  // Empty tensors may sit anywhere.
  write_bytes(t, raw_safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                     "z": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}})",
                                 std::string(8, '\0')));
  EXPECT_NO_THROW(SafetensorsFile::open(t));
}

TEST(SafetensorsErrors, UnsupportedDtypeNamesFileTensorAndDtype) {
  ScratchDir d;
  const std::string t = d.file("dt.safetensors");
  write_bytes(t, raw_safetensors(R"({"q.weight": {"dtype": "I8", "shape": [4], "data_offsets": [0, 4]}})",
                                 std::string(4, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError,
                   "[safetensors] " + t + ": tensor 'q.weight': dtype I8 is not supported (trinity reads F32, BF16, F16)");
  write_bytes(t, raw_safetensors(R"({"w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})",
                                 std::string(8, '\0')));
  EXPECT_THROW_MSG(SafetensorsFile::open(t), IoError, t, "tensor 'w'", "dtype F64 is not supported");
}

TEST(SafetensorsErrors, WrongShapeAndMissingTensor) {
  ScratchDir d;
  const std::string p = good_file(d);
  WeightSource ws = WeightSource::open_dir(p);
  EXPECT_THROW_MSG(ws.get_f32("layer.a", {2, 8}), IoError,
                   "[safetensors] " + p + ": tensor 'layer.a' has shape [4, 4], expected [2, 8]");
  EXPECT_THROW_MSG(ws.get_f32("layer.c", {4}), IoError, p, "no tensor 'layer.c'");
  EXPECT_EQ(ws.get_f32("layer.b", {8}).numel(), 8);
}

TEST(Safetensors, MisalignedForeignLayoutIsCopied) {
  ScratchDir d;
  // One BF16 element (2 bytes) then an F32 tensor at data offset 2: not 4-byte aligned.
  const float vals[2] = {1.25f, -3.5f};
  std::string data(2, '\0');
  data[0] = '\x80', data[1] = '\x3f';  // bf16 1.0
  data.append(reinterpret_cast<const char*>(vals), 8);
  std::string header = R"({"h": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]},
                           "f": {"dtype": "F32", "shape": [2], "data_offsets": [2, 10]}})";
  while ((8 + header.size()) % 4 != 0) header += ' ';  // data block itself 4-aligned
  const std::string t = d.file("mis.safetensors");
  write_bytes(t, raw_safetensors(header, data));
  SafetensorsFile f = SafetensorsFile::open(t);
  const Tensor& ft = f.get("f");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ft.data()) % 4, 0u);
  EXPECT_EQ(ft.f32()[0], 1.25f);
  EXPECT_EQ(ft.f32()[1], -3.5f);
  EXPECT_EQ(tensor::bf16_to_f32(*static_cast<const uint16_t*>(f.get("h").data())), 1.0f);
}

// ---- model directories ------------------------------------------------------------------------

TEST(WeightSource, ShardedDirectoryThroughIndex) {
  ScratchDir d;
  Tensor a = filled({2, 3}, 1.f), b = filled({5}, 2.f), c = filled({3, 1}, 3.f);
  write_safetensors(d.file("model-00001-of-00002.safetensors"), {{"a", &a}, {"b", &b}}, DType::kBF16);
  write_safetensors(d.file("model-00002-of-00002.safetensors"), {{"c", &c}}, DType::kF32);
  write_bytes(d.file("model.safetensors.index.json"),
              R"({"metadata": {"total_size": 64}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                  "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
  WeightSource ws = WeightSource::open_dir(d.path());
  EXPECT_EQ(ws.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(ws.contains("c"));
  EXPECT_FALSE(ws.contains("d"));
  EXPECT_EQ(ws.file_of("c"), d.file("model-00002-of-00002.safetensors"));
  EXPECT_EQ(ws.file_of("a"), d.file("model-00001-of-00002.safetensors"));
  EXPECT_EQ(ws.get("a").dtype(), DType::kBF16);
  const Tensor c32 = ws.get_f32("c", {3, 1});
  EXPECT_EQ(0, std::memcmp(c32.data(), c.data(), c.nbytes()));
  const Tensor a32 = ws.get_f32("a", {2, 3});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a32.f32()[i], tensor::bf16_to_f32(tensor::f32_to_bf16(a.f32()[i])));
  EXPECT_THROW_MSG(ws.get_f32("c", {3}), IoError,
                   d.file("model-00002-of-00002.safetensors") + ": tensor 'c' has shape [3, 1], expected [3]");
  EXPECT_THROW_MSG(ws.get("zz"), IoError, d.path(), "no tensor 'zz'");
}

TEST(WeightSource, MissingShardIsNamed) {
  ScratchDir d;
  Tensor a = filled({2}, 1.f);
  write_safetensors(d.file("s1.safetensors"), {{"a", &a}}, DType::kF32);
  write_bytes(d.file("model.safetensors.index.json"),
              R"({"weight_map": {"a": "s1.safetensors", "lm_head.weight": "s2.safetensors"}})");
  EXPECT_THROW_MSG(WeightSource::open_dir(d.path()), IoError,
                   "[safetensors] " + d.file("model.safetensors.index.json") +
                       ": shard 's2.safetensors' (holding tensor 'lm_head.weight' and 0 more) is missing: " +
                       d.file("s2.safetensors"));
}

TEST(WeightSource, IndexErrors) {
  ScratchDir d;
  Tensor a = filled({2}, 1.f);
  write_safetensors(d.file("s1.safetensors"), {{"a", &a}}, DType::kF32);
  write_safetensors(d.file("s2.safetensors"), {{"a", &a}}, DType::kF32);
  const std::string idx = d.file("model.safetensors.index.json");
  write_bytes(idx, R"({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}})");
  EXPECT_THROW_MSG(WeightSource::open_dir(d.path()), IoError, d.file("s1.safetensors"), "no tensor 'b'", idx);
  write_bytes(idx, R"({"weight_map": {"a": "s1.safetensors", "x": "s2.safetensors"}})");
  EXPECT_THROW_MSG(WeightSource::open_dir(d.path()), IoError, "tensor 'a' is also in");
  write_bytes(idx, R"({"metadata": {}})");
  EXPECT_THROW_MSG(WeightSource::open_dir(d.path()), IoError, idx, "missing 'weight_map'");
  write_bytes(idx, R"({"weight_map": )");
  EXPECT_THROW_MSG(WeightSource::open_dir(d.path()), IoError, idx, "malformed JSON");
}

TEST(WeightSource, SingleFileAndEmptyDirectory) {
  ScratchDir d;
  EXPECT_THROW_MSG(WeightSource::open_dir(d.path()), IoError, d.path(),
                   "no model.safetensors or model.safetensors.index.json");
  EXPECT_THROW_MSG(WeightSource::open_dir(d.file("nodir")), IoError, d.file("nodir"), "not a directory");
  Tensor a = filled({3}, 1.f);
  write_safetensors(d.file("model.safetensors"), {{"a", &a}}, DType::kF32);
  WeightSource ws = WeightSource::open_dir(d.path());
  EXPECT_EQ(ws.names(), std::vector<std::string>{"a"});
  EXPECT_EQ(ws.file_of("a"), d.file("model.safetensors"));
  // As in transformers, model.safetensors wins over a (here stale, broken) index.
  write_bytes(d.file("model.safetensors.index.json"), R"({"weight_map": {"a": "gone.safetensors"}})");
  EXPECT_EQ(WeightSource::open_dir(d.path()).file_of("a"), d.file("model.safetensors"));
}

}  // namespace
}  // namespace trinity::model
