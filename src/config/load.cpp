// Public entry points of the config layer (config.h): file/text -> tree -> --set overrides ->
// interpolation -> parse -> derive. Stages (trinity-rft.md §2.12) and with_model_path re-run parse +
// derive on a copy of the resolved tree, so every derived value follows the replaced sections.
#include <algorithm>
#include <filesystem>

#include "config/section.h"
#include "core/error.h"
#include "core/file.h"

namespace trinity::config {

namespace {

Config build(const std::shared_ptr<const detail::Source>& src, std::vector<std::string>* warnings) {
  detail::Ctx c;
  c.file = src->file;
  c.dir = src->dir;
  detail::Parsed p = detail::parse_tree(c, src->root);
  detail::derive(c, src->root, p);
  p.cfg.config_dir = src->dir;
  p.cfg.source = src;
  if (warnings)
    for (auto& w : c.warnings)
      if (std::find(warnings->begin(), warnings->end(), w) == warnings->end()) warnings->push_back(w);
  return std::move(p.cfg);
}

detail::Tree scalar_tree(const std::string& s) {
  detail::Tree t;
  t.kind = detail::Tree::Kind::kScalar;
  t.scalar = s;
  t.quoted = true;
  return t;
}

}  // namespace

std::string Config::job_dir() const {
  std::string d = file::join(checkpoint_root_dir, project);
  if (!group.empty()) d = file::join(d, group);
  return file::join(d, name);
}

LoadResult load_config_text(const std::string& yaml_text, const std::string& label, const std::string& base_dir,
                            const std::vector<std::string>& overrides) {
  auto src = std::make_shared<detail::Source>();
  src->file = label;
  src->dir = base_dir.empty() ? std::filesystem::current_path().string()
                              : std::filesystem::absolute(base_dir).lexically_normal().string();
  src->root = detail::tree_from_yaml(yaml_text, label);
  if (src->root.is_null()) src->root.kind = detail::Tree::Kind::kMap;
  if (!src->root.is_map())
    throw ConfigError("config", strcat(label, ": the config must be a mapping of sections, got ", src->root.short_repr()));
  for (const auto& o : overrides) detail::tree_set(src->root, o);
  detail::tree_interpolate(src->root, label);
  LoadResult r;
  r.config = build(src, &r.warnings);
  if (!r.config.stages.empty()) r.stages = expand_stages(r.config, &r.warnings);
  return r;
}

LoadResult load_config(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = file::read_all(path);
  const auto dir = std::filesystem::absolute(path).parent_path().string();
  LoadResult r = load_config_text(text, path, dir, overrides);
  r.config.config_path = std::filesystem::absolute(path).lexically_normal().string();
  for (auto& s : r.stages) s.config_path = r.config.config_path;
  return r;
}

std::vector<Config> expand_stages(const Config& cfg, std::vector<std::string>* warnings) {
  TRINITY_ASSERT(cfg.source, "expand_stages on a Config that was not loaded by load_config");
  const detail::Tree* stages = cfg.source->root.find("stages");
  std::vector<Config> out;
  if (!stages || !stages->is_seq()) return out;
  // Each stage holds a copy of the config without `stages:`; bounded like one expanded config.
  const size_t rest = detail::tree_node_count(cfg.source->root) - detail::tree_node_count(*stages);
  if (stages->seq.size() * rest > detail::kMaxConfigNodes)
    throw ConfigError("config", strcat(detail::tree_location(*stages, cfg.source->file),
                                       ": stages: ", stages->seq.size(), " stages of a config of ", rest,
                                       " values expand to more than ", detail::kMaxConfigNodes, " values"));
  for (size_t i = 0; i < stages->seq.size(); ++i) {
    const detail::Tree& st = stages->seq[i];
    auto src = std::make_shared<detail::Source>();
    src->file = cfg.source->file;
    src->dir = cfg.source->dir;
    detail::Tree& root = src->root;
    root.kind = detail::Tree::Kind::kMap;
    for (const auto& [k, v] : cfg.source->root.map)
      if (k != "stages") root.map.emplace_back(k, v);
    for (const char* sec : {"algorithm", "buffer", "explorer", "trainer", "data_processor"}) {
      const detail::Tree* v = st.find(sec);
      if (v && !v->is_null()) root.get_or_add(sec) = *v;  // replaced wholesale, no deep merge
    }
    if (const detail::Tree* m = st.find("mode"); m && !m->is_null()) root.get_or_add("mode") = *m;
    const std::string name = cfg.name + "/" + cfg.stages.at(i).stage_name;
    detail::tree_put(root, "name", scalar_tree(name));
    detail::tree_put(root, "trainer.save_hf_checkpoint", scalar_tree("last"));
    try {
      out.push_back(build(src, warnings));
    } catch (const Error& e) {
      std::string msg = e.what();
      msg = msg.substr(msg.find("] ") + 2);
      throw ConfigError("config", strcat("stage '", cfg.stages[i].stage_name, "': ", msg));
    }
    out.back().config_path = cfg.config_path;
  }
  return out;
}

Config with_model_path(const Config& cfg, const std::string& model_path, std::vector<std::string>* warnings) {
  TRINITY_ASSERT(cfg.source, "with_model_path on a Config that was not loaded by load_config");
  auto src = std::make_shared<detail::Source>(*cfg.source);
  src->root.erase("stages");
  const std::string abs = std::filesystem::absolute(model_path).lexically_normal().string();
  detail::tree_put(src->root, "model.model_path", scalar_tree(abs));
  Config out = build(src, warnings);
  out.config_path = cfg.config_path;
  return out;
}

}  // namespace trinity::config
