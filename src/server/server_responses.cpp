// POST /v1/responses (see responses.h): parse into a chat request, build the prompt with the chat
// template, submit to the engine like /v1/chat/completions (same stop ids, context fitting and
// constrained decoding), then answer a response object or stream the Responses events (no [DONE]).
// Output items are remembered for item_reference unless the request says store: false.
#include "server/server_impl.h"

namespace trinity::server {

namespace {

// Errors of the shared chat steps, renamed to the Responses fields.
ApiError renamed(const ApiError& e) {
  return ApiError(e.status, e.what(), responses_param(e.param), e.code, e.type);
}

}  // namespace

void Server::Impl::handle_responses(const http::Request& req, http::Response& res) {
  const double t0 = wall_seconds();
  const Scope scope = scope_of(req);
  auto r = std::make_shared<ResponsesRequest>(
      parse_responses_request(req.body, [this](const std::string& id) { return response_items.get(id); }));
  ChatRequest& c = r->chat;
  check_model(c.model);
  auto cp = std::make_shared<ChatPrompt>();
  std::vector<int32_t>& prompt = cp->ids;
  std::vector<RequestHandle> hs;
  auto queue = c.stream ? std::make_shared<StreamQueue>() : nullptr;
  try {
    *cp = chat_prompt(c, scope);
    fit_to_context(c, static_cast<int64_t>(prompt.size()), engine->max_model_len(), "input");
    add_stop_ids(c.sampling);
    attach_grammar(c);
    hs = submit_all({prompt}, c.sampling, queue);
  } catch (const ApiError& e) {
    throw renamed(e);
  }
  const std::string rid = random_id("resp_");
  auto w = std::make_shared<ResponsesWriter>(ResponseMeta{rid, unix_now(), opts.model_name}, r, describer(),
                                             static_cast<int64_t>(prompt.size()));
  res.prompt_tokens = static_cast<int64_t>(prompt.size());
  auto remember = [this, r, w] {
    if (!r->store) return;
    for (const auto& [id, item] : w->items()) response_items.put(id, item);
  };
  if (!c.stream) {
    std::vector<engine::GenerateResult> results;
    try {
      results = wait_all(hs, scope.key);
    } catch (const ApiError& e) {
      throw renamed(e);
    }
    record(scope, rid, "responses", {prompt}, results, t0, cp.get(), c.parse_tool_calls);
    const engine::Completion& out = results[0].completions[0];
    res.completion_tokens = static_cast<int64_t>(out.token_ids.size());
    send_json(res, 200, w->response(out));
    remember();
    return;
  }
  auto start = [w](std::vector<std::string>& out) { w->start(out); };
  auto on_event = [w](int64_t, const engine::StreamEvent& e, std::vector<std::string>& out) { w->on_event(e, out); };
  auto on_end = [](int64_t, const std::string&, std::vector<std::string>&) {};
  auto finish = [this, w, remember, scope, cp, t0, rid, parse = c.parse_tool_calls](
                    const std::vector<engine::GenerateResult>& results, std::vector<std::string>& out) {
    record(scope, rid, "responses", {cp->ids}, results, t0, cp.get(), parse);
    if (w->failed() || results.empty() || results[0].completions.empty()) return;
    w->finish(results[0].completions[0], out);
    remember();
  };
  auto on_error = [w](const ApiError& e, std::vector<std::string>& out) { w->fail(renamed(e), out); };
  stream(res, std::move(hs), queue, start, on_event, on_end, finish, 1, on_error, /*done_marker=*/false, scope.key);
}

}  // namespace trinity::server
