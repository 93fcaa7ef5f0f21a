// YAML in-place edits and config checks for the Config page (config_edit.h).
#include "studio/config_edit.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>

#include "config/config.h"
#include "core/error.h"

namespace trinity::studio {

namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t dot = key.find('.', pos);
    out.push_back(key.substr(pos, dot - pos));
    if (out.back().empty()) throw HttpError{400, strcat("bad key '", key, "'"), "invalid_value", "key"};
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return out;
}

std::string yaml_scalar(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  if (!v.is_string())
    throw HttpError{400, "'value' must be a scalar (string, number, boolean or null)", "invalid_value", "value"};
  const std::string s = v.get<std::string>();
  static const std::regex plain(R"([A-Za-z_/.$~][A-Za-z0-9_./@+${}:,=-]*)");
  static const std::regex special(R"((?:true|false|yes|no|on|off|null|~|y|n)$)", std::regex::icase);
  const bool safe = std::regex_match(s, plain) && !std::regex_match(s, special) && s.find(": ") == std::string::npos &&
                    s.find(" #") == std::string::npos && !s.ends_with(":");
  return safe ? s : v.dump();  // a JSON string is a valid double-quoted YAML scalar
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      if (pos < text.size()) lines.push_back(text.substr(pos));
      break;
    }
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

int indent_of(const std::string& l) {
  int i = 0;
  while (i < static_cast<int>(l.size()) && l[static_cast<size_t>(i)] == ' ') ++i;
  return i;
}

bool blank_or_comment(const std::string& l) {
  const int i = indent_of(l);
  return i >= static_cast<int>(l.size()) || l[static_cast<size_t>(i)] == '#';
}

// End column of a plain / quoted scalar starting at `col` on `line` (exclusive; comments and
// trailing blanks excluded).
size_t scalar_end(const std::string& line, size_t col) {
  if (col < line.size() && (line[col] == '"' || line[col] == '\'')) {
    const char q = line[col];
    for (size_t i = col + 1; i < line.size(); ++i) {
      if (q == '"' && line[i] == '\\') {
        ++i;
      } else if (line[i] == q) {
        if (q == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
          ++i;
          continue;
        }
        return i + 1;
      }
    }
    return line.size();
  }
  size_t end = line.size();
  for (size_t i = col; i + 1 < line.size(); ++i)
    if ((line[i] == ' ' || line[i] == '\t') && line[i + 1] == '#') {
      end = i;
      break;
    }
  while (end > col && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
  return end;
}

}  // namespace

std::string yaml_set(const std::string& text, const std::string& key, const json& value) {
  const std::vector<std::string> path = split_key(key);
  const std::string scalar = yaml_scalar(value);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw HttpError{400, strcat("the YAML text does not parse (line ", e.mark.line + 1, "): ", e.msg), "invalid_yaml",
                    "text"};
  }
  std::vector<std::string> lines = split_lines(text);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw HttpError{400, "the YAML text is not a mapping of keys", "invalid_yaml", "text"};

  YAML::Node node = root;
  int parent_key_col = -2;  // column of the key owning `node` (-2: the document)
  int parent_key_line = -1;
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string& seg = path[i];
    if (!node.IsMap() && !node.IsNull())
      throw HttpError{400, strcat("'", key, "': '", path[i - 1], "' is not a section of keys; edit it in the YAML"),
                      "not_editable", "key"};
    if (node.IsMap() && node.Style() == YAML::EmitterStyle::Flow)
      throw HttpError{400, strcat("'", key, "': its section is written in flow style ({...}); edit it in the YAML"),
                      "not_editable", "key"};
    YAML::Node found;
    YAML::Mark key_mark;
    bool has = false;  // (a default YAML::Node is a defined null node: keep a flag)
    if (node.IsMap())
      for (auto it = node.begin(); it != node.end(); ++it)
        if (it->first.Scalar() == seg) {
          found.reset(it->second);
          key_mark = it->first.Mark();
          has = key_mark.line >= 0 && key_mark.line < static_cast<int>(lines.size());
          if (!has)
            throw HttpError{400, strcat("'", key, "': cannot find it in the text; edit it in the YAML"), "not_editable",
                            "key"};
          break;
        }
    if (!has) {
      // Missing from here on: insert the rest of the path under `node`.
      int col = parent_key_col + 2;
      int insert_after = parent_key_line;  // default: right below the owning key (or at the top)
      if (node.IsMap() && node.size() > 0) {
        col = node.begin()->first.Mark().column;
        // After the last line of the section: the last non-blank line before the next line indented
        // at most as much as the owning key.
        const int start = node.begin()->first.Mark().line;
        int last = start;
        for (int l = start + 1; l < static_cast<int>(lines.size()); ++l) {
          if (blank_or_comment(lines[static_cast<size_t>(l)])) continue;
          if (indent_of(lines[static_cast<size_t>(l)]) < col) break;
          last = l;
        }
        insert_after = last;
      } else if (parent_key_line < 0) {
        col = 0;
        insert_after = static_cast<int>(lines.size()) - 1;
      }
      std::vector<std::string> add;
      for (size_t k = i; k < path.size(); ++k) {
        const std::string pad(static_cast<size_t>(col + 2 * static_cast<int>(k - i)), ' ');
        add.push_back(pad + path[k] + ":" + (k + 1 == path.size() ? " " + scalar : ""));
      }
      if (parent_key_line >= 0 && node.IsNull()) {
        // `section:` followed by nothing (or `section: ~`): drop an explicit null on the key's line.
        std::string& kl = lines[static_cast<size_t>(parent_key_line)];
        const size_t colon = kl.find(':', static_cast<size_t>(std::max(parent_key_col, 0)));
        if (colon != std::string::npos) {
          const size_t vend = scalar_end(kl, colon + 1 < kl.size() ? kl.find_first_not_of(' ', colon + 1) : kl.size());
          const std::string rest = kl.substr(std::min(kl.size(), vend));
          kl = kl.substr(0, colon + 1) + rest;
        }
      }
      lines.insert(lines.begin() + (insert_after + 1), add.begin(), add.end());
      return join_lines(lines);
    }
    if (i + 1 == path.size()) {
      if (found.IsMap() || found.IsSequence())
        throw HttpError{400, strcat("'", key, "' is a section (a list or mapping); edit it in the YAML"),
                        "not_editable", "key"};
      std::string& kl = lines[static_cast<size_t>(key_mark.line)];
      const size_t colon = kl.find(':', static_cast<size_t>(key_mark.column) + seg.size());
      if (colon == std::string::npos)
        throw HttpError{400, strcat("'", key, "': cannot find its value in the text; edit it in the YAML"),
                        "not_editable", "key"};
      if (found.IsScalar() && found.Mark().line != key_mark.line)
        throw HttpError{400, strcat("'", key, "' has a multi-line value; edit it in the YAML"), "not_editable", "key"};
      const size_t vstart = kl.find_first_not_of(" \t", colon + 1);
      if (vstart == std::string::npos || kl[vstart] == '#') {
        kl = kl.substr(0, colon + 1) + " " + scalar + (vstart == std::string::npos ? "" : " " + kl.substr(vstart));
      } else {
        const size_t vend = scalar_end(kl, vstart);
        kl = kl.substr(0, vstart) + scalar + kl.substr(vend);
      }
      return join_lines(lines);
    }
    parent_key_col = key_mark.column;
    parent_key_line = key_mark.line;
    node.reset(found);
  }
  return text;
}

