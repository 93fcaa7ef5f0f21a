// document_minhash_deduplicator (minhash.h): signatures, LSH banding, verified union-find.
// Determinism: hashes are fixed functions of the bytes and the seed, and every grouping is a sort on
// (key, row), so the same rows and args always give the same result.
#include "pipeline/minhash.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "core/error.h"
#include "pipeline/data_ops_internal.h"
#include "pipeline/unicode_text.h"

namespace trinity::pipeline {

namespace {

constexpr uint64_t kP = (uint64_t{1} << 61) - 1;  // Mersenne prime 2^61 - 1
constexpr int64_t kMaxPermutations = 8192;
__extension__ typedef unsigned __int128 u128;  // g++ / clang builtin

// splitmix64's finaliser: a bijective 64-bit mix.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t hash_bytes(std::string_view s) {
  uint64_t h = mix64(0x9E3779B97F4A7C15ULL + s.size());
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t k = 0;
    for (size_t j = 0; j < 8; ++j) k |= uint64_t{static_cast<unsigned char>(s[i + j])} << (8 * j);
    h = mix64(h ^ k);
  }
  uint64_t k = 0;
  for (size_t j = 0; i + j < s.size(); ++j) k |= uint64_t{static_cast<unsigned char>(s[i + j])} << (8 * j);
  return mix64(h ^ k ^ 0xA0761D6478BD642FULL);
}

// (a * x + b) mod P for a, x, b < P.
uint64_t mul_add_mod(uint64_t a, uint64_t x, uint64_t b) {
  const u128 t = static_cast<u128>(a) * x + b;
  uint64_t r = (static_cast<uint64_t>(t) & kP) + static_cast<uint64_t>(t >> 61);
  r = (r & kP) + (r >> 61);
  return r >= kP ? r - kP : r;
}

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), uint32_t{0}); }
  uint32_t find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];  // path halving
    return x;
  }
  // The lower root becomes the root, so a cluster's root is its lowest row.
  void unite(uint32_t x, uint32_t y) {
    x = find(x), y = find(y);
    if (x != y) parent_[std::max(x, y)] = std::min(x, y);
  }

 private:
  std::vector<uint32_t> parent_;
};

struct MinHashArgs {
  int64_t num_perm, ngram;
  double threshold;
  LshParams lsh;
  bool lowercase;
  uint64_t seed;
};

class MinHashDeduplicator : public DataOp {
 public:
  explicit MinHashDeduplicator(const MinHashArgs& a) : a_(a), k_(static_cast<size_t>(a.num_perm)) {
    uint64_t state = a.seed;
    auto next = [&] { return mix64(state += 0x9E3779B97F4A7C15ULL); };  // splitmix64 stream
    for (size_t i = 0; i < k_; ++i) {
      perm_a_.push_back(1 + next() % (kP - 1));
      perm_b_.push_back(next() % kP);
    }
  }

  DataOpResult apply(const std::vector<DataRow>& rows) override {
    TRINITY_ASSERT(rows.size() < UINT32_MAX, "too many rows for one apply(): ", rows.size());
    const auto n = static_cast<uint32_t>(rows.size());
    std::vector<uint32_t> sig(rows.size() * k_);  // [n, num_perm]
    std::vector<uint64_t> shingles;
    for (size_t i = 0; i < rows.size(); ++i) {
      shingle_hashes(rows[i].text, shingles);
      signature(shingles, &sig[i * k_]);
    }
    UnionFind uf(rows.size());
    const std::vector<uint32_t> reps = merge_identical(sig, n, uf);
    std::vector<std::pair<uint64_t, uint32_t>> keys(reps.size());  // (band key, row)
    const auto r = static_cast<size_t>(a_.lsh.rows);
    for (size_t band = 0; band < static_cast<size_t>(a_.lsh.bands); ++band) {
      for (size_t j = 0; j < reps.size(); ++j) keys[j] = {slot_hash(&sig[reps[j] * k_ + band * r], r, band), reps[j]};
      std::sort(keys.begin(), keys.end());
      for (size_t s = 0, e = 0; s < keys.size(); s = e) {
        for (e = s + 1; e < keys.size() && keys[e].first == keys[s].first;) ++e;
        if (e - s > 1) merge_bucket(keys, s, e, sig, uf);
      }
    }
    std::vector<char> keep(rows.size());
    for (uint32_t i = 0; i < n; ++i) keep[i] = uf.find(i) == i ? 1 : 0;
    DataOpResult res = filter_result(std::move(keep));
    res.metrics["duplicate_count"] = res.metrics["filtered_count"];
    return res;
  }

