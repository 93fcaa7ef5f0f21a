// Interoperability of trinity's safetensors with an independent reader/writer
// (tests/model/read_safetensors.py: stdlib + numpy, plus torch's own bf16 rounding when present):
// files written here are read there bit for bit (F32, BF16 incl. ties and NaN), files written
// there (unsorted header, unpadded, misaligned F32, F16) are read here.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/rng.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace trinity::model {
namespace {

using json = nlohmann::json;
using tensor::DType;
using tensor::Tensor;
using testing::ScratchDir;

const std::string kScript = std::string(TRINITY_SOURCE_DIR) + "/tests/model/read_safetensors.py";

// Runs the Python oracle (Debian's /usr/bin/python3, which has numpy) and returns its stdout.
std::string run_python(const std::string& args, int* exit_code) {
  const std::string cmd = "/usr/bin/python3 " + kScript + " " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    *exit_code = -1;
    return "";
  }
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

json dump(const std::string& path) {
  int rc = 0;
  const std::string out = run_python("dump " + path, &rc);
  EXPECT_EQ(rc, 0) << out;
  return json::parse(out);
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Special values, then exact bf16 ties (low half 0x8000), then near-ties, then random floats.
Tensor tricky(int64_t n, uint64_t seed) {
  Tensor t(DType::kF32, {n});
  Rng rng(seed);
  const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                               0x7F800001u, 0xFFFFFFFFu, 0x7F7FFFFFu, 0x00000001u, 0x00018000u,
                               0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F807FFFu, 0xC2F78000u};
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    const uint32_t r = static_cast<uint32_t>(rng.next_u64());
    if (i < static_cast<int64_t>(std::size(specials))) u = specials[i];
    else if (i % 3 == 0) u = (r & 0xFFFF0000u) | 0x8000u;     // exact tie
    else if (i % 3 == 1) u = (r & 0xFFFF0000u) | (0x7FFFu + (r & 2u));  // 0x7FFF or 0x8001
    else u = bits(static_cast<float>(rng.normal()) * 3.0f);
    t.f32()[i] = from_bits(u);
  }
  return t;
}

TEST(Interop, F32WrittenByCppIsReadBitExactByPython) {
  ScratchDir d;
  Tensor a = tricky(3000, 1), b(DType::kF32, {2, 3, 4}), e(DType::kF32, {0});
  for (int64_t i = 0; i < b.numel(); ++i) b.f32()[i] = static_cast<float>(i) - 11.5f;
  const std::string p = d.file("f32.safetensors");
  write_safetensors(p, {{"model.a", &a}, {"b", &b}, {"empty", &e}}, DType::kF32, {{"format", "pt"}, {"k", "v"}});
  const json j = dump(p);
  EXPECT_EQ(j["__metadata__"], (json{{"format", "pt"}, {"k", "v"}}));
  EXPECT_EQ(j["b"]["shape"], json::array({2, 3, 4}));
  EXPECT_EQ(j["b"]["dtype"], "F32");
  EXPECT_EQ(j["empty"]["shape"], json::array({0}));
  for (auto [name, t] : std::vector<std::pair<std::string, Tensor*>>{{"model.a", &a}, {"b", &b}}) {
    const auto& got = j[name]["bits"];
    ASSERT_EQ(static_cast<int64_t>(got.size()), t->numel()) << name;
    for (int64_t i = 0; i < t->numel(); ++i)
      ASSERT_EQ(got[static_cast<size_t>(i)].get<uint32_t>(), bits(t->f32()[i])) << name << "[" << i << "]";
  }
}

