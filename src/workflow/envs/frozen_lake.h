// FrozenLake grid world with gymnasium's semantics (toy_text/frozen_lake.py): cells S (start),
// F (frozen), H (hole), G (goal); actions Left=0, Down=1, Right=2, Up=3; moving into a wall stays;
// is_slippery: the intended direction and each perpendicular one with probability 1/3; reward 1 on
// reaching G; the episode terminates on H or G (terminal states absorb). Random maps follow
// Trinity's generate_random_map (random S and G, p = P(frozen), retried until G is reachable from S
// within max_path_len moves), drawn from our deterministic Rng, not numpy's stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"

namespace trinity::workflow {

class FrozenLake {
 public:
  enum Action : int { kLeft = 0, kDown = 1, kRight = 2, kUp = 3 };
  struct Step {
    int state = 0;
    double reward = 0.0;
    bool terminated = false;
  };

  // desc: rows of equal length over "SFHG" with exactly one S and at least one G (ValueError else).
  FrozenLake(std::vector<std::string> desc, bool is_slippery);

  // size >= 2, 0 < p <= 1; max_path_len < 0 = no limit. ValueError when no valid map is found.
  static std::vector<std::string> generate_random_map(int size, double p, uint64_t seed, int max_path_len = -1);
  // Moves on the shortest S->G path avoiding holes, or -1 when G is unreachable.
  static int shortest_path(const std::vector<std::string>& desc);

  int reset();  // back to S
  // `rng` is used only when slippery.
  Step step(int action, Rng& rng);

  int state() const { return state_; }
  int nrow() const { return nrow_; }
  int ncol() const { return ncol_; }
  char cell(int state) const { return desc_[static_cast<size_t>(state / ncol_)][static_cast<size_t>(state % ncol_)]; }
  bool at_goal() const { return cell(state_) == 'G'; }
  bool in_hole() const { return cell(state_) == 'H'; }
  bool terminal() const { return at_goal() || in_hole(); }
  const std::vector<std::string>& desc() const { return desc_; }
  // Next state of a deterministic move from `state`.
  int move(int state, int action) const;

  // Trinity's text observation: one row per line, each cell " P \t" / " _ \t" / " O \t" / " G \t",
  // " X \t" for the player in a hole, " √ \t" for the player on the goal; S renders as frozen.
  std::string render() const;

 private:
  std::vector<std::string> desc_;
  int nrow_ = 0, ncol_ = 0;
  int start_ = 0;
  int state_ = 0;
  bool slippery_ = false;
};

}  // namespace trinity::workflow
