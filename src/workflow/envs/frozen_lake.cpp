// FrozenLake dynamics, map generation (BFS reachability) and text rendering; see frozen_lake.h.
#include "workflow/envs/frozen_lake.h"

#include <deque>

#include "core/error.h"

namespace trinity::workflow {

FrozenLake::FrozenLake(std::vector<std::string> desc, bool is_slippery)
    : desc_(std::move(desc)), slippery_(is_slippery) {
  if (desc_.empty() || desc_[0].empty()) throw ValueError("frozen_lake", "desc must be a non-empty list of rows");
  nrow_ = static_cast<int>(desc_.size());
  ncol_ = static_cast<int>(desc_[0].size());
  int starts = 0, goals = 0;
  for (int r = 0; r < nrow_; ++r) {
    const auto& row = desc_[static_cast<size_t>(r)];
    if (static_cast<int>(row.size()) != ncol_)
      throw ValueError("frozen_lake", strcat("desc row ", r, " has length ", row.size(), ", expected ", ncol_));
    for (int c = 0; c < ncol_; ++c) {
      const char ch = row[static_cast<size_t>(c)];
      if (ch == 'S') ++starts, start_ = r * ncol_ + c;
      else if (ch == 'G') ++goals;
      else if (ch != 'F' && ch != 'H')
        throw ValueError("frozen_lake", strcat("desc cell (", r, ",", c, ") is '", std::string(1, ch),
                                               "', expected one of S F H G"));
    }
  }
  if (starts != 1 || goals < 1)
    throw ValueError("frozen_lake", strcat("desc needs exactly one S and at least one G, got ", starts, " S and ",
                                           goals, " G"));
  state_ = start_;
}

int FrozenLake::move(int state, int action) const {
  int r = state / ncol_, c = state % ncol_;
  switch (action) {
    case kLeft: c = std::max(c - 1, 0); break;
    case kDown: r = std::min(r + 1, nrow_ - 1); break;
    case kRight: c = std::min(c + 1, ncol_ - 1); break;
    case kUp: r = std::max(r - 1, 0); break;
    default: TRINITY_ASSERT(false, "FrozenLake: bad action ", action);
  }
  return r * ncol_ + c;
}

int FrozenLake::reset() {
  state_ = start_;
  return state_;
}

FrozenLake::Step FrozenLake::step(int action, Rng& rng) {
  if (action < 0 || action > 3) throw ValueError("frozen_lake", strcat("action ", action, " is not in 0..3"));
  if (terminal()) return {state_, 0.0, true};  // gymnasium: terminal states absorb with reward 0
  int a = action;
  if (slippery_) {
    // gymnasium: for b in [(a - 1) % 4, a, (a + 1) % 4], each with probability 1/3.
    const uint64_t k = rng.below(3);
    a = (action + 3 + static_cast<int>(k)) % 4;
  }
  state_ = move(state_, a);
  const char ch = cell(state_);
  return {state_, ch == 'G' ? 1.0 : 0.0, ch == 'G' || ch == 'H'};
}

int FrozenLake::shortest_path(const std::vector<std::string>& desc) {
  const int nrow = static_cast<int>(desc.size());
  if (nrow == 0) return -1;
  const int ncol = static_cast<int>(desc[0].size());
  std::vector<int> dist(static_cast<size_t>(nrow * ncol), -1);
  std::deque<int> q;
  for (int s = 0; s < nrow * ncol; ++s)
    if (desc[static_cast<size_t>(s / ncol)][static_cast<size_t>(s % ncol)] == 'S') dist[static_cast<size_t>(s)] = 0, q.push_back(s);
  while (!q.empty()) {
    const int s = q.front();
    q.pop_front();
    const int r = s / ncol, c = s % ncol;
    const int dr[4] = {0, 1, 0, -1}, dc[4] = {-1, 0, 1, 0};
    for (int k = 0; k < 4; ++k) {
      const int nr = r + dr[k], nc = c + dc[k];
      if (nr < 0 || nr >= nrow || nc < 0 || nc >= ncol) continue;
      const int t = nr * ncol + nc;
      const char ch = desc[static_cast<size_t>(nr)][static_cast<size_t>(nc)];
      if (ch == 'H' || dist[static_cast<size_t>(t)] >= 0) continue;
      dist[static_cast<size_t>(t)] = dist[static_cast<size_t>(s)] + 1;
      if (ch == 'G') return dist[static_cast<size_t>(t)];
      q.push_back(t);
    }
  }
  return -1;
}

std::vector<std::string> FrozenLake::generate_random_map(int size, double p, uint64_t seed, int max_path_len) {
  if (size < 2) throw ValueError("frozen_lake", strcat("size must be >= 2 (start and goal differ), got ", size));
  if (size > 64) throw ValueError("frozen_lake", strcat("size must be <= 64, got ", size));
  if (!(p > 0.0)) throw ValueError("frozen_lake", strcat("p (probability of a frozen tile) must be > 0, got ", p));
  if (p > 1.0) p = 1.0;  // Trinity: p = min(1, p)
  Rng rng(seed);
  for (int attempt = 0; attempt < 100000; ++attempt) {
    std::vector<std::string> board(static_cast<size_t>(size), std::string(static_cast<size_t>(size), 'F'));
    for (auto& row : board)
      for (auto& ch : row) ch = rng.uniform() < p ? 'F' : 'H';
    const auto n = static_cast<uint64_t>(size);
    int sr, sc, gr, gc;
    do {
      sr = static_cast<int>(rng.below(n));
      sc = static_cast<int>(rng.below(n));
      gr = static_cast<int>(rng.below(n));
      gc = static_cast<int>(rng.below(n));
    } while (sr == gr && sc == gc);
    board[static_cast<size_t>(sr)][static_cast<size_t>(sc)] = 'S';
    board[static_cast<size_t>(gr)][static_cast<size_t>(gc)] = 'G';
    const int d = shortest_path(board);
    if (d >= 0 && (max_path_len < 0 || d <= max_path_len)) return board;
  }
  throw ValueError("frozen_lake", strcat("no map of size ", size, " with p=", p, " has a path within ", max_path_len,
                                         " steps after 100000 draws"));
}

std::string FrozenLake::render() const {
  std::string out;
  for (int r = 0; r < nrow_; ++r) {
    if (r) out += '\n';
    for (int c = 0; c < ncol_; ++c) {
      const int s = r * ncol_ + c;
      const char ch = cell(s);
      if (s == state_) out += ch == 'H' ? " X \t" : ch == 'G' ? " \xE2\x88\x9A \t" : " P \t";
      else if (ch == 'H') out += " O \t";
      else if (ch == 'G') out += " G \t";
      else out += " _ \t";
    }
  }
  return out;
}

}  // namespace trinity::workflow
