// The `buffer:` section: its own scalar keys here; tasksets and storages go through the buffer layer's
// parsers (buffer/config_json.h) via a Tree -> JSON bridge, so the key sets live in one place. Their
// KeyErrors (core/names.h) are re-thrown with file:line, looked up from the key's dotted path. Trinity keys those
// parsers only warn about are stripped here first, so the warnings land in the load result instead of the log.
#include <nlohmann/json.hpp>

#include <regex>

#include "buffer/config_json.h"
#include "config/section.h"
#include "core/error.h"
#include "core/names.h"

namespace trinity::config::detail {

namespace {

using nlohmann::json;

json to_json(const Tree& t) {
  switch (t.kind) {
    case Tree::Kind::kNull: return nullptr;
    case Tree::Kind::kSeq: {
      json a = json::array();
      for (const auto& v : t.seq) a.push_back(to_json(v));
      return a;
    }
    case Tree::Kind::kMap: {
      json o = json::object();
      for (const auto& [k, v] : t.map) o[k] = to_json(v);
      return o;
    }
    case Tree::Kind::kScalar: break;
  }
  const std::string& s = t.scalar;
  if (t.quoted) return s;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(s, int_re)) {
    try {
      return std::stoll(s);
    } catch (const std::exception&) {
      return s;
    }
  }
  if (std::regex_match(s, float_re)) return std::stod(s);
  return s;
}

// Runs a buffer-layer parser on `node` (at `path`, relative lookups through `section`/`prefix`). Its
// KeyErrors carry the dotted path of the key, which is looked up in the tree for file:line.
template <typename Fn>
void bridged(Ctx& c, const Tree& section, const std::string& prefix, const Tree& node, Fn&& fn) {
  auto lookup = [&](const std::string& path) -> const Tree* {
    if (path.rfind(prefix + ".", 0) != 0) return nullptr;
    return tree_at(section, path.substr(prefix.size() + 1));
  };
  try {
    fn(to_json(node));
  } catch (const UnknownKeyError& e) {
    const Tree* at = lookup(e.path());
    throw ConfigError("config", strcat(at ? c.loc(*at) : c.file, ": unknown key '", e.path(), "'",
                                       did_you_mean_suffix(e.key(), e.valid()),
                                       "; valid keys here: ", join_names(sorted_unique(e.valid()))));
  } catch (const KeyError& e) {
    const Tree* at = lookup(e.path());
    throw ConfigError("config", strcat(at ? c.loc(*at) : c.loc(node), ": ", e.path(), ": ", e.detail()));
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    throw ConfigError("config", strcat(c.loc(node), ": ", msg.substr(msg.find("] ") + 2)));
  }
}

Tree strip(Ctx& c, const Tree& t, const std::string& path, std::initializer_list<const char*> ignored, bool taskset) {
  Tree out = t;
  if (!out.is_map()) return out;
  for (const char* k : ignored)
    if (const Tree* v = out.find(k)) {
      if (!v->is_null())
        c.warn(strcat(c.loc(*v), ": ", path, ".", k, " has no effect in trinity (accepted for Trinity-RFT compatibility)"));
      out.erase(k);
    }
  if (taskset)
    if (Tree* sel = out.find("task_selector")) {
      c.warn(strcat(c.loc(*sel), ": ", path, ".task_selector is deprecated; use data_selector"));
      if (!out.find("data_selector")) {
        Tree moved = *sel;
        out.erase("task_selector");
        out.map.emplace_back("data_selector", std::move(moved));
      } else {
        out.erase("task_selector");
      }
    }
  return out;
}

buffer::TasksetConfig read_taskset(Ctx& c, const Tree& buf, const Tree& node, const std::string& rel) {
  buffer::TasksetConfig ts;
  const std::string path = "buffer." + rel;
  if (!node.is_map()) c.fail(node, strcat(path, ": expected a mapping, got ", node.short_repr()));
  Tree cleaned = strip(c, node, path, {"ray_namespace"}, true);
  bridged(c, buf, "buffer", cleaned, [&](const json& j) { buffer::taskset_config_from_json(j, ts, path); });
  return ts;
}

void read_storage(Ctx& c, const Tree& buf, const Tree& node, const std::string& rel, buffer::StorageConfig& out) {
  const std::string path = "buffer." + rel;
  if (!node.is_map()) c.fail(node, strcat(path, ": expected a mapping, got ", node.short_repr()));
  Tree cleaned = strip(c, node, path,
                       {"ray_namespace", "tokenizer_path", "total_epochs", "total_steps", "use_priority_queue", "index",
                        "wrap_in_ray"},
                       false);
  bridged(c, buf, "buffer", cleaned, [&](const json& j) { buffer::storage_config_from_json(j, out, path); });
}

}  // namespace

