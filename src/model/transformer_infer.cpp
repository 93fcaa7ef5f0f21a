// Inference forward with a paged KV cache (see Transformer::forward_infer). Same per-layer math as
// the training forward and the same kernels for norms, projections, RoPE and the MLP; attention
// reads keys/values through each sequence's page table (tensor/paged_attention.h). Work for
// attention is split over (sequence, kv head), so each item writes disjoint output rows. With packed
// weights every row's result is independent of the other rows of the call (batch invariance).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"
#include "model/infer_weights.h"
#include "model/transformer.h"
#include "model/transformer_impl.h"
#include "tensor/blas.h"
#include "tensor/kernels.h"
#include "tensor/packed_linear.h"
#include "tensor/paged_attention.h"

namespace trinity::model {

using namespace trinity::tensor;

void Transformer::forward_infer(const std::vector<int32_t>& tokens, const std::vector<InferSeg>& segs,
                                KvCache& cache, const std::vector<int64_t>& logit_rows,
                                std::vector<float>& logits, InferScratch& sc,
                                const InferWeights* pw) const {
  TRINITY_ASSERT(head_ == HeadKind::kLm, "forward_infer needs the LM head");
  const auto& im = *impl_;
  if (im.lora && im.lora->enabled && !(pw && (pw->lora_merged || pw->lora_unmerged())))
    throw UnsupportedError("model",
                           "inference on a model with LoRA adapters reads packed copies with the adapters "
                           "(pack_infer_weights(m)), or serve model::merged_copy(m)");
  if (storage_ == WeightStorage::kBF16 && !pw)
    throw UnsupportedError("model",
                           "inference on bf16-held layer weights reads packed copies: pass "
                           "pack_infer_weights(m) (the engine does)");
  const int64_t r = static_cast<int64_t>(tokens.size());
  const int64_t c = cfg_.hidden_size, hs = cfg_.head_dim, nh = cfg_.num_attention_heads,
                nkv = cfg_.num_key_value_heads, I = cfg_.intermediate_size, V = cfg_.vocab_size;
  const int64_t group = nh / nkv, kvd = nkv * hs;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  TRINITY_ASSERT(r > 0, "empty inference step");
  for (int32_t t : tokens)
    if (t < 0 || t >= V) throw ValueError("model", strcat("token id ", t, " is out of range [0, ", V, ")"));

  // Positions of every row; RoPE tables cover the largest.
  sc.positions.assign(static_cast<size_t>(r), 0);
  int64_t max_pos = 0;
  for (const auto& sg : segs) {
    TRINITY_ASSERT(sg.kv && sg.row_begin <= sg.row_end && sg.row_end <= r, "bad inference segment");
    const int64_t need = sg.kv->len + (sg.row_end - sg.row_begin);
    TRINITY_ASSERT(static_cast<int64_t>(sg.kv->pages.size()) * cache.page_size() >= need,
                   "KV cache not reserved for the step");
    for (int64_t i = sg.row_begin; i < sg.row_end; ++i) {
      sc.positions[static_cast<size_t>(i)] = static_cast<int32_t>(sg.kv->len + (i - sg.row_begin));
      max_pos = std::max<int64_t>(max_pos, sg.kv->len + (i - sg.row_begin));
    }
  }
  if (max_pos + 1 > sc.rope_positions) {
    sc.rope_positions = std::max<int64_t>(max_pos + 1, 2 * sc.rope_positions);
    rope_tables(cfg_, sc.rope_positions, sc.cos_t, sc.sin_t);
  }
  auto fit = [](std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
    return v.data();
  };
  float* x = fit(sc.x, r * c);
  float* ln = fit(sc.ln, r * c);
  float* q = fit(sc.q, r * nh * hs);
  float* k = fit(sc.k, r * kvd);
  float* v = fit(sc.v, r * kvd);
  float* att = fit(sc.att, r * nh * hs);
  float* gate = fit(sc.gate, r * I);
  float* up = fit(sc.up, r * I);
  float* rstd = fit(sc.rstd, r);
  float* qr = fit(sc.qrstd, r * nh);
  float* kr = fit(sc.krstd, r * nkv);
  int64_t tmax = max_pos + 1;

  // Linear layers: the packed copies for every row count when given (their kernels are batch
  // invariant: a row's outputs do not depend on the other rows of the step, so a sequence's logits
  // are the same bits however the engine batched it; sgemm on the master weights is not, as its
  // blocking depends on the row count), else sgemm on the model's own weights.
  const bool use_packed = pw != nullptr;
  auto lin = [&](float* y, const float* xin, const float* wm, const PackedLinear* wp, const float* b,
                 int64_t rows, int64_t ic, int64_t oc, bool acc) {
    if (use_packed) {
      packed_linear(y, xin, *wp, b, rows, acc);
    } else if (acc) {
      TRINITY_ASSERT(!b, "accumulating linear takes no bias");
      linear_accumulate(y, xin, wm, rows, ic, oc);
    } else {
      linear_forward(y, xin, wm, b, rows, ic, oc);
    }
  };
  // Unmerged LoRA: y += (x A^T) (s·B)^T after the base linear, with the same batch-invariant kernels.
  const bool unmerged = pw && pw->lora_unmerged();
  auto adapt = [&](float* y, const float* xin, size_t l, int t) {
    if (!unmerged) return;
    const auto& ad = pw->adapters[l][static_cast<size_t>(t)];
    if (ad.a.empty()) return;
    float* h = fit(sc.lora_h, r * ad.a.oc());
    packed_linear(h, xin, ad.a, nullptr, r, false);
    packed_linear(y, h, ad.b, nullptr, r, true);
  };
  if (pw) {
    TRINITY_ASSERT(pw->base && static_cast<int64_t>(pw->base->layers.size()) == cfg_.num_hidden_layers &&
                       (!unmerged || static_cast<int64_t>(pw->adapters.size()) == cfg_.num_hidden_layers),
                   "packed weights do not match the model");
    const auto& l0 = pw->base->layers[0];
    TRINITY_ASSERT(l0.qkv.parts() == 3 && l0.qkv.part_oc(0) == nh * hs && l0.qkv.part_oc(1) == kvd &&
                       l0.gate_up.parts() == 2 && l0.gate_up.part_oc(0) == I,
                   "packed weights do not match the model");
  }

  embedding_forward(x, tokens.data(), im.wte, r, c);
  for (size_t l = 0; l < im.lp.size(); ++l) {
    const auto& w = im.lp[l];
    const InferWeights::Layer* p = pw ? &pw->base->layers[l] : nullptr;
    const int64_t layer = static_cast<int64_t>(l);
    rmsnorm_forward(ln, rstd, x, w.ln1, r, c, eps);
    if (use_packed) {
      const PackedOut outs[] = {{q, w.bq}, {k, w.bk}, {v, w.bv}};
      packed_linear_parts(outs, ln, p->qkv, r);
      adapt(q, ln, l, 0);
      adapt(k, ln, l, 1);
      adapt(v, ln, l, 2);
    } else {
      lin(q, ln, w.wq, nullptr, w.bq, r, c, nh * hs, false);
      lin(k, ln, w.wk, nullptr, w.bk, r, c, kvd, false);
      lin(v, ln, w.wv, nullptr, w.bv, r, c, kvd, false);
    }
    if (cfg_.qk_norm) {
      rmsnorm_forward(q, qr, q, w.qn, r * nh, hs, eps);  // in place: each row reads before writing
      rmsnorm_forward(k, kr, k, w.kn, r * nkv, hs, eps);
    }
    rope_forward(q, sc.positions.data(), sc.cos_t.data(), sc.sin_t.data(), r, nh, hs);
    rope_forward(k, sc.positions.data(), sc.cos_t.data(), sc.sin_t.data(), r, nkv, hs);
    // Store the new keys/values, then attend (a row sees its own and earlier positions).
    for (const auto& sg : segs)
      for (int64_t i = sg.row_begin; i < sg.row_end; ++i) {
        const int64_t pos = sc.positions[static_cast<size_t>(i)];
        const int32_t page = sg.kv->pages[static_cast<size_t>(pos / cache.page_size())];
        std::memcpy(cache.k(layer, page, pos % cache.page_size()), k + i * kvd, sizeof(float) * kvd);
        std::memcpy(cache.v(layer, page, pos % cache.page_size()), v + i * kvd, sizeof(float) * kvd);
      }
    const int64_t items = static_cast<int64_t>(segs.size()) * nkv;
    const int64_t item_work = std::max<int64_t>(1, r / std::max<int64_t>(1, static_cast<int64_t>(segs.size()))) *
                              tmax * hs * group * 2;
    const int64_t ps = cache.page_size();
    parallel_for_dynamic(items, [&](int64_t it) {
      thread_local std::vector<float> s;
      thread_local std::vector<const float*> kp, vp;
      if (static_cast<int64_t>(s.size()) < tmax * group) s.resize(static_cast<size_t>(tmax * group));
      const auto& sg = segs[static_cast<size_t>(it / nkv)];
      const int64_t kvh = it % nkv;
      // Page pointers of this kv head for every page the segment's last row sees.
      const int64_t np = (sc.positions[static_cast<size_t>(sg.row_end - 1)] + ps) / ps;
      kp.resize(static_cast<size_t>(np));
      vp.resize(static_cast<size_t>(np));
      for (int64_t pg = 0; pg < np; ++pg) {
        const int32_t page = sg.kv->pages[static_cast<size_t>(pg)];
        kp[static_cast<size_t>(pg)] = cache.k(layer, page, 0) + kvh * hs;
        vp[static_cast<size_t>(pg)] = cache.v(layer, page, 0) + kvh * hs;
      }
      // Row i sees positions 0..pos (its own key was stored above).
      for (int64_t i = sg.row_begin; i < sg.row_end; ++i)
        paged_attention(att + i * nh * hs + kvh * group * hs, hs, q + i * nh * hs + kvh * group * hs, hs,
                        group, hs, sc.positions[static_cast<size_t>(i)] + 1, scale, kp.data(), vp.data(), ps,
                        kvd, s.data());
    }, item_work);
    // x += att Wo^T (+ bo)
    lin(x, att, w.wo, p ? &p->wo : nullptr, nullptr, r, nh * hs, c, true);
    adapt(x, att, l, 3);
    if (w.bo) parallel_for(r, [&](int64_t i) { for (int64_t j = 0; j < c; ++j) x[i * c + j] += w.bo[j]; }, c);
    rmsnorm_forward(ln, rstd, x, w.ln2, r, c, eps);
    if (use_packed) {
      const PackedOut outs[] = {{gate, nullptr}, {up, nullptr}};
      packed_linear_parts(outs, ln, p->gate_up, r);
      adapt(gate, ln, l, 4);
      adapt(up, ln, l, 5);
    } else {
      lin(gate, ln, w.wg, nullptr, nullptr, r, c, I, false);
      lin(up, ln, w.wu, nullptr, nullptr, r, c, I, false);
    }
    swiglu_forward(gate, gate, up, r * I);
    lin(x, gate, w.wd, p ? &p->wd : nullptr, nullptr, r, I, c, true);
    adapt(x, gate, l, 6);
  }
  // Final norm and logits only for the requested rows.
  const int64_t m = static_cast<int64_t>(logit_rows.size());
  logits.resize(static_cast<size_t>(m * V));
  if (m == 0) return;
  float* hrows = fit(sc.hrows, m * c);
  for (int64_t i = 0; i < m; ++i) {
    const int64_t row = logit_rows[static_cast<size_t>(i)];
    TRINITY_ASSERT(row >= 0 && row < r, "logit row out of range");
    std::memcpy(hrows + i * c, x + row * c, sizeof(float) * c);
  }
  rmsnorm_forward(hrows, rstd, hrows, im.lnf, m, c, eps);
  if (pw)
    packed_linear(logits.data(), hrows, pw->base->head, nullptr, m, false);
  else
    linear_forward(logits.data(), hrows, im.whead, nullptr, m, c, V);
}

}  // namespace trinity::model
