// The task pipeline: operators over task rows, scores, priority and order (see task_pipeline.h).
#include "pipeline/task_pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/timer.h"
#include "pipeline/data_ops.h"
#include "pipeline/jsonl_command.h"
#include "pipeline/operator_util.h"

namespace trinity::pipeline {

namespace {

std::vector<json> parse_rows(const std::vector<std::string>& rows) {
  std::vector<json> out;
  out.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    json j = json::parse(rows[i], nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw ValueError("pipeline", strcat("task row ", i, " is not a JSON object: ", rows[i].substr(0, 200)));
    out.push_back(std::move(j));
  }
  return out;
}

std::string cell_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::vector<std::string> dump_rows(const std::vector<json>& js) {
  std::vector<std::string> out;
  out.reserve(js.size());
  for (const auto& j : js) out.push_back(j.dump(-1, ' ', false, json::error_handler_t::replace));
  return out;
}

// The built-in operators work on parsed rows, so the pipeline parses the taskset once (operators the
// caller provides get JSON texts).
class ParsedTaskOp : public TaskOperator {
 public:
  virtual std::map<std::string, double> process_parsed(std::vector<json>& rows) = 0;
  std::map<std::string, double> process(std::vector<std::string>& rows) override {
    std::vector<json> js = parse_rows(rows);
    auto m = process_parsed(js);
    rows = dump_rows(js);
    return m;
  }
};

// A data op over the text of `text_keys` joined by "\n".
class DataTaskOp : public ParsedTaskOp {
 public:
  DataTaskOp(const OperatorConfig& cfg, std::vector<std::string> default_keys) {
    json a = cfg.args.empty() ? json::object() : json::parse(cfg.args, nullptr, false);
    if (a.is_discarded() || !a.is_object())
      throw ConfigError("pipeline", strcat("task operator '", cfg.name, "': args must be a mapping, got ", cfg.args));
    keys_ = std::move(default_keys);
    if (a.contains("text_keys")) {
      const json& k = a.at("text_keys");
      keys_.clear();
      for (const auto& x : k.is_array() ? k : json::array({k})) {
        if (!x.is_string())
          throw ConfigError("pipeline",
                            strcat("task operator '", cfg.name, "': text_keys must list column names, got ", k.dump()));
        keys_.push_back(x.get<std::string>());
      }
      a.erase("text_keys");
    }
    op_ = make_data_op(cfg.name, a.dump());
  }
  std::map<std::string, double> process_parsed(std::vector<json>& js) override {
    std::vector<std::string> texts(js.size());
    for (size_t i = 0; i < js.size(); ++i)
      for (const auto& k : keys_)
        if (js[i].contains(k) && !js[i].at(k).is_null())
          texts[i] += (texts[i].empty() ? "" : "\n") + cell_text(js[i].at(k));
    std::vector<DataRow> in(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) in[i].text = texts[i];
    DataOpResult r = op_->apply(in);
    std::vector<json> kept;
    for (size_t i = 0; i < js.size(); ++i)
      if (r.keep.at(i)) kept.push_back(std::move(js[i]));
    js = std::move(kept);
    return r.metrics;
  }

 private:
  std::vector<std::string> keys_;
  std::unique_ptr<DataOp> op_;
};

// Rows through an external program; the program's rows replace the input rows.
class CommandTaskOp : public ParsedTaskOp {
 public:
  explicit CommandTaskOp(const OperatorConfig& cfg) {
    json rest;
    cmd_ = JsonlCommand::from_args(cfg, {"id_key"}, &rest);
    if (rest.contains("id_key")) {
      if (!rest.at("id_key").is_string() || rest.at("id_key").get<std::string>().empty())
        throw ConfigError("pipeline", strcat("task operator 'command': id_key must be a column name, got ",
                                             rest.at("id_key").dump()));
      id_key_ = rest.at("id_key").get<std::string>();
    }
    cmd_.id_key = id_key_;
  }
  std::map<std::string, double> process_parsed(std::vector<json>& js) override {
    for (size_t i = 0; i < js.size(); ++i) {
      if (js[i].contains(id_key_))
        throw ValueError("pipeline", strcat("task operator 'command': row ", i, " already has a column '", id_key_,
                                            "'; set args.id_key to a name the rows do not use"));
      js[i][id_key_] = std::to_string(i);
    }
    std::string error;
    auto m = run_jsonl_command(cmd_, js, &error);
    if (!m) {
      for (auto& j : js) j.erase(id_key_);
      return {{"filtered_count", 0}, {"error_count", 1}};
    }
    std::vector<json> out;
    out.reserve(m->size());
    for (auto& [i, r] : *m) {
      r.erase(id_key_);
      out.push_back(std::move(r));
    }
    const size_t before = js.size();
    js = std::move(out);
    return {{"filtered_count", static_cast<double>(before - js.size())}, {"error_count", 0}};
  }