std::string tree_to_json_text(const Tree& t) { return to_json(t).dump(); }

void parse_buffer(Ctx& c, const Tree* t, Parsed& p) {
  Section s(c, t, "buffer");
  BufferConfig& b = p.cfg.buffer;
  s.i64("batch_size", b.batch_size);
  s.opt("train_batch_size", p.train_batch_size);
  s.i64("total_epochs", b.total_epochs);
  s.opt("total_steps", b.total_steps);
  if (const Tree* ei = s.get("explorer_input")) {
    Section es(c, ei, "buffer.explorer_input");
    const Tree* one = es.get("taskset");
    const Tree* many = es.get("tasksets");
    if (one && many)
      c.fail(*many, "buffer.explorer_input: set exactly one of 'taskset' and 'tasksets', not both");
    if (one) b.explorer_input.tasksets.push_back(read_taskset(c, *t, *one, "explorer_input.taskset"));
    if (many) {
      if (!many->is_seq()) c.fail(*many, strcat("buffer.explorer_input.tasksets: expected a list, got ", many->short_repr()));
      for (size_t i = 0; i < many->seq.size(); ++i)
        b.explorer_input.tasksets.push_back(read_taskset(c, *t, many->seq[i], strcat("explorer_input.tasksets[", i, "]")));
    }
    if (const Tree* ev = es.get("eval_tasksets")) {
      if (!ev->is_seq()) c.fail(*ev, strcat("buffer.explorer_input.eval_tasksets: expected a list, got ", ev->short_repr()));
      for (size_t i = 0; i < ev->seq.size(); ++i)
        b.explorer_input.eval_tasksets.push_back(
            read_taskset(c, *t, ev->seq[i], strcat("explorer_input.eval_tasksets[", i, "]")));
    }
    es.str("default_workflow_type", b.explorer_input.default_workflow_type);
    es.str("default_eval_workflow_type", b.explorer_input.default_eval_workflow_type);
    es.str("default_reward_fn_type", b.explorer_input.default_reward_fn_type);
    if (const Tree* wa = es.get("workflow_args")) {
      if (!wa->is_map())
        c.fail(*wa, strcat("buffer.explorer_input.workflow_args: expected a mapping, got ", wa->short_repr()));
      b.explorer_input.workflow_args = to_json(*wa).dump();  // canonical (sorted keys), as a taskset's
    }
    es.finish();
  }
  if (const Tree* ti = s.get("trainer_input")) {
    Section ts(c, ti, "buffer.trainer_input");
    if (const Tree* eb = ts.get("experience_buffer")) {
      p.experience_buffer_set = true;
      p.experience_schema_set = eb->is_map() && eb->find("schema_type") && !eb->find("schema_type")->is_null();
      read_storage(c, *t, *eb, "trainer_input.experience_buffer", b.trainer_input.experience_buffer);
    }
    if (const Tree* aux = ts.get("auxiliary_buffers")) {
      Section as(c, aux, "buffer.trainer_input.auxiliary_buffers");
      for (const auto& [name, v] : aux->map) {
        buffer::StorageConfig sc;
        sc.name = name;
        read_storage(c, *t, v, "trainer_input.auxiliary_buffers." + name, sc);
        if (v.is_map() && v.find("schema_type") && !v.find("schema_type")->is_null()) p.aux_schema_set.insert(name);
        b.trainer_input.auxiliary_buffers[name] = sc;
      }
    }
    ts.finish();
  }
  s.warn_ignored({"tokenizer_path", "pad_token_id", "cache_dir"}, "derived automatically");
  s.finish();
}

}  // namespace trinity::config::detail