const std::vector<std::string>& form_keys() {
  static const std::vector<std::string> keys = {"mode",
                                                "project",
                                                "name",
                                                "checkpoint_root_dir",
                                                "model.model_path",
                                                "model.max_prompt_tokens",
                                                "model.max_response_tokens",
                                                "algorithm.algorithm_type",
                                                "algorithm.repeat_times",
                                                "algorithm.optimizer.lr",
                                                "buffer.batch_size",
                                                "buffer.total_epochs",
                                                "buffer.total_steps",
                                                "buffer.explorer_input.taskset.path",
                                                "explorer.runner_per_model",
                                                "explorer.eval_interval",
                                                "synchronizer.sync_interval",
                                                "synchronizer.sync_method",
                                                "trainer.save_interval",
                                                "trainer.grad_clip",
                                                "monitor.monitor_type"};
  return keys;
}

namespace {

json scalar_json(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  if (!n.IsScalar()) return nullptr;
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: a string
  if (s == "true" || s == "false") return s == "true";
  char* end = nullptr;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0') return i;
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') return d;
  return s;
}

// The value at dotted `key` of an emitted config; a "taskset" segment falls back to tasksets[0].
YAML::Node lookup(YAML::Node n, const std::vector<std::string>& path) {
  for (const auto& seg : path) {
    if (!n.IsMap()) return YAML::Node();
    YAML::Node next = n[seg];
    if (!next.IsDefined() && seg == "taskset" && n["tasksets"].IsSequence() && n["tasksets"].size() > 0)
      next = n["tasksets"][0];
    if (!next.IsDefined()) return YAML::Node();
    n.reset(next);
  }
  return n;
}

}  // namespace

json check_config_text(const std::string& text, const std::string& label, const std::string& base_dir,
                       const std::vector<std::string>& field_keys) {
  json out = {{"ok", true}, {"errors", json::array()}, {"warnings", json::array()}, {"fields", json::object()}};
  try {
    const config::LoadResult r = config::load_config_text(text, label, base_dir);
    for (const auto& w : r.warnings) out["warnings"].push_back(w);
    out["job_dir"] = r.config.job_dir();
    const YAML::Node emitted = YAML::Load(config::to_yaml(r.config));
    for (const auto& k : field_keys) out["fields"][k] = scalar_json(lookup(emitted, split_key(k)));
  } catch (const Error& e) {
    out["ok"] = false;
    const std::string msg = e.what();
    json err = {{"message", msg}, {"key", nullptr}, {"line", nullptr}};
    std::smatch m;
    static const std::regex where(R"(^\[[a-z]+\] .*?:(\d+): (.*)$)");
    std::string rest = msg;
    if (std::regex_search(msg, m, where)) {
      err["line"] = std::stoi(m[1]);
      rest = m[2];
    }
    // The key: "unknown key 'a.b'", or a message that starts with the key ("a.b: ..." / "a.b must ...").
    static const std::regex unknown(R"(unknown key '([^']+)')");
    static const std::regex lead(R"(^([A-Za-z_][A-Za-z0-9_.\[\]]*): )");
    static const std::regex dotted(R"(^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_\[\]]*)+) )");
    if (std::regex_search(rest, m, unknown) || std::regex_search(rest, m, lead) || std::regex_search(rest, m, dotted))
      err["key"] = m[1].str();
    out["errors"].push_back(err);
  }
  return out;
}

}  // namespace trinity::studio
