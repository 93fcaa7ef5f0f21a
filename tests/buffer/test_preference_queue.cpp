// PreferenceQueue (buffer/preference_queue.h): idempotent enqueue by prompt hash, exclusive leases,
// lease expiry with an injected clock, label / skip / undo conflicts, restart safety (close and reopen
// the file), and the exported DPO rows: exact shape, and loadable by trinity's own DPO loader
// (Taskset::load_rows kDpo + trainer::dpo_experiences).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "buffer/dataset.h"
#include "buffer/preference_queue.h"
#include "buffer/test_util.h"
#include "trainer/sft_data.h"
#include "trainer/trainer_test_util.h"

using namespace trinity;
using namespace trinity::buffer;
using json = nlohmann::json;

namespace {

// A queue file in a fresh directory, with a clock the test moves.
struct Fixture {
  std::string dir = trinity::buffer::testing::temp_dir("prefq");
  std::string path = dir + "/q.db";
  double t = 1'700'000'000.0;
  ~Fixture() { std::filesystem::remove_all(dir); }
  PreferenceQueueOptions opts() {
    PreferenceQueueOptions o;
    o.now = [this] { return t; };
    return o;
  }
};

std::string user_prompt(const std::string& text) {
  return json::array({{{"role", "user"}, {"content", text}}}).dump();
}

NewPair pair_of(const std::string& text, const std::string& a = "A", const std::string& b = "B") {
  NewPair p;
  p.prompt = user_prompt(text);
  p.response_a = a, p.response_b = b;
  p.model_path = "/models/m/global_step_3/huggingface";
  p.model_version = 3;
  return p;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

}  // namespace

TEST(PreferenceQueue, EnqueueIsIdempotentByPromptHash) {
  Fixture f;
  PreferenceQueue q(f.path, f.opts());
  EXPECT_TRUE(q.enqueue(pair_of("2+2=")));
  // The same prompt with other whitespace and other responses is the same prompt.
  NewPair again = pair_of("2+2=", "x", "y");
  again.prompt = "[ {\"role\": \"user\",   \"content\": \"2+2=\"} ]";
  EXPECT_FALSE(q.enqueue(again));
  EXPECT_TRUE(q.contains(PreferenceQueue::prompt_hash(user_prompt("2+2="))));
  EXPECT_FALSE(q.contains(PreferenceQueue::prompt_hash(user_prompt("3+3="))));
  EXPECT_TRUE(q.enqueue(pair_of("3+3=")));
  const auto st = q.stats();
  EXPECT_EQ(st.total, 2);
  EXPECT_EQ(st.by_state.at("pending"), 2);
  EXPECT_EQ(q.get(1)->response_a, "A");  // the first pair was kept
  EXPECT_THROW(PreferenceQueue::prompt_hash("not json"), ValueError);
}

TEST(PreferenceQueue, LeasesAreExclusive) {
  Fixture f;
  PreferenceQueue q(f.path, f.opts());
  q.enqueue(pair_of("p1"));
  q.enqueue(pair_of("p2"));
  const LeaseResult a = q.next("alice"), b = q.next("bob");
  ASSERT_TRUE(a.pair && b.pair);
  EXPECT_NE(a.pair->id, b.pair->id);
  EXPECT_NE(a.pair->lease_token, b.pair->lease_token);
  EXPECT_EQ(a.pair->state, "leased");
  EXPECT_EQ(a.remaining, 2);
  EXPECT_DOUBLE_EQ(a.pair->lease_expires_at, f.t + 600);
  // Nothing left for a third annotator; alice asking again gets her own pair back, lease renewed.
  const LeaseResult c = q.next("carol");
  EXPECT_FALSE(c.pair);
  EXPECT_EQ(c.remaining, 2);
  f.t += 100;
  const LeaseResult a2 = q.next("alice");
  ASSERT_TRUE(a2.pair);
  EXPECT_EQ(a2.pair->id, a.pair->id);
  EXPECT_EQ(a2.pair->lease_token, a.pair->lease_token);
  EXPECT_DOUBLE_EQ(a2.pair->lease_expires_at, f.t + 600);
}

TEST(PreferenceQueue, ExpiredLeaseReturnsToPending) {
  Fixture f;
  PreferenceQueueOptions o = f.opts();
  o.lease_seconds = 30;
  PreferenceQueue q(f.path, o);
  q.enqueue(pair_of("p1"));
  const LeaseResult a = q.next("alice");
  ASSERT_TRUE(a.pair);
  EXPECT_FALSE(q.next("bob").pair);
  f.t += 31;
  EXPECT_EQ(q.stats().by_state.at("pending"), 1);  // stats also releases expired leases
  const LeaseResult b = q.next("bob");
  ASSERT_TRUE(b.pair);
  EXPECT_EQ(b.pair->id, a.pair->id);
  EXPECT_NE(b.pair->lease_token, a.pair->lease_token);
  // alice's old lease is no longer valid; bob's is.
  const QueueOutcome late = q.label(a.pair->id, a.pair->lease_token, "a", "alice");
  EXPECT_EQ(late.status, QueueOutcome::kConflict);
  EXPECT_NE(late.message.find("pair 1"), std::string::npos) << late.message;
  EXPECT_TRUE(q.label(b.pair->id, b.pair->lease_token, "b", "bob").ok());
  // A lease that expired while nobody else took it is refused too.
  q.enqueue(pair_of("p2"));
  const LeaseResult c = q.next("carol");
  ASSERT_TRUE(c.pair);
  f.t += 31;
  const QueueOutcome expired = q.label(c.pair->id, c.pair->lease_token, "a", "carol");
  EXPECT_EQ(expired.status, QueueOutcome::kConflict);
  EXPECT_NE(expired.message.find("expired"), std::string::npos) << expired.message;
}

TEST(PreferenceQueue, LabelConflictsAndBadValues) {
  Fixture f;
  PreferenceQueue q(f.path, f.opts());
  q.enqueue(pair_of("p1"));
  const LeaseResult a = q.next("alice");
  ASSERT_TRUE(a.pair);
  const int64_t id = a.pair->id;
  const QueueOutcome wrong = q.label(id, "not-the-lease", "a", "alice");
  EXPECT_EQ(wrong.status, QueueOutcome::kConflict);
  EXPECT_NE(wrong.message.find("pair 1"), std::string::npos) << wrong.message;
  const QueueOutcome bad = q.label(id, a.pair->lease_token, "c", "alice");
  EXPECT_EQ(bad.status, QueueOutcome::kInvalid);
  EXPECT_NE(bad.message.find("'c'"), std::string::npos) << bad.message;
  EXPECT_EQ(q.label(99, a.pair->lease_token, "a", "alice").status, QueueOutcome::kNotFound);
  // The annotator defaults to the lease holder.
  f.t += 5;
  ASSERT_TRUE(q.label(id, a.pair->lease_token, "a", "").ok());
  const auto p = q.get(id);
  EXPECT_EQ(p->state, "labelled");
  EXPECT_EQ(p->choice, "a");
  EXPECT_EQ(p->annotator, "alice");
  EXPECT_DOUBLE_EQ(p->labelled_at, f.t);
  EXPECT_TRUE(p->lease_token.empty());
  const QueueOutcome twice = q.label(id, a.pair->lease_token, "b", "alice");
  EXPECT_EQ(twice.status, QueueOutcome::kConflict);
  EXPECT_NE(twice.message.find("already labelled"), std::string::npos) << twice.message;
  EXPECT_EQ(q.get(id)->choice, "a");
  EXPECT_FALSE(q.next("bob").pair);  // a labelled pair is never served again
  const auto st = q.stats();
  EXPECT_EQ(st.by_state.at("labelled"), 1);
  EXPECT_EQ(st.by_annotator.at("alice").at("a"), 1);
}

TEST(PreferenceQueue, UndoOnlyBySameAnnotator) {
  Fixture f;
  PreferenceQueue q(f.path, f.opts());
  q.enqueue(pair_of("p1"));
  const LeaseResult a = q.next("alice");
  ASSERT_TRUE(q.label(a.pair->id, a.pair->lease_token, "tie", "alice").ok());
  const QueueOutcome other = q.undo(a.pair->id, "bob");
  EXPECT_EQ(other.status, QueueOutcome::kConflict);
  EXPECT_NE(other.message.find("labelled by 'alice'"), std::string::npos) << other.message;
  EXPECT_EQ(q.undo(a.pair->id, "").status, QueueOutcome::kInvalid);
  ASSERT_TRUE(q.undo(a.pair->id, "alice").ok());
  const auto p = q.get(a.pair->id);
  EXPECT_EQ(p->state, "pending");
  EXPECT_TRUE(p->choice.empty());
  EXPECT_EQ(q.undo(a.pair->id, "alice").status, QueueOutcome::kConflict);  // nothing to undo now
  const LeaseResult b = q.next("bob");                                     // back in the queue for anyone
  ASSERT_TRUE(b.pair);
  EXPECT_EQ(b.pair->id, a.pair->id);
}

TEST(PreferenceQueue, SkipAndIdenticalPairsAreNotServed) {
  Fixture f;
  PreferenceQueue q(f.path, f.opts());
  NewPair same = pair_of("same", "x", "x");
  same.identical = true;
  q.enqueue(same);
  q.enqueue(pair_of("p2"));
  const LeaseResult a = q.next("alice");
  ASSERT_TRUE(a.pair);
  EXPECT_EQ(a.pair->id, 2);  // the identical pair is stored skipped
  EXPECT_EQ(a.remaining, 1);
  EXPECT_EQ(q.skip(a.pair->id, "wrong").status, QueueOutcome::kConflict);
  ASSERT_TRUE(q.skip(a.pair->id, a.pair->lease_token).ok());
  EXPECT_FALSE(q.next("alice").pair);
  const auto st = q.stats();
  EXPECT_EQ(st.by_state.at("skipped"), 2);
  EXPECT_EQ(st.identical, 1);
  EXPECT_EQ(st.by_annotator.at("alice").at("skipped"), 1);
  EXPECT_EQ(q.label(a.pair->id, a.pair->lease_token, "a", "alice").status, QueueOutcome::kConflict);
}

TEST(PreferenceQueue, RestartKeepsLabelsAndLeasesExpireAfterIt) {
  Fixture f;
  int64_t labelled_id = 0, leased_id = 0;
  std::string lease;
  {
    PreferenceQueue q(f.path, f.opts());
    q.enqueue(pair_of("p1"));
    q.enqueue(pair_of("p2"));
    q.enqueue(pair_of("p3"));
    const LeaseResult a = q.next("alice");
    labelled_id = a.pair->id;
    ASSERT_TRUE(q.label(labelled_id, a.pair->lease_token, "b", "alice").ok());
    const LeaseResult b = q.next("bob");  // leased, never labelled: the server "crashes"
    leased_id = b.pair->id;
    lease = b.pair->lease_token;
  }
  PreferenceQueue q(f.path, f.opts());
  EXPECT_FALSE(q.enqueue(pair_of("p1")));  // generation on restart adds nothing
  const auto p = q.get(labelled_id);
  EXPECT_EQ(p->state, "labelled");
  EXPECT_EQ(p->choice, "b");
  EXPECT_EQ(q.get(leased_id)->state, "leased");  // the lease survives the restart ...
  const LeaseResult c = q.next("carol");
  ASSERT_TRUE(c.pair);
  EXPECT_NE(c.pair->id, leased_id);
  f.t += 601;  // ... until it expires
  EXPECT_EQ(q.stats().by_state.at("pending"), 2);
  EXPECT_EQ(q.label(leased_id, lease, "a", "bob").status, QueueOutcome::kConflict);
  const LeaseResult d = q.next("dave");
  ASSERT_TRUE(d.pair);
  EXPECT_EQ(d.pair->id, std::min(leased_id, c.pair->id));
}

TEST(PreferenceQueue, ExportIsTrinityDpoAndLoadsInTheDpoLoader) {
  Fixture f;
  PreferenceQueue q(f.path, f.opts());
  NewPair chat;
  chat.prompt = json::array({{{"role", "system"}, {"content", "be brief"}, {"name", "sys"}},
                             {{"role", "user"}, {"content", "hi"}}})
                    .dump();
  chat.response_a = "hello", chat.response_b = "go away";
  chat.model_path = "/m";
  q.enqueue(chat);
  q.enqueue(pair_of("2+2=", "4", "5"));
  q.enqueue(pair_of("tie"));
  q.enqueue(pair_of("bad"));
  q.enqueue(pair_of("unlabelled"));
  const std::vector<std::string> choices = {"a", "b", "tie", "both_bad"};
  for (const auto& c : choices) {
    const LeaseResult r = q.next("ann");
    ASSERT_TRUE(q.label(r.pair->id, r.pair->lease_token, c, "ann").ok());
  }
  const std::string out = f.dir + "/dpo.jsonl";
  const DpoExportReport rep = q.export_dpo(out);
  EXPECT_EQ(rep.written, 2);
  EXPECT_EQ(rep.ties, 1);
  EXPECT_EQ(rep.both_bad, 1);
  const auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 2u);
  // Exactly the documented shape: prompt messages reduced to {role, content}, one assistant turn each.
  const json first = json::parse(lines[0]);
  const json want = {
      {"message", json::array({{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "hi"}}})},
      {"chosen", json::array({{{"role", "assistant"}, {"content", "hello"}}})},
      {"rejected", json::array({{{"role", "assistant"}, {"content", "go away"}}})},
      {"lineage",
       {{"pair_id", 1},
        {"model_path", "/m"},
        {"model_version", 0},
        {"annotator", "ann"},
        {"labelled_at", "2023-11-14T22:13:20Z"}}}};
  EXPECT_EQ(first, want) << first.dump(2);
  const json second = json::parse(lines[1]);
  EXPECT_EQ(second["chosen"][0]["content"], "5");  // choice b
  EXPECT_EQ(second["rejected"][0]["content"], "4");
  EXPECT_EQ(second["lineage"]["model_version"], 3);
  EXPECT_EQ(second["lineage"]["model_path"], "/models/m/global_step_3/huggingface");

  // trinity's DPO loader (launcher dataset_experiences) with the default format (Trinity-RFT's:
  // prompt_type messages, the prompt list under messages_key "message", chosen / rejected).
  FormatConfig fmt;
  LoadReport lr;
  const auto rows = Taskset::load_rows(out, "train", "", fmt, DatasetKind::kDpo, true, lr);
  ASSERT_EQ(rows.size(), 2u);
  const auto chat_fmt = test::byte_chat();
  trainer::SftDataOptions so;
  so.format = fmt;
  so.strict = true;
  trainer::SftDataReport sr;
  const auto exps = trainer::dpo_experiences(rows, so, chat_fmt.tokenizer(), &chat_fmt, sr);
  ASSERT_EQ(exps.size(), 2u);
  EXPECT_EQ(exps[0].type(), ExperienceType::kDpo);
  EXPECT_EQ(chat_fmt.tokenizer().decode(exps[0].tokens),
            "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat_fmt.tokenizer().decode(exps[0].chosen), "hello<|im_end|>\n");
  EXPECT_EQ(chat_fmt.tokenizer().decode(exps[0].rejected), "go away<|im_end|>\n");
  EXPECT_EQ(chat_fmt.tokenizer().decode(exps[1].chosen), "5<|im_end|>\n");
}

TEST(PreferenceQueue, DpoRowDropsAFinalAssistantTurn) {
  PreferencePair p;
  p.id = 7;
  p.prompt = json::array({{{"role", "user"}, {"content", "q"}}, {{"role", "assistant"}, {"content", "old"}}}).dump();
  p.response_a = "x", p.response_b = "y";
  p.choice = "b";
  p.annotator = "z";
  const json row = json::parse(dpo_row(p));
  EXPECT_EQ(row["message"], json::array({{{"role", "user"}, {"content", "q"}}}));
  EXPECT_EQ(row["chosen"][0]["content"], "y");
  EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00Z");
}
