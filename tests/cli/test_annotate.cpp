// `trinity data annotate` end to end (real binary, tiny random model): generate 3 pairs, label them over
// the HTTP API (exclusive leases, 409 / 400 errors), stop with SIGINT and check the exported DPO rows;
// restart and check nothing is regenerated or lost; `--export` alone writes the same file; bad flags
// give one "[annotate]" line and exit 1.
#include <gtest/gtest.h>

#include <regex>

#include "env/http_client.h"
#include "launcher/e2e_util.h"

using namespace trinity::test;

namespace {

// Waits for "listening on http://127.0.0.1:PORT" in the log; returns the base URL ("" on timeout / exit).
std::string wait_listening(const Proc& p, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  static const std::regex re("listening on (http://127\\.0\\.0\\.1:[0-9]+)");
  while (std::chrono::steady_clock::now() < end) {
    std::smatch m;
    const std::string log = slurp(p.log);
    if (std::regex_search(log, m, re)) return m[1].str();
    int st = 0;
    if (waitpid(p.pid, &st, WNOHANG) == p.pid) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "";
}

struct Http {
  int status = 0;
  json body;
};

Http call(const std::string& method, const std::string& url, const json& body = nullptr) {
  const auto r = trinity::env::http_request(method, url, body.is_null() ? "" : body.dump(), 10.0);
  return {r.status, r.body.empty() ? json() : json::parse(r.body)};
}

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(json::parse(l));
  return out;
}

}  // namespace

