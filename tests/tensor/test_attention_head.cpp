// Attention and the logprob/entropy head: fast vs double reference, gradients vs finite differences,
// variable-length packed sequences, GQA grouping, shared prompt prefixes.
#include <gtest/gtest.h>

#include "tensor/attention.h"
#include "tensor/lm_head.h"
#include "fd.h"

using namespace trinity;
using namespace trinity::tensor;
using test::dot;
using test::expect_close;
using test::expect_fd;
using test::randn;

namespace {

struct AttnCase {
  std::vector<int64_t> seq_start;
  AttnShape sh;
  int64_t n() const { return seq_start.back(); }
  int64_t b() const { return static_cast<int64_t>(seq_start.size()) - 1; }
};

}  // namespace

TEST(Attention, ForwardMatchesReferenceVariableLengthGqa) {
  AttnCase c{{0, 5, 6, 14}, {4, 2, 8}};
  const int64_t n = c.n();
  auto q = randn(static_cast<size_t>(n * c.sh.nh * c.sh.hs), 21);
  auto k = randn(static_cast<size_t>(n * c.sh.nkv * c.sh.hs), 22);
  auto v = randn(k.size(), 23);
  std::vector<float> o(q.size()), orf(q.size()), l(static_cast<size_t>(n * c.sh.nh)), lr(l.size());
  attention_forward(o.data(), l.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh);
  attention_forward_ref(orf.data(), lr.data(), q.data(), k.data(), v.data(), c.seq_start.data(),
                        c.b(), c.sh);
  expect_close(o, orf, 1e-5, "attention out");
  expect_close(l, lr, 1e-5, "attention lse");
  // The first row of each sequence attends only to itself: out == v of that row.
  for (int64_t bi = 0; bi < c.b(); ++bi) {
    const int64_t row = c.seq_start[static_cast<size_t>(bi)];
    for (int64_t h = 0; h < c.sh.nh; ++h)
      for (int64_t d = 0; d < c.sh.hs; ++d)
        EXPECT_NEAR(o[static_cast<size_t>((row * c.sh.nh + h) * c.sh.hs + d)],
                    v[static_cast<size_t>((row * c.sh.nkv + h / 2) * c.sh.hs + d)], 1e-6);
  }
}

TEST(Attention, BackwardMatchesFiniteDifferences) {
  for (AttnCase c : {AttnCase{{0, 4, 11}, {4, 2, 8}}, AttnCase{{0, 6}, {2, 2, 4}},
                     AttnCase{{0, 3, 5, 9}, {3, 1, 6}}}) {
    const int64_t n = c.n();
    auto q = randn(static_cast<size_t>(n * c.sh.nh * c.sh.hs), 31);
    auto k = randn(static_cast<size_t>(n * c.sh.nkv * c.sh.hs), 32);
    auto v = randn(k.size(), 33);
    std::vector<float> o(q.size()), l(static_cast<size_t>(n * c.sh.nh));
    attention_forward(o.data(), l.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh);
    auto dout = randn(o.size(), 34);
    std::vector<float> dq(q.size(), 0.0f), dk(k.size(), 0.0f), dv(v.size(), 0.0f);
    attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                       o.data(), l.data(), c.seq_start.data(), c.b(), c.sh);
    auto loss = [&] {
      std::vector<float> oo(q.size()), ll(l.size());
      attention_forward_ref(oo.data(), ll.data(), q.data(), k.data(), v.data(), c.seq_start.data(),
                            c.b(), c.sh);
      return dot(oo, dout);
    };
    expect_fd(q, dq, loss, "attention dq", 1e-2, 2e-2, 200);
    expect_fd(k, dk, loss, "attention dk", 1e-2, 2e-2, 200);
    expect_fd(v, dv, loss, "attention dv", 1e-2, 2e-2, 200);
  }
}

