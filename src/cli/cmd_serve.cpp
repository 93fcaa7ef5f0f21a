// trinity serve: loads a model directory (config.json, model.safetensors, tokenizer.json,
// tokenizer_config.json) into one generation Engine and serves the OpenAI API over HTTP
// (src/server). Binds 127.0.0.1 unless --host says otherwise. SIGINT / SIGTERM stop the server
// cleanly (self-pipe to a watcher thread): in-flight requests are cancelled, the listener closes,
// the engine shuts down, exit code 0.
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/signals.h"
#include "engine/engine.h"
#include "hub/model.h"
#include "model/transformer.h"
#include "server/server.h"
#include "tokenizer/chat.h"
#include "tokenizer/model_files.h"
#include "tokenizer/tokenizer.h"

namespace trinity::cli {

namespace {

const char kServeUsage[] =
    "usage: trinity serve --model DIR [--host 127.0.0.1] [--port 8000] [--api-key KEY] [--kv-cache-mb 1024]\n"
    "                     [--max-model-len N] [--served-model-name NAME] [--max-request-mb 8]\n"
    "                     [--http-threads 256] [--allow-origin ORIGIN] [--header-timeout-s 10]\n"
    "                     [--body-timeout-s 60] [--idle-timeout-s 30] [--no-access-log]\n"
    "                     [--no-prefix-cache] [--adapter PEFT_DIR]\n"
    "Endpoints: GET /health, GET /metrics (Prometheus), GET /v1/models, POST /v1/completions,\n"
    "POST /v1/chat/completions. --allow-origin adds CORS headers (\"*\" or one origin); the timeouts are\n"
    "total times for a request's headers, its body, and an idle keep-alive connection (408 / close).\n"
    "See docs/serving.md.\n";

}  // namespace

int cmd_serve(const Argv& argv) {
  for (const auto& x : argv)
    if (x == "--help" || x == "-h") {
      std::fputs(kServeUsage, stdout);
      return 0;
    }
  Args a("serve", argv,
         {"model", "host", "port", "api-key", "kv-cache-mb", "max-model-len", "served-model-name", "max-request-mb",
          "http-threads", "allow-origin", "header-timeout-s", "body-timeout-s", "idle-timeout-s", "no-access-log!",
          "no-prefix-cache!", "adapter"});
  const std::string model_arg = a.str("model");
  const std::string dir = hub::resolve_model_dir(model_arg, "--model");  // a Hub id -> its snapshot folder
  server::ServerOptions so;
  so.host = a.str("host", "127.0.0.1");
  const int64_t port = a.i64("port", 8000);
  if (port < 0 || port > 65535) throw ConfigError("cli", strcat("serve: --port must be in [0, 65535], got ", port));
  so.port = static_cast<int>(port);
  so.api_key = a.str("api-key", "");
  if (so.api_key.empty())
    if (const char* k = std::getenv("TRINITY_API_KEY")) so.api_key = k;
  so.model_name = a.str("served-model-name", model_arg);
  const int64_t body_mb = a.i64("max-request-mb", 8);
  if (body_mb < 1) throw ConfigError("cli", strcat("serve: --max-request-mb must be >= 1, got ", body_mb));
  so.max_body_bytes = static_cast<size_t>(body_mb) << 20;
  so.threads = static_cast<int>(a.i64("http-threads", 256));
  if (so.threads < 4) throw ConfigError("cli", strcat("serve: --http-threads must be >= 4, got ", so.threads));
  so.allow_origin = a.str("allow-origin", "");
  auto seconds = [&a](const char* flag, int64_t def) {
    const int64_t v = a.i64(flag, def);
    if (v < 1) throw ConfigError("cli", strcat("serve: --", flag, " must be >= 1 (seconds), got ", v));
    return v * 1000;
  };
  so.header_timeout_ms = seconds("header-timeout-s", 10);
  so.body_timeout_ms = seconds("body-timeout-s", 60);
  so.idle_timeout_ms = seconds("idle-timeout-s", 30);
  so.access_log = !a.flag("no-access-log");
  engine::EngineOptions eo;
  const int64_t kv_mb = a.i64("kv-cache-mb", 1024);
  if (kv_mb < 1 || kv_mb > (int64_t{1} << 40))  // << 20 below must not overflow
    throw ConfigError("cli", strcat("serve: --kv-cache-mb must be in [1, 2^40], got ", kv_mb));
  eo.kv_cache_bytes = kv_mb << 20;
  eo.max_model_len = a.i64("max-model-len", 0);
  eo.prefix_cache = !a.flag("no-prefix-cache");
  if (eo.max_model_len < 0)
    throw ConfigError("cli", strcat("serve: --max-model-len must be >= 1 (or 0 for the model's), got ", eo.max_model_len));
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    if (!file::exists(file::join(dir, f)))
      throw IoError("serve", strcat("--model ", dir, " has no ", f, " (a served model needs its tokenizer and chat template)"));

  // SIGINT/SIGTERM: the handler wakes a watcher thread that stops the server. (A handler rather
  // than sigwait: threads that exist before this point, e.g. the BLAS pool, would not have the
  // signals blocked.) A second signal while shutting down exits at once.
  StopSignals signals("");
  std::signal(SIGPIPE, SIG_IGN);

  // A bf16 checkpoint's layer weights stay bf16: the engine computes from its packed copy.
  auto model = std::make_shared<model::Transformer>(
      model::Transformer::load(dir, model::HeadKind::kLm, model::lossless_storage(dir)));
  if (a.has("adapter")) {  // a PEFT LoRA adapter, merged into the served weights once
    model::load_adapter(*model, a.str("adapter"));
    model = std::make_shared<model::Transformer>(model::merged_copy(*model));
    log::info("serve: LoRA adapter ", a.str("adapter"), " merged into ", dir);
  }
  auto tokenizer = std::make_shared<tok::Tokenizer>(tok::load_model_tokenizer(dir, model->config().vocab_size));
  const tok::TokenizerConfig tc = tok::TokenizerConfig::load(dir);
  for (const auto& s : tc.additional_special_tokens)
    if (tokenizer->token_to_id(s)) tokenizer->mark_special(s);
  auto chat = std::make_shared<tok::ChatFormatter>(*tokenizer, tc);
  const std::vector<int32_t> stop_ids = tok::model_stop_ids(dir, *tokenizer, tc);
  if (model->config().max_position_embeddings > 0 && eo.max_model_len > model->config().max_position_embeddings)
    throw ConfigError("cli", strcat("serve: --max-model-len ", eo.max_model_len, " exceeds the model's max_position_embeddings ",
                                    model->config().max_position_embeddings));
  auto eng = std::make_shared<engine::Engine>(model, 0, tokenizer, eo);
  server::Server srv(eng, tokenizer, chat, stop_ids, so);
  const int bound = srv.bind();

  std::thread sig_thread([&] {
    const int sig = signals.wait();
    if (sig == 0) return;  // woken by the normal exit path
    log::info("serve: ", sig == SIGINT ? "SIGINT" : "SIGTERM", " received, shutting down");
    srv.stop();
  });
  std::printf("trinity serve: listening on http://%s:%d (model '%s', max_model_len %lld)\n", so.host.c_str(), bound,
              so.model_name.c_str(), static_cast<long long>(eng->max_model_len()));
  std::fflush(stdout);
  srv.run();
  signals.wake();
  sig_thread.join();
  srv.stop();
  eng.reset();
  std::printf("trinity serve: stopped\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace trinity::cli
