// The labelling API over a preference queue (annotate_api.h).
#include "studio/annotate_api.h"

#include "core/error.h"
#include "studio/http_util.h"

namespace trinity::studio {

namespace {

int64_t id_field(const json& j) {
  if (!j.contains("id") || !j["id"].is_number_integer())
    throw HttpError{400, "'id' (an integer pair id) is required", "invalid_request", "id"};
  return j["id"].get<int64_t>();
}

void reply_outcome(server::http::Response& res, const buffer::QueueOutcome& o, int64_t id, const char* state) {
  switch (o.status) {
    case buffer::QueueOutcome::kOk:
      reply(res, 200, {{"ok", true}, {"id", id}, {"state", state}});
      return;
    case buffer::QueueOutcome::kInvalid:
      reply_error(res, 400, o.message, "invalid_value");
      return;
    case buffer::QueueOutcome::kNotFound:
      reply_error(res, 404, o.message, "not_found");
      return;
    case buffer::QueueOutcome::kConflict:
      reply_error(res, 409, o.message, "conflict");
      return;
  }
}

json stats_json(const buffer::PreferenceStats& s) {
  json by_ann = json::object();
  for (const auto& [who, m] : s.by_annotator) by_ann[who] = m;
  return {{"states", s.by_state}, {"identical", s.identical}, {"annotators", by_ann}, {"total", s.total}};
}

}  // namespace

bool is_annotate_path(const std::string& path) {
  return path == "/api/annotate/next" || path == "/api/annotate/stats" || path == "/api/annotate/label" ||
         path == "/api/annotate/skip" || path == "/api/annotate/undo";
}

void handle_annotate(buffer::PreferenceQueue& q, const server::http::Request& req, server::http::Response& res) {
  const std::string& path = req.path;
  const bool get = req.method == "GET", post = req.method == "POST";
  try {
    if (path == "/api/annotate/next" && get) {
      const std::string who = query_param(req.query, "annotator");
      if (who.empty())
        throw HttpError{400, "the 'annotator' query parameter is required (?annotator=NAME)", "invalid_request",
                        "annotator"};
      const auto r = q.next(who);
      if (!r.pair) {
        reply(res, 200, {{"done", true}, {"remaining", r.remaining}});
        return;
      }
      const auto& p = *r.pair;
      json prompt = json::parse(p.prompt, nullptr, false);
      reply(res, 200,
            {{"id", p.id},
             {"lease", p.lease_token},
             {"prompt", prompt},
             {"a", p.response_a},
             {"b", p.response_b},
             {"remaining", r.remaining},
             {"lease_expires_at", buffer::iso8601_utc(p.lease_expires_at)}});
    } else if (path == "/api/annotate/label" && post) {
      const json j = parse_body(req.body);
      const int64_t id = id_field(j);
      const std::string lease = str_field(j, "lease", true), choice = str_field(j, "choice", true);
      reply_outcome(res, q.label(id, lease, choice, str_field(j, "annotator", false)), id, "labelled");
    } else if (path == "/api/annotate/skip" && post) {
      const json j = parse_body(req.body);
      const int64_t id = id_field(j);
      reply_outcome(res, q.skip(id, str_field(j, "lease", true)), id, "skipped");
    } else if (path == "/api/annotate/undo" && post) {
      const json j = parse_body(req.body);
      const int64_t id = id_field(j);
      reply_outcome(res, q.undo(id, str_field(j, "annotator", true)), id, "pending");
    } else if (path == "/api/annotate/stats" && get) {
      reply(res, 200, stats_json(q.stats()));
    } else if (is_annotate_path(path)) {
      reply_error(res, 405, strcat("method ", req.method, " is not allowed on ", path), "method_not_allowed");
    } else {
      reply_error(res, 404, strcat("no route ", req.method, " ", path, " (see docs/data.md)"), "not_found");
    }
  } catch (const HttpError& h) {
    reply_error(res, h.status, h.message, h.code, h.param);
  } catch (const Error& e) {  // the database failed (IoError): the client may retry
    reply_error(res, 503, e.what(), "unavailable");
  }
}

}  // namespace trinity::studio