TEST(Attention, BackwardMatchesReference) {
  // Includes a sequence spanning several 64-row query blocks; gradients start non-zero (+=).
  for (AttnCase c :
       {AttnCase{{0, 4, 11}, {4, 2, 8}}, AttnCase{{0, 3, 5, 9}, {3, 1, 6}}, AttnCase{{0, 130, 137}, {4, 2, 8}}}) {
    const int64_t n = c.n();
    auto q = randn(static_cast<size_t>(n * c.sh.nh * c.sh.hs), 91);
    auto k = randn(static_cast<size_t>(n * c.sh.nkv * c.sh.hs), 92);
    auto v = randn(k.size(), 93);
    std::vector<float> o(q.size()), l(static_cast<size_t>(n * c.sh.nh));
    attention_forward(o.data(), l.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh);
    auto dout = randn(o.size(), 94);
    auto dq = randn(q.size(), 95), dk = randn(k.size(), 96), dv = randn(v.size(), 97);
    auto dqr = dq, dkr = dk, dvr = dv;
    attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(), l.data(),
                       c.seq_start.data(), c.b(), c.sh);
    attention_backward_ref(dqr.data(), dkr.data(), dvr.data(), dout.data(), q.data(), k.data(), v.data(),
                           c.seq_start.data(), c.b(), c.sh);
    expect_close(dq, dqr, 1e-4, "attention dq vs reference");
    expect_close(dk, dkr, 1e-4, "attention dk vs reference");
    expect_close(dv, dvr, 1e-4, "attention dv vs reference");
  }
}

TEST(LmHead, ForwardMatchesReferenceAndChunksAgree) {
  HeadShape s{37, 16, 101, 1.0f / 0.7f};
  auto h = randn(static_cast<size_t>(s.m * s.c), 41), w = randn(static_cast<size_t>(s.v * s.c), 42, 0.5f);
  std::vector<int32_t> t(static_cast<size_t>(s.m));
  for (int64_t i = 0; i < s.m; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37) % s.v);
  std::vector<float> lp(static_cast<size_t>(s.m)), ent(lp.size()), lse(lp.size()), lpr(lp.size()), entr(lp.size());
  lm_head_forward(lp.data(), ent.data(), lse.data(), h.data(), w.data(), t.data(), s);
  lm_head_forward_ref(lpr.data(), entr.data(), h.data(), w.data(), t.data(), s);
  expect_close(lp, lpr, 1e-5, "logprob");
  expect_close(ent, entr, 1e-5, "entropy");
  for (float e : ent) EXPECT_GT(e, 0.0f);
}

TEST(LmHead, BackwardMatchesFiniteDifferences) {
  HeadShape s{7, 6, 13, 1.0f / 1.3f};
  auto h = randn(static_cast<size_t>(s.m * s.c), 51), w = randn(static_cast<size_t>(s.v * s.c), 52);
  std::vector<int32_t> t = {0, 12, 5, 5, 3, 7, 1};
  auto dlp = randn(static_cast<size_t>(s.m), 53), dent = randn(static_cast<size_t>(s.m), 54);
  std::vector<float> lp(static_cast<size_t>(s.m)), ent(lp.size()), lse(lp.size());
  lm_head_forward(lp.data(), ent.data(), lse.data(), h.data(), w.data(), t.data(), s);
  std::vector<float> dh(h.size(), 0.0f), dw(w.size(), 0.0f);
  lm_head_backward(dh.data(), dw.data(), dlp.data(), dent.data(), h.data(), w.data(), t.data(),
                   lse.data(), ent.data(), s);
  auto loss = [&] {
    std::vector<float> a(lp.size()), b(lp.size());
    lm_head_forward_ref(a.data(), b.data(), h.data(), w.data(), t.data(), s);
    return dot(a, dlp) + dot(b, dent);
  };
  expect_fd(h, dh, loss, "head dh", 1e-2, 2e-2, 100);
  expect_fd(w, dw, loss, "head dw", 1e-2, 2e-2, 100);
}

