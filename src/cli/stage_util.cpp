// Stage helpers for the CLI (see stage_util.h).
#include "cli/stage_util.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"

namespace trinity::cli {

config::Config stage_with_chained_model(const config::LoadResult& r, size_t index, std::string* note) {
  TRINITY_ASSERT(index < r.stages.size(), "stage index ", index, " out of range (", r.stages.size(), " stages)");
  const config::Config& c = r.stages[index];
  if (index == 0) return c;
  const std::string meta = file::join(r.config.job_dir(), "stage_meta.json");
  if (!file::exists(meta)) return c;
  const std::string prev = r.stages[index - 1].name;
  const auto j = nlohmann::json::parse(file::read_all(meta), nullptr, false);
  if (!j.is_object() || !j.contains("done") || !j["done"].is_object() || !j["done"].contains(prev) ||
      !j["done"][prev].is_string() || j["done"][prev].get<std::string>().empty())
    return c;
  const std::string ckpt = j["done"][prev].get<std::string>();
  if (note) *note = strcat("model of stage '", c.name, "': stage '", prev, "''s final checkpoint ", ckpt);
  return config::with_model_path(c, ckpt);
}

}  // namespace trinity::cli
