// WeightStorage::kBF16 (decoder layers' linear weights held in bf16, widened one layer at a time)
// against an fp32 model holding the same bf16-rounded values: logprobs, LoRA adapter gradients
// (with and without activation checkpointing) and packed inference are bitwise equal; a bf16
// checkpoint loads without widening and saves as bf16; copies and merges (merged_copy, and
// save_merged's one-weight-at-a-time checkpoint) convert exactly; full
// training of a held model is refused with a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/tiny_config.h"
#include "core/error.h"
#include "core/rng.h"
#include "lora_test_util.h"
#include "model/infer_weights.h"
#include "model/lora.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "test_util.h"

using namespace trinity;
using namespace trinity::model;

namespace {

ModelConfig tiny(Arch arch) {
  return model::testing::tiny_lora_config(arch);
}
Batch batch_of(std::vector<int> lens, uint64_t seed) {
  return model::testing::random_batch(lens, seed);
}

// An fp32 model whose every weight is bf16-representable (so the held copy holds the same values),
// and its held twin.
struct Pair {
  Transformer f32, held;
};
Pair pair(Arch arch) {
  const ModelConfig cfg = tiny(arch);
  Transformer f(cfg);
  f.init_random(11, 0.2f);
  Transformer h(cfg, HeadKind::kLm, WeightStorage::kBF16);
  h.copy_weights_from(f);  // rounds the layer weights
  f.copy_weights_from(h);  // and back: now both hold the same values
  return {std::move(f), std::move(h)};
}

void randomise_adapters(Transformer& m) {
  Rng r(5);
  for (auto& t : m.lora_tensors())
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(r.normal()) * 0.3f;
}

// Logits of rows 0 and 4 of a 5-token prompt through forward_infer with packed weights `pw`.
std::vector<float> infer_logits(const Transformer& m, const InferWeights* pw) {
  KvCache cache(m.config(), 8, 4);
  InferScratch sc;
  SeqKv kv;
  EXPECT_TRUE(kv_reserve(cache, kv, 5));
  std::vector<float> out;
  m.forward_infer({3, 1, 4, 1, 5}, {{&kv, 0, 5}}, cache, {0, 4}, out, sc, pw);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

std::vector<float> flat(const std::vector<tensor::Tensor>& ts) {
  std::vector<float> out;
  for (const auto& t : ts) out.insert(out.end(), t.f32(), t.f32() + t.numel());
  return out;
}

}  // namespace

TEST(WeightStorage, HoldsOnlyTheLayerLinearsInBf16) {
  Pair p = pair(Arch::kQwen2);
  const auto& cfg = p.f32.config();
  const int64_t per_layer = cfg.hidden_size * (cfg.num_attention_heads + 2 * cfg.num_key_value_heads) * cfg.head_dim +
                            cfg.num_attention_heads * cfg.head_dim * cfg.hidden_size +
                            3 * cfg.hidden_size * cfg.intermediate_size;
  EXPECT_GE(p.held.num_held(), per_layer * cfg.num_hidden_layers);
  EXPECT_LT(p.held.num_params(), p.f32.num_params() - per_layer * cfg.num_hidden_layers + 1);
  EXPECT_EQ(p.held.param("model.layers.0.mlp.up_proj.weight"), nullptr);
  EXPECT_NE(p.held.param("model.layers.0.input_layernorm.weight"), nullptr);
  for (const auto& t : p.held.param_tensors())
    EXPECT_EQ(t.dtype() == tensor::DType::kBF16, t.shape().size() == 2 && t.shape()[0] != cfg.vocab_size);
}

TEST(WeightStorage, LogprobsAndAdapterGradientsEqualFp32) {
  for (Arch arch : {Arch::kQwen2, Arch::kQwen3, Arch::kLlama}) {
    for (bool ckpt : {false, true}) {
      Pair p = pair(arch);
      const Batch b = batch_of({7, 4, 9}, 3);
      std::vector<float> grads[2], lps[2];
      int i = 0;
      for (Transformer* m : {&p.f32, &p.held}) {
        m->add_lora(model::testing::lora4(), 7);
        randomise_adapters(*m);
        m->set_gradient_checkpointing(ckpt);
        std::vector<float> ent;
        m->forward(b, lps[i], ent);
        m->zero_grad();
        m->backward(std::vector<float>(lps[i].size(), 0.7f), std::vector<float>(ent.size(), 0.3f));
        grads[i] = flat(m->lora_tensors(true));
        ++i;
      }
      EXPECT_TRUE(same_bits(lps[0], lps[1])) << arch_name(arch) << " checkpointing " << ckpt;
      EXPECT_TRUE(same_bits(grads[0], grads[1])) << arch_name(arch) << " checkpointing " << ckpt;
      double norm = 0;
      for (float g : grads[1]) norm += static_cast<double>(g) * g;
      EXPECT_GT(norm, 0.0);
    }
  }
}

TEST(WeightStorage, FullTrainingIsRefused) {
  Pair p = pair(Arch::kLlama);
  EXPECT_THROW_MSG(p.held.zero_grad(), UnsupportedError, "held in bf16", "lora_configs");
}

TEST(WeightStorage, Bf16CheckpointLoadsAsStoredAndSavesAsBf16) {
  model::testing::ScratchDir d;
  Pair p = pair(Arch::kQwen3);
  SaveOptions so;
  so.dtype = tensor::DType::kBF16;
  p.f32.save(d.file("bf16"), so);
  Transformer h = Transformer::load(d.file("bf16"), HeadKind::kLm, WeightStorage::kBF16);
  Transformer f = Transformer::load(d.file("bf16"));
  // Saving the held model as bf16 writes its bf16 values as they are: byte-identical files.
  h.save(d.file("again"), so);
  EXPECT_EQ(model::testing::read_bytes(d.file("bf16/model.safetensors")),
            model::testing::read_bytes(d.file("again/model.safetensors")));
  // Widening (merged_copy of an adapter-free model) gives back the fp32 load exactly.
  const Transformer w = merged_copy(h);
  EXPECT_EQ(w.weight_storage(), WeightStorage::kF32);
  EXPECT_EQ(std::memcmp(w.params(), f.params(), sizeof(float) * static_cast<size_t>(f.num_params())), 0);
  // An fp32 checkpoint loaded held is rounded to nearest even, like torch_dtype=bfloat16.
  p.f32.save(d.file("f32"));
  Transformer r = Transformer::load(d.file("f32"), HeadKind::kLm, WeightStorage::kBF16);
  EXPECT_EQ(std::memcmp(r.held(), h.held(), sizeof(uint16_t) * static_cast<size_t>(h.num_held())), 0);
}

TEST(WeightStorage, MergedCopyAndPackedInferenceEqualFp32) {
  Pair p = pair(Arch::kQwen2);
  for (Transformer* m : {&p.f32, &p.held}) {
    m->add_lora(model::testing::lora4(), 7);
    randomise_adapters(*m);
  }
  const Transformer a = merged_copy(p.f32), b = merged_copy(p.held);
  ASSERT_EQ(a.num_params(), b.num_params());
  EXPECT_EQ(std::memcmp(a.params(), b.params(), sizeof(float) * static_cast<size_t>(a.num_params())), 0);
  // save_merged writes merged_copy's checkpoint byte for byte (fp32 and bf16 on disk), from either base.
  model::testing::ScratchDir d;
  for (tensor::DType dt : {tensor::DType::kF32, tensor::DType::kBF16}) {
    SaveOptions so;
    so.dtype = dt;
    a.save(d.file("copy"), so);
    const std::string want = model::testing::read_bytes(d.file("copy/model.safetensors"));
    for (const Transformer* m : {&p.f32, &p.held}) {
      save_merged(*m, d.file("streamed"), so);
      EXPECT_TRUE(model::testing::read_bytes(d.file("streamed/model.safetensors")) == want);
    }
  }
  // The engine's packed copies of a held model equal those of the fp32 one.
  Pair q = pair(Arch::kQwen2);
  const auto pf = pack_infer_weights(q.f32, tensor::PackDType::kF32);
  const auto ph = pack_infer_weights(q.held, tensor::PackDType::kF32);
  const auto& cfg = q.f32.config();
  const std::vector<float> lf = infer_logits(q.f32, pf.get());
  std::vector<float> lh = infer_logits(q.held, ph.get());
  EXPECT_TRUE(same_bits(lf, lh));
  // A model with LoRA adapters (held base, as the trainer's snapshot) packs with the adapters merged:
  // it decodes exactly what its merged copy decodes; without a packed copy it is refused.
  const Transformer snap = adapted_copy(p.held), merged = merged_copy(p.held);
  EXPECT_TRUE(snap.has_lora() && snap.weight_storage() == WeightStorage::kBF16);
  const auto ps = pack_infer_weights(snap, tensor::PackDType::kF32);
  const auto pm = pack_infer_weights(merged, tensor::PackDType::kF32);
  EXPECT_TRUE(ps->lora_merged && !pm->lora_merged);
  const std::vector<float> ls = infer_logits(snap, ps.get()), lm = infer_logits(merged, pm.get());
  EXPECT_TRUE(same_bits(ls, lm));
  EXPECT_FALSE(same_bits(ls, lf)) << "the adapters change the logits";
  KvCache cache(cfg, 8, 4);
  InferScratch sc;
  SeqKv kv;
  ASSERT_TRUE(kv_reserve(cache, kv, 1));
  EXPECT_THROW_MSG(q.held.forward_infer({3}, {{&kv, 0, 1}}, cache, {0}, lh, sc, nullptr), UnsupportedError, "bf16-held",
                   "pack_infer_weights");
}

// The engine's snapshot of a LoRA actor shares its frozen base, bf16-held and fp32 weights (no copy);
// writing through either model first gives the writer its own copy, so the other never changes.
TEST(WeightStorage, SnapshotsShareTheFrozenBase) {
  Pair p = pair(Arch::kLlama);
  p.held.add_lora(model::testing::lora4(), 7);
  randomise_adapters(p.held);
  const Transformer snap = adapted_copy(p.held);
  const Transformer& cheld = p.held;
  EXPECT_EQ(snap.held(), cheld.held()) << "shared, not copied";
  const std::vector<uint16_t> before(snap.held(), snap.held() + snap.num_held());
  uint16_t* mine = p.held.held();  // a write access: p.held now owns a copy
  EXPECT_NE(mine, snap.held());
  mine[0] ^= 0x1;
  EXPECT_TRUE(std::equal(before.begin(), before.end(), snap.held()));
  std::vector<float> a, b, ent;
  const Batch bt = batch_of({5, 6}, 2);
  const_cast<Transformer&>(snap).forward(bt, a, ent);
  mine[0] ^= 0x1;
  p.held.forward(bt, b, ent);
  EXPECT_TRUE(same_bits(a, b));

  // The fp32 weights (embeddings, norms, biases; every weight of an fp32-held base) likewise.
  const Transformer snap2 = adapted_copy(p.held);
  EXPECT_EQ(snap2.params(), cheld.params()) << "fp32 weights shared, not copied";
  const std::vector<float> fbefore(snap2.params(), snap2.params() + snap2.num_params());
  float* fmine = p.held.params();  // a write access
  EXPECT_NE(fmine, snap2.params());
  EXPECT_TRUE(std::equal(fbefore.begin(), fbefore.end(), static_cast<const float*>(fmine))) << "copied whole";
  fmine[0] += 1.0f;
  EXPECT_TRUE(std::equal(fbefore.begin(), fbefore.end(), snap2.params()));
  p.f32.add_lora(model::testing::lora4(), 7);
  const Transformer fsnap = adapted_copy(p.f32);
  const Transformer& cf = p.f32;
  EXPECT_EQ(fsnap.params(), cf.params());
  float* norm = p.f32.param("model.norm.weight");  // param() is a write access too
  EXPECT_NE(p.f32.params(), fsnap.params());
  norm[0] = 5.0f;
  EXPECT_NE(fsnap.params()[norm - p.f32.params()], 5.0f);
  // Without adapters a copy is a copy.
  Pair q = pair(Arch::kQwen2);
  const Transformer plain = adapted_copy(q.f32);
  const Transformer& cq = q.f32;
  EXPECT_NE(plain.params(), cq.params());
}

// LoraPacking::kUnmerged (the engine's default for a LoRA snapshot): the base packed as held plus
// A and s·B apart computes what the merged copy computes (to rounding: the sums differ); a new
// version with the same frozen base reuses the packed base and decodes exactly what a fresh pack
// decodes; a different base or dtype packs its own.
TEST(WeightStorage, UnmergedAdaptersMatchTheMergedCopyAndReuseTheFrozenBase) {
  Pair p = pair(Arch::kQwen2);
  p.held.add_lora(model::testing::lora4(), 7);
  randomise_adapters(p.held);
  const Transformer snap = adapted_copy(p.held);
  const auto pu = pack_infer_weights(snap, tensor::PackDType::kF32, LoraPacking::kUnmerged);
  const auto pm = pack_infer_weights(snap, tensor::PackDType::kF32, LoraPacking::kMerged);
  ASSERT_TRUE(pu->lora_unmerged() && !pu->lora_merged && pm->lora_merged && !pm->lora_unmerged());
  EXPECT_TRUE(pu->base_id != nullptr && pu->base_id == snap.frozen_base_id());
  EXPECT_GT(pu->bytes(), pm->bytes()) << "the adapters come on top of the base";
  const std::vector<float> lu = infer_logits(snap, pu.get()), lm = infer_logits(snap, pm.get());
  Transformer off = adapted_copy(p.held);
  off.set_lora_enabled(false);
  const std::vector<float> lo = infer_logits(off, pack_infer_weights(off, tensor::PackDType::kF32).get());
  ASSERT_EQ(lu.size(), lm.size());
  float max_diff = 0, max_effect = 0;
  for (size_t i = 0; i < lu.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(lu[i] - lm[i]));
    max_effect = std::max(max_effect, std::abs(lm[i] - lo[i]));
  }
  EXPECT_LT(max_diff, 1e-4f);
  EXPECT_GT(max_effect, 1e-2f) << "the adapters change the logits";