TEST(LmHead, BackwardMatchesReference) {
  HeadShape s{37, 16, 101, 1.0f / 0.7f};
  auto h = randn(static_cast<size_t>(s.m * s.c), 61), w = randn(static_cast<size_t>(s.v * s.c), 62, 0.5f);
  std::vector<int32_t> t(static_cast<size_t>(s.m));
  for (int64_t i = 0; i < s.m; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((i * 13) % s.v);
  auto dlp = randn(static_cast<size_t>(s.m), 63), dent = randn(static_cast<size_t>(s.m), 64);
  std::vector<float> lp(static_cast<size_t>(s.m)), ent(lp.size()), lse(lp.size());
  lm_head_forward(lp.data(), ent.data(), lse.data(), h.data(), w.data(), t.data(), s);
  auto dh = randn(h.size(), 65), dw = randn(w.size(), 66);  // both accumulate (+=)
  auto dhr = dh, dwr = dw, dh_frozen = dh;
  lm_head_backward(dh.data(), dw.data(), dlp.data(), dent.data(), h.data(), w.data(), t.data(), lse.data(), ent.data(),
                   s);
  lm_head_backward_ref(dhr.data(), dwr.data(), dlp.data(), dent.data(), h.data(), w.data(), t.data(), s);
  expect_close(dh, dhr, 1e-4, "head dh vs reference");
  expect_close(dw, dwr, 1e-4, "head dw vs reference");
  lm_head_backward(dh_frozen.data(), nullptr, dlp.data(), dent.data(), h.data(), w.data(), t.data(), lse.data(),
                   ent.data(), s);
  expect_close(dh_frozen, dhr, 1e-4, "head dh vs reference, frozen head");
}

TEST(LmHead, KeptLogitsModeEqualsRecompute) {
  HeadShape s{9, 8, 53, 1.0f / 0.9f};  // V not a multiple of 16: exercises the scalar tails
  auto h = randn(static_cast<size_t>(s.m * s.c), 71), w = randn(static_cast<size_t>(s.v * s.c), 72);
  std::vector<int32_t> t = {0, 52, 5, 17, 3, 7, 1, 50, 16};
  auto dlp = randn(static_cast<size_t>(s.m), 73), dent = randn(static_cast<size_t>(s.m), 74);
  std::vector<float> lp1(9), e1(9), l1(9), lp2(9), e2(9), l2(9), keep(static_cast<size_t>(s.m * s.v));
  lm_head_forward(lp1.data(), e1.data(), l1.data(), h.data(), w.data(), t.data(), s);
  lm_head_forward(lp2.data(), e2.data(), l2.data(), h.data(), w.data(), t.data(), s, keep.data());
  EXPECT_EQ(lp1, lp2);
  EXPECT_EQ(e1, e2);
  std::vector<float> dh1(h.size(), 0.0f), dw1(w.size(), 0.0f), dh2(h.size(), 0.0f), dw2(w.size(), 0.0f);
  lm_head_backward(dh1.data(), dw1.data(), dlp.data(), dent.data(), h.data(), w.data(), t.data(),
                   l1.data(), e1.data(), s);
  lm_head_backward(dh2.data(), dw2.data(), dlp.data(), dent.data(), h.data(), w.data(), t.data(),
                   l2.data(), e2.data(), s, keep.data());
  expect_close(dh1, dh2, 1e-5, "dh kept vs recomputed");
  expect_close(dw1, dw2, 1e-5, "dw kept vs recomputed");
}

TEST(Attention, LongSequencesSpanSeveralRowBlocks) {
  // 64-row query blocks: 150 rows = 3 blocks (last partial), next to a short sequence.
  AttnCase c{{0, 150, 157}, {4, 2, 8}};
  const int64_t n = c.n();
  auto q = randn(static_cast<size_t>(n * c.sh.nh * c.sh.hs), 81);
  auto k = randn(static_cast<size_t>(n * c.sh.nkv * c.sh.hs), 82);
  auto v = randn(k.size(), 83);
  std::vector<float> o(q.size()), orf(q.size()), l(static_cast<size_t>(n * c.sh.nh)), lr(l.size());
  attention_forward(o.data(), l.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh);
  attention_forward_ref(orf.data(), lr.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh);
  expect_close(o, orf, 1e-5, "attention out, 3 row blocks");
  expect_close(l, lr, 1e-5, "attention lse, 3 row blocks");
  auto dout = randn(o.size(), 84);
  std::vector<float> dq(q.size(), 0.0f), dk(k.size(), 0.0f), dv(v.size(), 0.0f);
  attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                     o.data(), l.data(), c.seq_start.data(), c.b(), c.sh);
  auto loss = [&] {
    std::vector<float> oo(q.size()), ll(l.size());
    attention_forward(oo.data(), ll.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh);
    return dot(oo, dout);
  };
  expect_fd(q, dq, loss, "attention dq, 3 row blocks", 1e-2, 2e-2, 120);
  expect_fd(k, dk, loss, "attention dk, 3 row blocks", 1e-2, 2e-2, 120);
  expect_fd(v, dv, loss, "attention dv, 3 row blocks", 1e-2, 2e-2, 120);
}