 private:
  JsonlCommand cmd_;
  std::string id_key_ = "id";
};

struct StatDef {
  const char* key;
  bool higher_is_better;
  bool fixed_range;  // [0, 1]; else min-max over the rows
};
const StatDef kQuality[] = {{"alnum_ratio", true, true},          {"char_rep_ratio", false, true},
                            {"flagged_words_ratio", false, true}, {"special_char_ratio", false, true},
                            {"stopwords_ratio", true, true},      {"word_rep_ratio", false, true},
                            {"llm_quality_score", true, true}};
const StatDef kDifficulty[] = {
    {"perplexity", true, false}, {"lang_score", false, true}, {"llm_difficulty_score", true, true}};

bool is_pass_rate(const std::string& k) {
  const std::string s = "pass_rate";
  return k.size() >= s.size() && k.compare(k.size() - s.size(), s.size(), s) == 0;
}

// The row's stats: "__dj__stats__" entries over top-level numbers of the same names.
std::map<std::string, double> row_stats(const json& row) {
  std::map<std::string, double> s;
  auto take = [&](const json& obj) {
    for (const auto& [k, v] : obj.items()) {
      if (!v.is_number()) continue;
      bool known = is_pass_rate(k) || k == "consumed_cnt";
      for (const auto& d : kQuality) known = known || k == d.key;
      for (const auto& d : kDifficulty) known = known || k == d.key;
      if (known) s[k] = v.get<double>();
    }
  };
  take(row);
  if (row.contains("__dj__stats__") && row.at("__dj__stats__").is_object()) take(row.at("__dj__stats__"));
  return s;
}

TaskPipelineReport::Histogram histogram(const std::vector<double>& v) {
  TaskPipelineReport::Histogram h;
  h.counts.assign(10, 0);
  if (v.empty()) return h;
  h.min = *std::min_element(v.begin(), v.end());
  h.max = *std::max_element(v.begin(), v.end());
  for (double x : v) {
    const double span = h.max - h.min;
    const auto b = span > 0 ? std::min<size_t>(9, static_cast<size_t>((x - h.min) / span * 10)) : size_t{0};
    h.counts[b]++;
  }
  return h;
}

}  // namespace

std::vector<std::string> TaskPipeline::builtin_names() {
  std::vector<std::string> n = data_op_names();
  n.push_back("command");
  std::sort(n.begin(), n.end());
  return n;
}

TaskPipeline::TaskPipeline(const TaskPipelineSpec& spec, const ModelOperatorFactory& model_ops) : spec_(spec) {
  const std::vector<std::string> keys =
      spec.target_fields.empty() ? std::vector<std::string>{spec.prompt_key} : spec.target_fields;
  for (const auto& o : spec.operators) {
    std::unique_ptr<TaskOperator> op;
    if (model_ops) op = model_ops(o);
    if (!op && o.name == "command") op = std::make_unique<CommandTaskOp>(o);
    if (!op && is_data_op(o.name)) op = std::make_unique<DataTaskOp>(o, keys);
    if (!op)
      throw ConfigError("pipeline",
                        strcat("unknown task operator '", o.name, "'", did_you_mean_suffix(o.name, builtin_names()),
                               "; built in: ", join_names(builtin_names()),
                               model_ops ? "" : " (rollout_pass_rate and llm_score need a model: trinity data process)",
                               "; Data-Juicer operators run through 'command' (docs/data.md)"));
    ops_.emplace_back(o.name, std::move(op));
  }
  const json w = json::parse(spec.priority_weights.empty() ? "{}" : spec.priority_weights, nullptr, false);
  if (w.is_discarded() || !w.is_object())
    throw ConfigError("pipeline",
                      strcat("task_pipeline.priority_weights must be a mapping, got ", spec.priority_weights));
}

std::vector<std::string> TaskPipeline::run(std::vector<std::string> rows, TaskPipelineReport& rep,
                                           const std::function<void(size_t, const std::string&)>& on_op) {
  rep = {};
  rep.rows_in = static_cast<int64_t>(rows.size());
  std::vector<json> js = parse_rows(rows);
  rows.clear();
  rows.shrink_to_fit();
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (on_op) on_op(i, ops_[i].first);
    TaskPipelineReport::Op r;
    r.name = ops_[i].first;
    r.rows_in = static_cast<int64_t>(js.size());
    Timer t;
    if (auto* parsed = dynamic_cast<ParsedTaskOp*>(ops_[i].second.get())) {
      r.metrics = parsed->process_parsed(js);
    } else {  // a caller's operator: JSON texts in and out
      std::vector<std::string> texts = dump_rows(js);
      r.metrics = ops_[i].second->process(texts);
      js = parse_rows(texts);
    }
    r.seconds = t.seconds();
    r.rows_out = static_cast<int64_t>(js.size());
    rep.ops.push_back(std::move(r));
  }
  // Scores and priority.
  json w = json::parse(spec_.priority_weights.empty() ? "{}" : spec_.priority_weights);
  if (w.empty()) w = {{"difficulty", -0.7}, {"diversity", 0.8}, {"usage_frequency", -0.5}, {"quality", 1.0}};
  std::vector<std::map<std::string, double>> stats(js.size());
  bool any = false;
  for (size_t i = 0; i < js.size(); ++i) {
    stats[i] = row_stats(js[i]);
    any = any || !stats[i].empty() || js[i].contains("priority");
  }
  std::map<std::string, std::pair<double, double>> range;  // min-max of the unbounded stats
  for (const auto& s : stats)
    for (const auto& [k, v] : s) {
      auto [it, fresh] = range.emplace(k, std::make_pair(v, v));
      if (!fresh) it->second = {std::min(it->second.first, v), std::max(it->second.second, v)};
    }
  std::vector<double> prio(js.size(), 0.0);
  std::map<std::string, std::vector<double>> hist_values;
  if (any) {
    auto score = [&](const std::map<std::string, double>& s, const StatDef* defs, size_t n,
                     bool pass_rates) -> std::optional<double> {
      double total = 0;
      int hits = 0;
      auto add = [&](double v, bool higher, double lo, double hi) {
        double x = hi > lo ? (v - lo) / (hi - lo) : 0.0;
        total += higher ? x : 1.0 - x;
        ++hits;
      };
      for (size_t d = 0; d < n; ++d)
        if (auto it = s.find(defs[d].key); it != s.end()) {
          const auto [lo, hi] = defs[d].fixed_range ? std::make_pair(0.0, 1.0) : range.at(defs[d].key);
          add(it->second, defs[d].higher_is_better, lo, hi);
        }
      if (pass_rates)
        for (const auto& [k, v] : s)
          if (is_pass_rate(k)) add(v, false, 0.0, 1.0);
      if (!hits) return std::nullopt;
      return total / hits;
    };
    for (size_t i = 0; i < js.size(); ++i) {
      const auto q = score(stats[i], kQuality, std::size(kQuality), false);
      const auto d = score(stats[i], kDifficulty, std::size(kDifficulty), true);
      if (q) js[i]["quality_score"] = *q, hist_values["quality_score"].push_back(*q);
      if (d) js[i]["difficulty_score"] = *d, hist_values["difficulty_score"].push_back(*d);
      for (const auto& [k, v] : stats[i])
        if (is_pass_rate(k)) hist_values[k].push_back(v);
      if (js[i].contains("priority") && js[i].at("priority").is_number()) {
        prio[i] = js[i].at("priority").get<double>();
      } else {
        double p = 0;
        if (w.contains("usage_frequency"))
          p += w.at("usage_frequency").get<double>() *
               (stats[i].count("consumed_cnt") ? stats[i].at("consumed_cnt") : 0.0);
        if (w.contains("quality")) p += w.at("quality").get<double>() * q.value_or(0.5);
        if (w.contains("difficulty")) p += w.at("difficulty").get<double>() * d.value_or(0.5);
        prio[i] = p;
        js[i]["priority"] = p;
      }
      hist_values["priority"].push_back(prio[i]);
    }
  }
  std::vector<size_t> order(js.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (any) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return prio[a] > prio[b]; });
  rep.sorted = any;
  if (spec_.top_k > 0 && order.size() > static_cast<size_t>(spec_.top_k))
    order.resize(static_cast<size_t>(spec_.top_k));
  std::vector<std::string> out;
  out.reserve(order.size());
  for (size_t i : order) out.push_back(js[i].dump(-1, ' ', false, json::error_handler_t::replace));
  for (const auto& [k, v] : hist_values) rep.histograms[k] = histogram(v);
  rep.rows_out = static_cast<int64_t>(out.size());
  return out;
}

