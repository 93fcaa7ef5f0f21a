// Helpers shared by the commands that act on one stage of a config (bench, debug workflow).
#pragma once

#include <string>

#include "config/config.h"

namespace trinity::cli {

// Stage `index` of `r` with model.model_path replaced by the previous stage's final checkpoint when
// the root job dir's stage_meta.json records one (as `trinity run` chains stages); otherwise the
// stage as loaded. `note` (may be null) receives a one-line explanation when the path was replaced.
config::Config stage_with_chained_model(const config::LoadResult& r, size_t index, std::string* note);

}  // namespace trinity::cli