namespace {

// A shared-prefix batch and the same sequences written out whole. Shared layout: an unrelated
// sequence (no prefix), the prefix P, then children C_j whose rows continue P (prefix[C_j] = P's
// index). Unshared layout: the unrelated sequence, then P ++ C_j for every j. `rows` maps each
// unshared row to its shared row (P's rows appear once per child).
struct PrefixCase {
  AttnShape sh{4, 2, 8};
  int64_t other = 4, tp = 5;
  std::vector<int64_t> tails{3, 70, 1};  // 70 rows: a child spanning two 64-row query blocks
  std::vector<int64_t> seq_start, prefix, flat_start, rows;

  PrefixCase() {
    seq_start = {0, other, other + tp};
    prefix = {-1, -1};
    for (int64_t t : tails) seq_start.push_back(seq_start.back() + t), prefix.push_back(1);
    flat_start = {0, other};
    for (int64_t r = 0; r < other; ++r) rows.push_back(r);
    for (size_t j = 0; j < tails.size(); ++j) {
      for (int64_t r = 0; r < tp; ++r) rows.push_back(other + r);
      for (int64_t r = 0; r < tails[j]; ++r) rows.push_back(seq_start[j + 2] + r);
      flat_start.push_back(static_cast<int64_t>(rows.size()));
    }
  }
  int64_t n() const { return seq_start.back(); }
  int64_t b() const { return static_cast<int64_t>(seq_start.size()) - 1; }
  int64_t flat_b() const { return static_cast<int64_t>(flat_start.size()) - 1; }
  // Rows of a shared [N, width] tensor written out as the unshared [N', width].
  std::vector<float> flat(const std::vector<float>& v, int64_t width) const {
    std::vector<float> out;
    for (int64_t r : rows) out.insert(out.end(), v.begin() + r * width, v.begin() + (r + 1) * width);
    return out;
  }
};

}  // namespace

TEST(Attention, SharedPrefixEqualsTheSequencesWrittenOutWhole) {
  // What a shared prefix means, checked against the plain causal reference on P ++ C_j: every
  // child row's output and lse, and gradients where the prefix rows collect those of every copy.
  PrefixCase c;
  const int64_t wq = c.sh.nh * c.sh.hs, wk = c.sh.nkv * c.sh.hs, n = c.n();
  auto q = randn(static_cast<size_t>(n * wq), 101), k = randn(static_cast<size_t>(n * wk), 102),
       v = randn(static_cast<size_t>(n * wk), 103);
  std::vector<float> o(q.size()), l(static_cast<size_t>(n * c.sh.nh));
  attention_forward(o.data(), l.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh, c.prefix.data());
  const auto fq = c.flat(q, wq), fk = c.flat(k, wk), fv = c.flat(v, wk);
  std::vector<float> fo(fq.size()), fl(fq.size() / static_cast<size_t>(c.sh.hs));
  attention_forward_ref(fo.data(), fl.data(), fq.data(), fk.data(), fv.data(), c.flat_start.data(), c.flat_b(), c.sh);
  expect_close(c.flat(o, wq), fo, 1e-5, "shared-prefix out vs whole sequences");
  expect_close(c.flat(l, c.sh.nh), fl, 1e-5, "shared-prefix lse vs whole sequences");

  // Backward: the prefix's output rows carry their upstream gradient once (on the first copy).
  auto dout = randn(o.size(), 104);
  auto fdout = c.flat(dout, wq);
  for (size_t j = 1; j < c.tails.size(); ++j)
    std::fill(fdout.begin() + c.flat_start[j + 1] * wq, fdout.begin() + (c.flat_start[j + 1] + c.tp) * wq, 0.0f);
  std::vector<float> dq(q.size(), 0.0f), dk(k.size(), 0.0f), dv(v.size(), 0.0f);
  attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(), l.data(),
                     c.seq_start.data(), c.b(), c.sh, c.prefix.data());
  std::vector<float> fdq(fq.size(), 0.0f), fdk(fk.size(), 0.0f), fdv(fv.size(), 0.0f);
  attention_backward_ref(fdq.data(), fdk.data(), fdv.data(), fdout.data(), fq.data(), fk.data(), fv.data(),
                         c.flat_start.data(), c.flat_b(), c.sh);
  // Sum the unshared gradients back onto the shared rows.
  auto fold = [&](const std::vector<float>& g, int64_t width) {
    std::vector<float> out(static_cast<size_t>(n * width), 0.0f);
    for (size_t i = 0; i < c.rows.size(); ++i)
      for (int64_t d = 0; d < width; ++d)
        out[static_cast<size_t>(c.rows[i] * width + d)] += g[i * static_cast<size_t>(width) + static_cast<size_t>(d)];
    return out;
  };
  expect_close(dq, fold(fdq, wq), 1e-4, "shared-prefix dq vs whole sequences");
  expect_close(dk, fold(fdk, wk), 1e-4, "shared-prefix dk vs whole sequences");
  expect_close(dv, fold(fdv, wk), 1e-4, "shared-prefix dv vs whole sequences");
}

