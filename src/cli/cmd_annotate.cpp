// `trinity data annotate`: a human pairwise-preference queue (docs/data.md, "Human preference labelling").
//   1. generate: two samples per prompt (seeded per prompt, so a rerun draws the same pair) with the local
//      engine, for the first --limit distinct prompts of a taskset (--config) or a data file (--model +
//      --data); prompts already in the queue (same prompt hash) are not generated again; a pair whose two
//      responses are identical is drawn once more with another seed, then stored skipped (identical).
//   2. serve: a JSON API over the queue (buffer/preference_queue.h) on the project's HTTP server until
//      SIGINT / SIGTERM; then, with --out, the labelled pairs are exported as a DPO data set.
//   `--queue Q --export FILE` only exports (no model).
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include "buffer/dataset.h"
#include "buffer/preference_queue.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/stage_util.h"
#include "config/config.h"
#include "core/error.h"
#include "core/json_limits.h"
#include "core/log.h"
#include "core/signals.h"
#include "explorer/engine_client.h"
#include "launcher/launcher.h"
#include "model/transformer.h"
#include "monitor/progress.h"
#include "server/http_server.h"
#include "server/protocol.h"
#include "studio/annotate_api.h"
#include "studio/http_util.h"

namespace trinity::cli {

namespace {

using json = nlohmann::json;

const char kAnnotateUsage[] =
    "usage: trinity data annotate (--config X.yaml [--set k=v] | --model DIR --data FILE [--prompt-key prompt]\n"
    "                              [--split train]) --queue Q.db [--host 127.0.0.1] [--port 8090] [--limit N]\n"
    "                              [--temperature 1.0] [--max-tokens 256] [--seed 42] [--out pairs.jsonl]\n"
    "       trinity data annotate --queue Q.db --export out.jsonl\n"
    "Generates two responses per prompt into the queue (a sqlite file), then serves a JSON labelling API until\n"
    "Ctrl-C: GET /api/annotate/next?annotator=NAME, POST /api/annotate/label {id, lease, choice, annotator},\n"
    "POST /api/annotate/skip {id, lease}, POST /api/annotate/undo {id, annotator}, GET /api/annotate/stats.\n"
    "--out (at stop) and --export write the pairs labelled a or b as Trinity DPO rows. See docs/data.md.\n";

// A prompt to generate for: a JSON list of messages and where it came from.
struct PromptRow {
  std::string messages;
  std::string where;
};

// Text that survives a JSON round trip (invalid UTF-8 from a sampled byte sequence becomes U+FFFD).
std::string valid_utf8(const std::string& s) {
  const std::string d = json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  return json::parse(d).get<std::string>();
}

// A conversation to answer: messages without a final assistant turn; nullopt when unusable.
std::optional<json> as_prompt(json msgs) {
  if (!msgs.is_array()) return std::nullopt;
  for (const auto& m : msgs)
    if (!m.is_object() || !m.contains("role")) return std::nullopt;
  if (!msgs.empty() && msgs.back().value("role", "") == "assistant") msgs.erase(msgs.size() - 1);
  if (msgs.empty()) return std::nullopt;
  return msgs;
}

json parse_json_field(const json& v, const std::string& where) {
  if (!v.is_string()) return v;
  const auto& s = v.get_ref<const std::string&>();
  check_json_depth(s, where, kMaxJsonDepth, "annotate");
  return json::parse(s, nullptr, false);
}

// --model/--data rows: a `messages` column (list or JSON text) is the chat form; otherwise the
// --prompt-key column is one user message (or, when it holds a list, the messages).
std::vector<PromptRow> prompts_from_file(const std::string& path, const std::string& split,
                                         const std::string& prompt_key, int64_t* skipped) {
  buffer::LoadReport rep;
  const auto rows =
      buffer::Taskset::load_rows(path, split, "", buffer::FormatConfig{}, buffer::DatasetKind::kTaskAnyRow, false, rep);
  *skipped = rep.rows_skipped;
  std::vector<PromptRow> out;
  for (const auto& r : rows) {
    const json row = json::parse(r.json);
    std::optional<json> msgs;
    if (row.contains("messages") && !row["messages"].is_null()) {
      msgs = as_prompt(parse_json_field(row["messages"], r.where));
    } else if (row.contains(prompt_key) && row[prompt_key].is_string()) {
      msgs = json::array({{{"role", "user"}, {"content", row[prompt_key]}}});
    } else if (row.contains(prompt_key)) {
      msgs = as_prompt(parse_json_field(row[prompt_key], r.where));
    }
    if (!msgs) {
      if (*skipped < 5)
        log::warn("annotate: ", r.where, ": no usable 'messages' or '", prompt_key, "' column; row skipped");
      ++*skipped;
      continue;
    }
    out.push_back({msgs->dump(), r.where});
  }
  return out;
}

// --config: the first train taskset; a row's conversation (format.messages_key) or [system?, user].
std::vector<PromptRow> prompts_from_taskset(buffer::TasksetConfig ts, int64_t* skipped) {
  ts.prompt_required = true;
  const auto taskset = buffer::Taskset::load(ts);
  *skipped = taskset.report().rows_skipped;
  std::vector<PromptRow> out;
  for (size_t i = 0; i < taskset.size(); ++i) {
    const buffer::Task& t = taskset.at(i);
    const std::string where = strcat(ts.path, ": row ", t.index.row);
    std::optional<json> msgs;
    if (!t.messages.empty()) {
      msgs = as_prompt(parse_json_field(json(t.messages), where));
    } else {
      json m = json::array();
      if (!t.system_prompt.empty()) m.push_back({{"role", "system"}, {"content", t.system_prompt}});
      m.push_back({{"role", "user"}, {"content", t.task_desc}});
      msgs = m;
    }
    if (!msgs) {
      ++*skipped;
      continue;
    }
    out.push_back({msgs->dump(), where});
  }
  return out;
}

// The weight version of a checkpoint directory: N for a path through global_step_N, else 0.
int64_t checkpoint_version(const std::string& dir) {
  static const std::regex re("global_step_([0-9]+)");
  std::smatch m;
  int64_t v = 0;
  for (auto it = dir.cbegin(); std::regex_search(it, dir.cend(), m, re); it = m.suffix().first)
    if (m[1].length() <= 18) v = std::stoll(m[1].str());  // longer: not a step number
  return v;
}

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct GenSettings {
  double temperature = 1.0;
  int64_t max_tokens = 256;
  uint64_t seed = 42;
  std::string model_path;
  int64_t model_version = 0;
};

struct GenReport {
  int64_t generated = 0, queued_before = 0, identical = 0, failed = 0;
};

// Fills the queue with one pair per prompt not yet in it. Stops early (between prompts) on `stop`.
GenReport generate(buffer::PreferenceQueue& q, const std::vector<PromptRow>& prompts,
                   std::shared_ptr<const explorer::RolloutModel> rm, const GenSettings& gs,
                   const std::atomic<bool>* stop) {
  GenReport rep;
  std::vector<const PromptRow*> todo;
  for (const auto& p : prompts)
    if (q.contains(buffer::PreferenceQueue::prompt_hash(p.messages)))
      ++rep.queued_before;
    else
      todo.push_back(&p);
  if (todo.empty()) return rep;
  monitor::ProgressOptions po;
  po.unit = "prompt";
  monitor::ProgressBar bar("generate", static_cast<int64_t>(todo.size()), po);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> generated{0}, identical{0}, failed{0};
  std::atomic<bool> abort{false};
  std::mutex mu;
  std::exception_ptr fatal;  // a queue (database) failure or an unexpected error: rethrown after the join
  std::string first_failure;
  // Two samples of one prompt; a pair drawn identical is drawn once more with the next seed.
  auto draw = [&](explorer::EngineClient& client, const PromptRow& p) {
    const std::string hash = buffer::PreferenceQueue::prompt_hash(p.messages);
    workflow::GenOptions o;
    o.n = 2;  // sample k draws from stream (seed, k): two seeds per prompt
    o.temperature = gs.temperature;
    o.max_tokens = gs.max_tokens;
    const uint64_t base = mix64(gs.seed ^ std::stoull(hash.substr(0, 16), nullptr, 16));
    buffer::NewPair np;
    for (int attempt = 0; attempt < 2; ++attempt) {
      o.seed = mix64(base + static_cast<uint64_t>(attempt));
      const auto s = client.chat(p.messages, o);
      if (s.size() != 2 || s[0].finish_reason == "prompt_truncated")
        throw ValueError("annotate", strcat(p.where, ": the prompt is longer than model.max_prompt_tokens"));
      np.response_a = valid_utf8(s[0].text), np.response_b = valid_utf8(s[1].text);
      np.identical = np.response_a == np.response_b;
      if (!np.identical) break;
    }
    np.prompt = p.messages;
    np.model_path = gs.model_path;
    np.model_version = gs.model_version;
    return np;
  };
  auto work = [&] {
    try {
      explorer::EngineClient client(rm, nullptr, std::nullopt);
      while (!stop->load() && !abort.load()) {
        const size_t i = next.fetch_add(1);
        if (i >= todo.size()) break;
        std::optional<buffer::NewPair> np;
        try {
          np = draw(client, *todo[i]);
        } catch (const Error& e) {  // this prompt only (too long, template error): counted, reported
          std::lock_guard<std::mutex> l(mu);
          if (first_failure.empty()) first_failure = e.what();
          if (failed.fetch_add(1) < 5) log::warn("annotate: ", todo[i]->where, ": generation failed: ", e.what());
        }
        if (np && q.enqueue(*np)) {
          ++generated;
          if (np->identical) ++identical;
        }
        bar.advance();
      }
    } catch (...) {
      std::lock_guard<std::mutex> l(mu);
      if (!fatal) fatal = std::current_exception();
      abort.store(true);
    }
  };
  const size_t n_threads = std::min<size_t>(4, todo.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n_threads; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  bar.finish();
  if (fatal) std::rethrow_exception(fatal);
  if (generated == 0 && failed > 0)
    throw ValueError("annotate",
                     strcat("generation failed for all ", failed.load(), " prompts; the first: ", first_failure));
  rep.generated = generated, rep.identical = identical, rep.failed = failed;
  return rep;
}

int64_t positive(const Args& a, const char* flag, int64_t def) {
  const int64_t v = a.i64(flag, def);
  if (v < 1) throw ConfigError("annotate", strcat("--", flag, " must be >= 1, got ", v));
  return v;
}

void export_pairs(buffer::PreferenceQueue& q, const std::string& out) {
  const auto r = q.export_dpo(out);
  std::printf("trinity data annotate: wrote %s: %lld DPO pairs (%lld ties and %lld both_bad not exported)\n",
              out.c_str(), static_cast<long long>(r.written), static_cast<long long>(r.ties),
              static_cast<long long>(r.both_bad));
  std::fflush(stdout);
}

}  // namespace

int cmd_data_annotate(const Argv& argv) {
  for (const auto& x : argv)
    if (x == "--help" || x == "-h") {
      std::fputs(kAnnotateUsage, stdout);
      return 0;
    }
  const Args a("data annotate", argv,
               {"config", "set", "model", "data", "prompt-key", "split", "queue", "host", "port", "limit",
                "temperature", "max-tokens", "seed", "out", "export"});
  if (!a.has("queue")) throw ConfigError("annotate", "--queue Q.db (the queue file) is required");
  const std::string queue_path = a.str("queue");
  if (a.has("export")) {
    for (const char* f : {"config", "model", "data", "out"})
      if (a.has(f))
        throw ConfigError("annotate", strcat("--export only writes the labelled pairs of --queue; drop --", f));
    buffer::PreferenceQueue q(queue_path);
    export_pairs(q, a.str("export"));
    return 0;
  }
  if (a.has("config") == a.has("model"))
    throw ConfigError("annotate", "give either --config X.yaml, or --model DIR with --data FILE (and not both)");
  if (a.has("model") != a.has("data"))
    throw ConfigError("annotate", a.has("model") ? "--model needs --data FILE (the prompts)"
                                                 : "--data goes with --model DIR (or use --config)");
  const int64_t port = a.i64("port", 8090);
  if (port < 0 || port > 65535) throw ConfigError("annotate", strcat("--port must be in [0, 65535], got ", port));
  const int64_t limit = a.has("limit") ? positive(a, "limit", 1) : 0;

  // Model, prompts and sampling defaults: from the config, or from the flags.
  config::Config c;
  std::vector<PromptRow> prompts;
  int64_t skipped = 0;
  GenSettings gs;
  if (a.has("config")) {
    const config::LoadResult r = config::load_config(a.str("config"), a.all("set"));
    for (const auto& w : r.warnings) std::fprintf(stderr, "trinity: warning: %s\n", w.c_str());
    c = r.config;
    for (size_t i = r.stages.size(); i-- > 0;)  // the last stage with a taskset, its model chained
      if (!r.stages[i].buffer.explorer_input.tasksets.empty()) {
        c = stage_with_chained_model(r, i, nullptr);
        break;
      }
    if (c.buffer.explorer_input.tasksets.empty())
      throw ConfigError("annotate", strcat("--config ", a.str("config"), " has no buffer.explorer_input.taskset"));
    c = launcher::resolve_hub_models(c);
    prompts = prompts_from_taskset(c.buffer.explorer_input.tasksets[0], &skipped);
    gs.temperature = c.model.temperature;
    if (c.model.max_response_tokens > 0) gs.max_tokens = c.model.max_response_tokens;
    gs.seed = static_cast<uint64_t>(c.explorer.rollout_model.seed);
  } else {
    c.model.model_path = a.str("model");
    c = launcher::resolve_hub_models(c);
    prompts = prompts_from_file(a.str("data"), a.str("split", "train"), a.str("prompt-key", "prompt"), &skipped);
  }
  gs.temperature = a.f64("temperature", gs.temperature);
  if (!(gs.temperature >= 0)) throw ConfigError("annotate", strcat("--temperature must be >= 0, got ", gs.temperature));
  gs.max_tokens = positive(a, "max-tokens", gs.max_tokens);
  gs.seed = static_cast<uint64_t>(a.i64("seed", static_cast<int64_t>(gs.seed)));
  gs.model_path = c.model.model_path;
  gs.model_version = checkpoint_version(c.model.model_path);

  // The first --limit distinct prompts.
  std::vector<PromptRow> chosen;
  std::set<std::string> seen;
  for (auto& p : prompts) {
    if (limit > 0 && static_cast<int64_t>(chosen.size()) >= limit) break;
    if (seen.insert(buffer::PreferenceQueue::prompt_hash(p.messages)).second) chosen.push_back(std::move(p));
  }
  if (chosen.empty())
    throw ConfigError("annotate", strcat("no usable prompts in ", a.has("config") ? "the taskset" : a.str("data"), " (",
                                         skipped, " rows skipped)"));

  StopSignals signals("");
  std::signal(SIGPIPE, SIG_IGN);
  buffer::PreferenceQueue q(queue_path);
  std::fprintf(stderr, "trinity: loading %s\n", c.model.model_path.c_str());
  auto weights = std::make_shared<const model::Transformer>(model::Transformer::load(c.model.model_path));
  const GenReport g = [&] {
    auto rm = launcher::make_rollout_model(c, std::move(weights), 0);
    return generate(q, chosen, rm, gs, signals.flag());
  }();  // the engine is gone before serving
  std::printf(
      "trinity data annotate: %lld prompts: %lld pairs generated, %lld already queued, %lld identical "
      "(skipped), %lld failed\n",
      static_cast<long long>(chosen.size()), static_cast<long long>(g.generated),
      static_cast<long long>(g.queued_before), static_cast<long long>(g.identical), static_cast<long long>(g.failed));
  std::fflush(stdout);
  if (signals.stopped()) {
    if (a.has("out")) export_pairs(q, a.str("out"));
    return 130;
  }

  server::http::Options ho;
  ho.host = a.str("host", "127.0.0.1");
  ho.port = static_cast<int>(port);
  ho.workers = 4;
  ho.fast_workers = 1;
  ho.max_body_bytes = size_t{1} << 20;
  ho.handler = [&q](const server::http::Request& req, server::http::Response& res) {
    studio::handle_annotate(q, req, res);
  };
  ho.error_body = [](int status, const std::string& msg) {
    return studio::error_json(status, msg,
                              status == 413   ? "request_too_large"
                              : status == 408 ? "request_timeout"
                                              : "");
  };
  server::http::Server srv(std::move(ho));
  const int bound = srv.bind();
  std::thread sig_thread([&] {
    if (signals.wait() != 0) srv.stop();
  });
  const auto st = q.stats();
  std::printf("trinity data annotate: listening on http://%s:%d (%lld pending, %lld labelled)\n",
              a.str("host", "127.0.0.1").c_str(), bound, static_cast<long long>(st.by_state.at("pending")),
              static_cast<long long>(st.by_state.at("labelled")));
  std::fflush(stdout);
  srv.run();
  signals.wake();
  sig_thread.join();
  if (a.has("out")) export_pairs(q, a.str("out"));
  std::printf("trinity data annotate: stopped\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace trinity::cli