std::string TaskPipelineReport::to_json() const {
  json j = {{"rows_in", rows_in}, {"rows_out", rows_out}, {"sorted_by_priority", sorted}, {"operators", json::array()}};
  for (const auto& o : ops)
    j["operators"].push_back({{"name", o.name},
                              {"rows_in", o.rows_in},
                              {"rows_out", o.rows_out},
                              {"seconds", o.seconds},
                              {"metrics", o.metrics}});
  j["histograms"] = json::object();
  for (const auto& [k, h] : histograms) j["histograms"][k] = {{"min", h.min}, {"max", h.max}, {"counts", h.counts}};
  return j.dump(1);
}

std::string TaskPipelineReport::to_text() const {
  std::string s = strcat("task pipeline: ", rows_in, " rows in, ", rows_out, " out\n");
  char buf[256];
  for (size_t i = 0; i < ops.size(); ++i) {
    std::snprintf(buf, sizeof buf, "  %zu %-32s %8lld -> %-8lld dropped %-8lld %.2f s\n", i, ops[i].name.c_str(),
                  static_cast<long long>(ops[i].rows_in), static_cast<long long>(ops[i].rows_out),
                  static_cast<long long>(ops[i].rows_in - ops[i].rows_out), ops[i].seconds);
    s += buf;
  }
  for (const auto& [k, h] : histograms) {
    std::snprintf(buf, sizeof buf, "  %-20s [%.3g, %.3g]", k.c_str(), h.min, h.max);
    s += buf;
    for (int64_t c : h.counts) s += strcat(" ", c);
    s += "\n";
  }
  return s;
}

}  // namespace trinity::pipeline
