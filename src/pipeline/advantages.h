// Explorer-side group advantages: the algorithm's advantage function run on one explore step's
// experiences before they are written to the buffer (Trinity-RFT computes GRPO-style advantages in
// the explorer's experience pipeline). The trainer reuses adv_input for trainer-side advantages.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "algorithm/algorithm.h"
#include "buffer/experience.h"
#include "core/rng.h"
#include "pipeline/experience_batch.h"

namespace trinity::pipeline {

// Explorer-side advantages (advantage_location() == kExplorer, e.g. GRPO) on one explore step's
// experiences: fills advantages/returns, drops the rows the algorithm drops and appends the copies
// it asks for (AdvOutput::rows). Returns the algorithm's metrics (experience_pipeline/*, critic/*).
std::map<std::string, double> compute_advantages(algo::Algorithm& alg, std::vector<buffer::Experience>& exps, Rng& rng);

// AdvInput over a batch (no ref/values/spans beyond what the batch has; caller may add them).
algo::AdvInput adv_input(const ExperienceBatch& eb);

}  // namespace trinity::pipeline