TEST(CliAnnotate, GenerateLabelExportRestart) {
  const std::string root = (fs::temp_directory_path() / ("trinity-annotate-test-" + std::to_string(getpid()))).string();
  fs::remove_all(root);
  fs::create_directories(root);
  const RunOut m = trinity::test::trinity(
      {"init-model", "--arch", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "2", "--intermediate", "64",
       "--max-pos", "128", "--tokenizer", "bytes", "--seed", "1", "--out", root + "/model"},
      root + "/init.log");
  ASSERT_EQ(m.rc, 0) << m.out;
  write_text(
      root + "/data.jsonl",
      "{\"prompt\": \"1+1=\"}\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hi\"}]}\n"
      "{\"prompt\": \"2+3=\"}\n"
      "{\"prompt\": \"7+8=\"}\n");
  const std::string q = root + "/q.db", out = root + "/pairs.jsonl";
  const std::vector<std::string> args = {trinity_bin(),
                                         "data",
                                         "annotate",
                                         "--model",
                                         root + "/model",
                                         "--data",
                                         root + "/data.jsonl",
                                         "--queue",
                                         q,
                                         "--port",
                                         "0",
                                         "--limit",
                                         "3",
                                         "--max-tokens",
                                         "8",
                                         "--seed",
                                         "5",
                                         "--out",
                                         out};

  Proc p = spawn(args, root + "/serve1.log");
  const std::string base = wait_listening(p, 120);
  ASSERT_FALSE(base.empty()) << slurp(p.log);
  EXPECT_NE(slurp(p.log).find("3 pairs generated, 0 already queued"), std::string::npos) << slurp(p.log);
  const std::string api = base + "/api/annotate";

  Http st = call("GET", api + "/stats");
  ASSERT_EQ(st.status, 200) << st.body;
  EXPECT_EQ(st.body["total"], 3);
  const int64_t servable = st.body["states"]["pending"].get<int64_t>();  // identical pairs are stored skipped
  EXPECT_EQ(servable + st.body["identical"].get<int64_t>(), 3);

  // Exclusive leases: alice and bob get different pairs.
  Http a = call("GET", api + "/next?annotator=alice");
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_TRUE(a.body.contains("lease")) << a.body;
  EXPECT_TRUE(a.body["prompt"].is_array());
  EXPECT_TRUE(a.body["a"].is_string() && a.body["b"].is_string());
  if (servable > 1) {
    Http b = call("GET", api + "/next?annotator=bob");
    ASSERT_EQ(b.status, 200);
    EXPECT_NE(b.body["id"], a.body["id"]);
    Http skip = call("POST", api + "/skip", {{"id", b.body["id"]}, {"lease", b.body["lease"]}});
    EXPECT_EQ(skip.status, 200) << skip.body;
  }
  // Errors: a bad choice names the value (400); a wrong lease names the pair (409); no annotator (400).
  Http bad = call("POST", api + "/label", {{"id", a.body["id"]}, {"lease", a.body["lease"]}, {"choice", "c"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body["error"]["message"].get<std::string>().find("'c'"), std::string::npos) << bad.body;
  Http wrong = call("POST", api + "/label", {{"id", a.body["id"]}, {"lease", "nope"}, {"choice", "a"}});
  EXPECT_EQ(wrong.status, 409);
  EXPECT_EQ(wrong.body["error"]["code"], "conflict");
  EXPECT_NE(
      wrong.body["error"]["message"].get<std::string>().find("pair " + std::to_string(a.body["id"].get<int64_t>())),
      std::string::npos)
      << wrong.body;
  EXPECT_EQ(call("GET", api + "/next").status, 400);
  EXPECT_EQ(call("GET", base + "/nothing").status, 404);

  // Label everything alice is served: a, then b, then tie.
  const std::vector<std::string> choices = {"a", "b", "tie"};
  int64_t labelled = 0, exported = 0;
  for (Http cur = a; cur.body.contains("lease"); cur = call("GET", api + "/next?annotator=alice")) {
    const std::string c = choices[static_cast<size_t>(labelled) % choices.size()];
    Http r = call("POST", api + "/label",
                  {{"id", cur.body["id"]}, {"lease", cur.body["lease"]}, {"choice", c}, {"annotator", "alice"}});
    ASSERT_EQ(r.status, 200) << r.body;
    Http again = call("POST", api + "/label", {{"id", cur.body["id"]}, {"lease", cur.body["lease"]}, {"choice", c}});
    EXPECT_EQ(again.status, 409);  // labelled twice by accident: refused
    ++labelled;
    exported += c != "tie";
  }
  EXPECT_GE(labelled, 1);
  Http done = call("GET", api + "/next?annotator=alice");
  EXPECT_EQ(done.status, 200);
  EXPECT_EQ(done.body["done"], true);
  EXPECT_EQ(done.body["remaining"], 0);
  // Undo by someone else is refused; by alice it returns the pair to pending, and she labels it again.
  const int64_t first_id = a.body["id"].get<int64_t>();
  EXPECT_EQ(call("POST", api + "/undo", {{"id", first_id}, {"annotator", "bob"}}).status, 409);
  EXPECT_EQ(call("POST", api + "/undo", {{"id", first_id}, {"annotator", "alice"}}).status, 200);
  Http redo = call("GET", api + "/next?annotator=alice");
  ASSERT_EQ(redo.body["id"], first_id);
  EXPECT_EQ(call("POST", api + "/label", {{"id", first_id}, {"lease", redo.body["lease"]}, {"choice", "a"}}).status,
            200);
  st = call("GET", api + "/stats");
  EXPECT_EQ(st.body["annotators"]["alice"]["a"].get<int64_t>() + st.body["annotators"]["alice"].value("b", int64_t{0}),
            exported);

  kill(p.pid, SIGINT);
  ASSERT_EQ(wait_exit(p, 60), 0) << slurp(p.log);
  const auto rows = read_jsonl(out);
  ASSERT_EQ(static_cast<int64_t>(rows.size()), exported) << slurp(p.log);
  for (const auto& r : rows) {
    EXPECT_TRUE(r["message"].is_array() && !r["message"].empty());
    EXPECT_EQ(r["message"].back()["role"], "user");
    EXPECT_EQ(r["chosen"].size(), 1u);
    EXPECT_EQ(r["chosen"][0]["role"], "assistant");
    EXPECT_EQ(r["rejected"][0]["role"], "assistant");
    EXPECT_EQ(r["lineage"]["annotator"], "alice");
    EXPECT_EQ(r["lineage"]["model_path"], root + "/model");
    EXPECT_EQ(r["lineage"]["model_version"], 0);
    EXPECT_TRUE(r["lineage"]["labelled_at"].is_string());
  }

  // Restart: nothing regenerated, every label still there, the export identical.
  std::vector<std::string> args2 = args;
  args2.back() = root + "/pairs2.jsonl";
  Proc p2 = spawn(args2, root + "/serve2.log");
  const std::string base2 = wait_listening(p2, 120);
  ASSERT_FALSE(base2.empty()) << slurp(p2.log);
  EXPECT_NE(slurp(p2.log).find("0 pairs generated, 3 already queued"), std::string::npos) << slurp(p2.log);
  Http st2 = call("GET", base2 + "/api/annotate/stats");
  EXPECT_EQ(st2.body["total"], 3);
  EXPECT_EQ(st2.body["states"]["labelled"], labelled);
  EXPECT_EQ(call("GET", base2 + "/api/annotate/next?annotator=carol").body["done"], true);
  kill(p2.pid, SIGTERM);
  ASSERT_EQ(wait_exit(p2, 60), 0) << slurp(p2.log);
  EXPECT_EQ(slurp(root + "/pairs2.jsonl"), slurp(out));

  // --export alone (no model).
  const RunOut ex = trinity::test::trinity({"data", "annotate", "--queue", q, "--export", root + "/pairs3.jsonl"},
                                           root + "/export.log");
  ASSERT_EQ(ex.rc, 0) << ex.out;
  EXPECT_EQ(slurp(root + "/pairs3.jsonl"), slurp(out));
  EXPECT_NE(ex.out.find(std::to_string(exported) + " DPO pairs"), std::string::npos) << ex.out;
  fs::remove_all(root);
}

TEST(CliAnnotate, BadFlagsAreOneLineErrors) {
  const std::string root = (fs::temp_directory_path() / ("trinity-annotate-bad-" + std::to_string(getpid()))).string();
  fs::create_directories(root);
  const RunOut no_data =
      trinity::test::trinity({"data", "annotate", "--model", root + "/m", "--queue", root + "/q.db"}, root + "/1.log");
  EXPECT_EQ(no_data.rc, 1);
  EXPECT_NE(no_data.out.find("[annotate] --model needs --data"), std::string::npos) << no_data.out;
  const RunOut no_queue = trinity::test::trinity(
      {"data", "annotate", "--model", root + "/m", "--data", root + "/d.jsonl"}, root + "/2.log");
  EXPECT_EQ(no_queue.rc, 1);
  EXPECT_NE(no_queue.out.find("--queue"), std::string::npos) << no_queue.out;
  const RunOut both = trinity::test::trinity(
      {"data", "annotate", "--queue", root + "/q.db", "--export", root + "/o.jsonl", "--model", root + "/m"},
      root + "/3.log");
  EXPECT_EQ(both.rc, 1);
  EXPECT_NE(both.out.find("drop --model"), std::string::npos) << both.out;
  const RunOut limit = trinity::test::trinity({"data", "annotate", "--model", root + "/m", "--data", root + "/d.jsonl",
                                               "--queue", root + "/q.db", "--limit", "0"},
                                              root + "/4.log");
  EXPECT_EQ(limit.rc, 1);
  EXPECT_NE(limit.out.find("--limit must be >= 1, got 0"), std::string::npos) << limit.out;
  fs::remove_all(root);
}