  // The next version (new adapters, same base): the packed base is reused, the logits are a fresh pack's.
  for (auto& t : p.held.lora_tensors())
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] *= -0.5f;
  const Transformer snap2 = adapted_copy(p.held);
  ASSERT_EQ(snap2.frozen_base_id(), snap.frozen_base_id());
  const auto pu2 = pack_infer_weights(snap2, tensor::PackDType::kF32, LoraPacking::kUnmerged, pu.get());
  const auto fresh = pack_infer_weights(snap2, tensor::PackDType::kF32, LoraPacking::kUnmerged);
  EXPECT_EQ(pu2->base, pu->base);
  EXPECT_NE(fresh->base, pu->base);
  const std::vector<float> l2 = infer_logits(snap2, pu2.get());
  EXPECT_TRUE(same_bits(l2, infer_logits(snap2, fresh.get())));
  EXPECT_FALSE(same_bits(l2, lu));
  // Another base, or another panel dtype: packed anew.
  Pair other = pair(Arch::kQwen2);
  other.held.add_lora(model::testing::lora4(), 7);
  const Transformer osnap = adapted_copy(other.held);
  EXPECT_NE(pack_infer_weights(osnap, tensor::PackDType::kF32, LoraPacking::kUnmerged, pu.get())->base, pu->base);
  EXPECT_NE(pack_infer_weights(snap2, tensor::PackDType::kBF16, LoraPacking::kUnmerged, pu.get())->base, pu->base);
  // A model without adapters has no frozen base to share.
  EXPECT_EQ(p.f32.frozen_base_id(), nullptr);
}
