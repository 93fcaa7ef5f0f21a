// The JSON labelling API over a preference queue (buffer/preference_queue.h), shared by
// `trinity data annotate` and the studio's Label page (docs/data.md, docs/studio.md):
//   GET /api/annotate/next?annotator=NAME, POST /api/annotate/label {id, lease, choice, annotator},
//   POST /api/annotate/skip {id, lease}, POST /api/annotate/undo {id, annotator}, GET /api/annotate/stats.
#pragma once

#include "buffer/preference_queue.h"
#include "server/http_server.h"

namespace trinity::studio {

// True when `path` is one of the API's routes (whatever the method).
bool is_annotate_path(const std::string& path);
// Answers one request of the API (405 for a wrong method, 404 for another path); errors are
// OpenAI-shaped JSON (400 bad field, 404 no pair, 409 conflict, 503 the database failed).
void handle_annotate(buffer::PreferenceQueue& q, const server::http::Request& req, server::http::Response& res);

}  // namespace trinity::studio