 private:
  // Hashes of the row's word n-grams (each reduced mod P).
  void shingle_hashes(std::string_view text, std::vector<uint64_t>& out) const {
    const std::string folded = a_.lowercase ? fold_case(text) : std::string();
    const std::vector<std::string_view> words = split_words(a_.lowercase ? std::string_view(folded) : text);
    std::vector<uint64_t> wh(words.size());
    for (size_t i = 0; i < words.size(); ++i) wh[i] = hash_bytes(words[i]);
    const auto ngram = static_cast<size_t>(a_.ngram);
    const size_t len = std::min(ngram, words.size());  // fewer words: the whole text is one shingle
    out.clear();
    for (size_t i = 0; i + len <= words.size(); ++i) {
      uint64_t h = 0x2545F4914F6CDD1DULL;
      for (size_t j = i; j < i + len; ++j) h = mix64(h ^ wh[j]);
      h = (h & kP) + (h >> 61);
      out.push_back(h >= kP ? h - kP : h);
      if (len == 0) break;
    }
  }

  void signature(const std::vector<uint64_t>& shingles, uint32_t* sig) const {
    std::fill(sig, sig + k_, UINT32_MAX);
    for (const uint64_t x : shingles)
      for (size_t k = 0; k < k_; ++k)
        sig[k] = std::min(sig[k], static_cast<uint32_t>(mul_add_mod(perm_a_[k], x, perm_b_[k])));
  }

  static uint64_t slot_hash(const uint32_t* v, size_t n, uint64_t salt) {
    uint64_t h = mix64(salt + 0x632BE59BD9B4E019ULL);
    for (size_t i = 0; i < n; ++i) h = mix64(h ^ v[i]);
    return h;
  }

  // Rows with identical signatures (Jaccard estimate 1) join the first one; returns the others.
  std::vector<uint32_t> merge_identical(const std::vector<uint32_t>& sig, uint32_t n, UnionFind& uf) const {
    std::vector<std::pair<uint64_t, uint32_t>> full(n);
    for (uint32_t i = 0; i < n; ++i) full[i] = {slot_hash(&sig[i * k_], k_, ~uint64_t{0}), i};
    std::sort(full.begin(), full.end());
    std::vector<uint32_t> reps;
    for (size_t s = 0, e = 0; s < full.size(); s = e) {
      reps.push_back(full[s].second);
      for (e = s + 1; e < full.size() && full[e].first == full[s].first; ++e) {
        const uint32_t first = full[s].second, row = full[e].second;
        if (std::equal(&sig[first * k_], &sig[first * k_] + k_, &sig[row * k_]))
          uf.unite(first, row);
        else
          reps.push_back(row);  // a 64-bit hash collision: keep it in the LSH pass
      }
    }
    std::sort(reps.begin(), reps.end());
    return reps;
  }

  bool similar(const std::vector<uint32_t>& sig, uint32_t x, uint32_t y) const {
    const uint32_t* a = &sig[x * k_];
    const uint32_t* b = &sig[y * k_];
    size_t same = 0;
    for (size_t k = 0; k < k_; ++k) same += a[k] == b[k];
    return static_cast<double>(same) / static_cast<double>(k_) >= a_.threshold;
  }

  // Verifies the candidate pairs of one bucket (keys[s, e), rows ascending). The bucket's rows are
  // kept in groups, one per cluster; a row is checked against each group whose cluster it is not
  // already in until one member verifies, so a bucket of k mutual near-duplicates costs O(k) checks.
  void merge_bucket(const std::vector<std::pair<uint64_t, uint32_t>>& keys, size_t s, size_t e,
                    const std::vector<uint32_t>& sig, UnionFind& uf) const {
    std::vector<std::vector<uint32_t>> groups;
    for (size_t i = s; i < e; ++i) {
      const uint32_t row = keys[i].second;
      size_t home = groups.size();  // the group `row` joined, if any
      for (size_t g = 0; g < groups.size(); ++g) {
        if (groups[g].empty()) continue;
        bool joined = uf.find(groups[g].front()) == uf.find(row);
        for (size_t m = 0; !joined && m < groups[g].size(); ++m) {
          if (!similar(sig, row, groups[g][m])) continue;
          uf.unite(row, groups[g][m]);
          joined = true;
        }
        if (!joined) continue;
        if (home == groups.size()) {
          home = g;
        } else {
          groups[home].insert(groups[home].end(), groups[g].begin(), groups[g].end());
          groups[g].clear();
        }
      }
      if (home == groups.size()) groups.emplace_back();
      groups[home].push_back(row);
    }
  }