TEST(Attention, SharedPrefixMatchesReferenceAndFiniteDifferences) {
  PrefixCase c;
  const int64_t n = c.n();
  auto q = randn(static_cast<size_t>(n * c.sh.nh * c.sh.hs), 111),
       k = randn(static_cast<size_t>(n * c.sh.nkv * c.sh.hs), 112), v = randn(k.size(), 113);
  std::vector<float> o(q.size()), orf(q.size()), l(static_cast<size_t>(n * c.sh.nh)), lr(l.size());
  const int64_t* pre = c.prefix.data();
  attention_forward(o.data(), l.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh, pre);
  attention_forward_ref(orf.data(), lr.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh, pre);
  expect_close(o, orf, 1e-5, "shared-prefix out vs reference");
  expect_close(l, lr, 1e-5, "shared-prefix lse vs reference");
  auto dout = randn(o.size(), 114);
  auto dq = randn(q.size(), 115), dk = randn(k.size(), 116), dv = randn(v.size(), 117);  // += from non-zero
  auto dqr = dq, dkr = dk, dvr = dv;
  attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(), l.data(),
                     c.seq_start.data(), c.b(), c.sh, pre);
  attention_backward_ref(dqr.data(), dkr.data(), dvr.data(), dout.data(), q.data(), k.data(), v.data(),
                         c.seq_start.data(), c.b(), c.sh, pre);
  expect_close(dq, dqr, 1e-4, "shared-prefix dq vs reference");
  expect_close(dk, dkr, 1e-4, "shared-prefix dk vs reference");
  expect_close(dv, dvr, 1e-4, "shared-prefix dv vs reference");

  std::vector<float> gq(q.size(), 0.0f), gk(k.size(), 0.0f), gv(v.size(), 0.0f);
  attention_backward(gq.data(), gk.data(), gv.data(), dout.data(), q.data(), k.data(), v.data(), o.data(), l.data(),
                     c.seq_start.data(), c.b(), c.sh, pre);
  auto loss = [&] {
    std::vector<float> oo(q.size()), ll(l.size());
    attention_forward(oo.data(), ll.data(), q.data(), k.data(), v.data(), c.seq_start.data(), c.b(), c.sh, pre);
    return dot(oo, dout);
  };
  expect_fd(q, gq, loss, "shared-prefix dq", 1e-2, 2e-2, 120);
  expect_fd(k, gk, loss, "shared-prefix dk", 1e-2, 2e-2, 120);
  expect_fd(v, gv, loss, "shared-prefix dv", 1e-2, 2e-2, 120);
}