TEST(Interop, Bf16RoundingMatchesNumpyAndTorch) {
  ScratchDir d;
  Tensor a = tricky(200000, 7), w(DType::kF32, {64, 33});
  for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] = std::sin(0.1f * static_cast<float>(i)) * 1e-3f;
  const std::string p32 = d.file("f32.safetensors"), p16 = d.file("bf16.safetensors");
  write_safetensors(p32, {{"a", &a}, {"w", &w}}, DType::kF32);
  write_safetensors(p16, {{"a", &a}, {"w", &w}}, DType::kBF16);
  int rc = 0;
  const std::string out = run_python("check-bf16 " + p32 + " " + p16, &rc);
  ASSERT_EQ(rc, 0) << out;
  const json r = json::parse(out);
  EXPECT_EQ(r["checked"], 200000 + 64 * 33);
  std::printf("bf16 rounding checked on %d values (torch oracle: %s)\n", r["checked"].get<int>(),
              r["torch"].get<bool>() ? "yes" : "no");
  // And the BF16 file's bits as Python reads them are ours.
  const json j = dump(p16);
  EXPECT_EQ(j["w"]["dtype"], "BF16");
  for (int64_t i = 0; i < w.numel(); ++i)
    ASSERT_EQ(j["w"]["bits"][static_cast<size_t>(i)].get<uint16_t>(), tensor::f32_to_bf16(w.f32()[i]));
}

TEST(Interop, FileWrittenByPythonIsReadHere) {
  ScratchDir d;
  const std::string p = d.file("py.safetensors");
  int rc = 0;
  const std::string out = run_python("write " + p, &rc);
  ASSERT_EQ(rc, 0) << out;
  SafetensorsFile f = SafetensorsFile::open(p);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a.f32", "b.bf16", "c.f16", "e.empty"}));
  EXPECT_EQ(f.metadata().at("writer"), "numpy");
  const std::pair<const char*, DType> want[] = {
      {"a.f32", DType::kF32}, {"b.bf16", DType::kBF16}, {"c.f16", DType::kF16}};
  for (auto [name, dt] : want) {
    const Tensor& t = f.get(name);
    EXPECT_EQ(t.dtype(), dt) << name;
    const Tensor v = t.to_f32();
    for (int64_t i = 0; i < v.numel(); ++i)
      EXPECT_EQ(v.f32()[i], static_cast<float>((i % 37 - 18) * 0.25)) << name << "[" << i << "]";
  }
  EXPECT_EQ(f.get("a.f32").shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.get("c.f16").shape(), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(f.get("e.empty").numel(), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.get("a.f32").data()) % 4, 0u);  // misaligned on disk: copied
}

TEST(Interop, SavedCheckpointReadsInPython) {
  ScratchDir d;
  ModelConfig c = default_config(Arch::kQwen3);
  c.hidden_size = 8, c.intermediate_size = 12, c.num_hidden_layers = 1, c.num_attention_heads = 2;
  c.num_key_value_heads = 1, c.head_dim = 6, c.vocab_size = 10, c.tie_word_embeddings = true;
  std::vector<Tensor> ts;
  std::vector<NamedTensor> nts;
  const auto specs = param_specs(c);
  ts.reserve(specs.size());
  for (const ParamSpec& s : specs) {
    ts.emplace_back(DType::kF32, s.shape);
    for (int64_t i = 0; i < ts.back().numel(); ++i) ts.back().f32()[i] = 0.01f * static_cast<float>(i);
    nts.push_back({s.name, &ts.back()});
  }
  save_checkpoint(d.file("ck"), c, nts, {DType::kBF16, ""});
  const json j = dump(d.file("ck/model.safetensors"));
  EXPECT_EQ(j.size(), specs.size() + 1);  // + __metadata__
  for (size_t k = 0; k < specs.size(); ++k) {
    ASSERT_TRUE(j.contains(specs[k].name)) << specs[k].name;
    EXPECT_EQ(j[specs[k].name]["dtype"], "BF16");
    EXPECT_EQ(j[specs[k].name]["shape"], json(specs[k].shape));
  }
  EXPECT_EQ(j["__metadata__"]["format"], "pt");  // transformers refuses files without it
}

}  // namespace
}  // namespace trinity::model