  MinHashArgs a_;
  size_t k_;
  std::vector<uint64_t> perm_a_, perm_b_;
};

}  // namespace

LshParams optimal_lsh_params(double threshold, int64_t num_perm, double fp_weight, double fn_weight) {
  TRINITY_ASSERT(num_perm >= 1 && threshold >= 0 && threshold <= 1, "num_perm ", num_perm, " threshold ", threshold);
  constexpr int kIntervals = 2048;  // per side, even
  struct Node {
    double s, w;
  };
  auto simpson = [](double lo, double hi) {
    std::vector<Node> nodes(kIntervals + 1);
    const double h = (hi - lo) / kIntervals;
    for (int g = 0; g <= kIntervals; ++g)
      nodes[g] = {lo + g * h, h / 3 * (g == 0 || g == kIntervals ? 1 : g % 2 ? 4 : 2)};
    return nodes;
  };
  const std::vector<Node> left = simpson(0.0, threshold), right = simpson(threshold, 1.0);
  const auto k = static_cast<size_t>(num_perm);
  std::vector<std::vector<double>> err(k + 1);  // err[b][r]
  for (size_t b = 1; b <= k; ++b) err[b].resize(k / b + 1);
  std::vector<double> fp(k + 1), fn(k + 1);
  for (size_t r = 1; r <= k; ++r) {
    const size_t bmax = k / r;
    std::fill(fp.begin(), fp.end(), 0.0);
    std::fill(fn.begin(), fn.end(), 0.0);
    // (1 - s^r)^b for b = 1..bmax by repeated multiplication.
    for (const Node& x : left) {
      const double q = 1 - std::pow(x.s, static_cast<double>(r));
      double qb = 1;
      for (size_t b = 1; b <= bmax; ++b) fp[b] += x.w * (1 - (qb *= q));
    }
    for (const Node& x : right) {
      const double q = 1 - std::pow(x.s, static_cast<double>(r));
      double qb = 1;
      for (size_t b = 1; b <= bmax; ++b) fn[b] += x.w * (qb *= q);
    }
    for (size_t b = 1; b <= bmax; ++b) err[b][r] = fp_weight * fp[b] + fn_weight * fn[b];
  }
  LshParams best;
  double min_err = INFINITY;
  for (size_t b = 1; b <= k; ++b)
    for (size_t r = 1; r <= k / b; ++r)
      if (err[b][r] < min_err) {
        min_err = err[b][r];
        best = {static_cast<int64_t>(b), static_cast<int64_t>(r)};
      }
  return best;
}

std::unique_ptr<DataOp> make_minhash_deduplicator(const OpArgs& a) {
  MinHashArgs m;
  m.num_perm = a.integer("num_permutations", 128, 1);
  if (m.num_perm > kMaxPermutations) a.fail("num_permutations", strcat("an integer in [1, ", kMaxPermutations, "]"));
  m.threshold = a.ratio("jaccard_threshold", 0.7);
  m.ngram = a.integer("ngram_size", 5, 1);
  m.lowercase = a.boolean("lowercase", true);
  m.seed = static_cast<uint64_t>(a.integer("seed", 42, 0));
  const bool has_b = a.has("num_bands"), has_r = a.has("num_rows_per_band");
  if (!has_b && !has_r) {
    m.lsh = optimal_lsh_params(m.threshold, m.num_perm);
  } else {
    // One of them given: the other is as large as num_permutations allows.
    const int64_t b = a.integer("num_bands", 1, 1), r = a.integer("num_rows_per_band", 1, 1);
    m.lsh = {has_b ? b : m.num_perm / r, has_r ? r : m.num_perm / b};
    if (m.lsh.bands < 1 || m.lsh.rows < 1 || m.lsh.bands > m.num_perm / m.lsh.rows)
      a.fail(has_b ? "num_bands" : "num_rows_per_band",
             strcat("such that num_bands * num_rows_per_band <= num_permutations (", m.num_perm, ")"));
  }
  return std::make_unique<MinHashDeduplicator>(m);
}

}  // namespace trinity::pipeline
