// Storages in one process: round trips (queue, sqlite, PostgreSQL, file), read order, leases, pending
// rewards, replay priorities and cooldown, min_model_version, resume through state()/load_state(). The
// durable-semantics tests run every assertion on each backend they loop over; "pg" is a real
// PostgreSQL server started for this binary (tests/common/pg_server.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "buffer/file_storage.h"
#include "buffer/pg_storage.h"
#include "buffer/queue_storage.h"
#include "buffer/sqlite_storage.h"
#include "buffer/storage.h"
#include "common/pg_server.h"
#include "core/error.h"
#include "test_util.h"

using namespace trinity::buffer;
using trinity::buffer::testing::make_exp;
using trinity::buffer::testing::temp_dir;

namespace {

StorageConfig cfg_for(const std::string& type, const std::string& path = "") {
  StorageConfig c;
  c.storage_type = type;
  c.path = path;
  c.name = "exp";
  return c;
}

ReadRequest req(size_t n, double timeout = 0.2) {
  ReadRequest r;
  r.batch_size = n;
  r.timeout_s = timeout;
  return r;
}

// The config of backend `type` for a test: "queue" (in process), "sql" (a sqlite file <dir>/<name>.db)
// or "pg" (a table of its own on the test PostgreSQL server).
StorageConfig backend(const std::string& type, const std::string& dir, const std::string& name) {
  if (type == "queue") return cfg_for("queue");
  if (type == "sql") return cfg_for("sql", dir + "/" + name + ".db");
  static int n = 0;
  StorageConfig c = cfg_for("sql", trinity::test::pg_server().url());
  c.name = "exp_" + name + "_" + std::to_string(++n);
  return c;
}

std::vector<std::unique_ptr<ExperienceStorage>> all_durable(const std::string& dir) {
  std::vector<std::unique_ptr<ExperienceStorage>> v;
  v.push_back(open_storage(cfg_for("sql", "sqlite:///" + dir + "/b.db")));
  v.push_back(open_storage(backend("pg", dir, "rt")));
  v.push_back(open_storage(cfg_for("file", dir + "/b.jsonl")));
  return v;
}

}  // namespace

TEST(BufferStorage, RoundTripEveryStorage) {
  const std::string dir = temp_dir("rt");
  std::vector<std::unique_ptr<ExperienceStorage>> stores = all_durable(dir);
  stores.push_back(open_storage(cfg_for("queue")));
  for (auto& s : stores) {
    std::vector<Experience> in;
    for (int i = 0; i < 20; ++i) in.push_back(make_exp(i, 30 + i, false, i % 4));
    ASSERT_TRUE(s->write(in));
    std::vector<Experience> out;
    for (;;) {
      ReadResult r = s->read(req(6));
      for (auto& e : r.batch) out.push_back(std::move(e));
      if (!r.lease.empty()) s->ack(r.lease);
      if (r.status != ReadStatus::kOk) break;
    }
    // queue and file return everything in order; sqlite returns 18 (3 full batches, oldest first)
    ASSERT_GE(out.size(), 18u) << s->describe();
    for (const auto& e : out) {
      auto it = std::find_if(in.begin(), in.end(), [&](const Experience& x) { return x.eid == e.eid; });
      ASSERT_NE(it, in.end());
      Experience expect = *it;
      expect.use_count = e.use_count;  // storages count uses
      EXPECT_TRUE(e == expect) << s->describe() << " " << e.eid.uid();
    }
  }
}

TEST(BufferStorage, SqliteAcceptsUrlsAndReadsInWriteOrder) {
  const std::string dir = temp_dir("order");
  EXPECT_EQ(sqlite_path_from_url("sqlite:////abs/x.db"), "/abs/x.db");
  EXPECT_EQ(sqlite_path_from_url("sqlite:///rel/x.db"), "rel/x.db");
  EXPECT_THROW(sqlite_path_from_url("mysql://h/db"), trinity::UnsupportedError);
  auto s = open_storage(cfg_for("sqlite", dir + "/o.db"));
  std::vector<Experience> in;
  for (int i = 0; i < 10; ++i) in.push_back(make_exp(i));
  s->write(in);
  ReadResult r = s->read(req(3));
  ASSERT_EQ(r.status, ReadStatus::kOk);
  // In write order (explore step order), so a trainer that lags or resumes trains steps in order.
  EXPECT_EQ(r.batch[0].eid, in[0].eid);
  EXPECT_EQ(r.batch[2].eid, in[2].eid);
  // A full batch only: 7 left, ask for 8 -> timeout with nothing leased.
  ReadResult r2 = s->read(req(8, 0.05));
  EXPECT_EQ(r2.status, ReadStatus::kTimeout);
  EXPECT_TRUE(r2.batch.empty());
  ReadRequest partial = req(8, 0.05);
  partial.allow_partial = true;
  ReadResult r3 = s->read(partial);
  EXPECT_EQ(r3.status, ReadStatus::kTimeout);
  EXPECT_EQ(r3.batch.size(), 7u);
  // The same file opened through a URL sees the same table.
  auto view = open_storage_url("sqlite:///" + dir + "/o.db#exp");
  StorageStats st = view->stats();
  EXPECT_EQ(st.total, 10);
  EXPECT_EQ(st.leased, 10);
}

TEST(BufferStorage, LeaseExpiryAndReleaseGiveBatchesBack) {
  const std::string dir = temp_dir("lease");
  for (std::string type : {"queue", "sql", "pg"}) {
    StorageConfig c = backend(type, dir, "l");
    c.lease_timeout = 1.0;  // long enough that a loaded machine does not expire it early
    auto s = open_storage(c);
    std::vector<Experience> in;
    for (int i = 0; i < 4; ++i) in.push_back(make_exp(i));
    s->write(in);
    ReadResult a = s->read(req(4));
    ASSERT_EQ(a.status, ReadStatus::kOk) << type;
    EXPECT_EQ(s->read(req(1, 0.05)).status, ReadStatus::kTimeout) << type;
    ReadResult b = s->read(req(4, 2.0));  // waits for the lease to expire
    ASSERT_EQ(b.status, ReadStatus::kOk) << type;
    EXPECT_EQ(b.batch[0].use_count, 1) << type;  // the expired lease did not count as a use
    EXPECT_FALSE(s->ack(a.lease)) << type;       // stale ack of a reclaimed lease changes nothing
    EXPECT_FALSE(s->renew(a.lease)) << type;
    EXPECT_TRUE(s->renew(b.lease)) << type;
    s->release(b.lease);
    ReadResult c2 = s->read(req(4, 0.05));
    ASSERT_EQ(c2.status, ReadStatus::kOk) << type;
    EXPECT_TRUE(s->ack(c2.lease)) << type;
    EXPECT_FALSE(s->ack(c2.lease)) << type;  // acked already
    EXPECT_EQ(s->read(req(1, 0.05)).status, ReadStatus::kTimeout) << type;
    EXPECT_EQ(s->stats().consumed, 4) << type;
  }
}

TEST(BufferStorage, RenewKeepsASlowReadersLease) {
  const std::string dir = temp_dir("renew");
  for (std::string type : {"queue", "sql", "pg"}) {
    StorageConfig c = backend(type, dir, "r");
    c.lease_timeout = 0.6;
    auto s = open_storage(c);
    s->write({make_exp(0), make_exp(1)});
    ReadResult a = s->read(req(2));
    ASSERT_EQ(a.status, ReadStatus::kOk) << type;
    for (int k = 0; k < 3; ++k) {  // 0.9 s in total: past the first expiry, kept alive by renew
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      EXPECT_TRUE(s->renew(a.lease)) << type;
      EXPECT_EQ(s->read(req(1, 0.0)).status, ReadStatus::kTimeout) << type;
    }
    EXPECT_TRUE(s->ack(a.lease)) << type;
    EXPECT_EQ(s->stats().consumed, 2) << type;
  }
}

TEST(BufferStorage, PendingRewardsAreHeldBack) {
  const std::string dir = temp_dir("pending");
  for (std::string type : {"queue", "sql", "pg"}) {
    auto s = open_storage(backend(type, dir, "p"));
    std::vector<Experience> in;
    for (int i = 0; i < 6; ++i) {
      Experience e = make_exp(i, 12, /*pending=*/true);
      e.eid.batch = "3";
      e.eid.task = i / 3;  // two groups: 3/0 and 3/1
      in.push_back(e);
    }
    s->write(in);
    EXPECT_EQ(s->stats().pending, 6) << type;
    EXPECT_EQ(s->read(req(1, 0.05)).status, ReadStatus::kTimeout) << type;
    EXPECT_EQ(s->set_reward({in[0].eid.uid(), in[1].eid.uid(), "no/such/uid"}, 1.0), 2u) << type;
    ReadResult r = s->read(req(2));
    ASSERT_EQ(r.status, ReadStatus::kOk) << type;
    for (auto& e : r.batch) EXPECT_EQ(e.reward, 1.0) << type;
    EXPECT_EQ(s->set_group_reward("3/1", -1.0), 3u) << type;
    EXPECT_EQ(s->set_group_reward("3/1", 5.0), 0u) << type;  // already rewarded
    ReadResult g = s->read(req(3));
    ASSERT_EQ(g.status, ReadStatus::kOk) << type;
    for (auto& e : g.batch) {
      EXPECT_EQ(e.eid.tid(), "3/1");
      EXPECT_EQ(e.reward, -1.0);
    }
    EXPECT_EQ(s->stats().pending, 1) << type;
  }
}

TEST(BufferStorage, MinModelVersionFilters) {
  const std::string dir = temp_dir("mmv");
  for (std::string type : {"queue", "sql", "pg"}) {
    auto s = open_storage(backend(type, dir, "m"));
    std::vector<Experience> in;
    for (int i = 0; i < 8; ++i) in.push_back(make_exp(i, 12, false, i));
    s->write(in);
    ReadRequest r = req(4);
    r.min_model_version = 4;
    ReadResult out = s->read(r);
    ASSERT_EQ(out.status, ReadStatus::kOk) << type;
    for (auto& e : out.batch) EXPECT_GE(e.model_version, 4) << type;
    EXPECT_EQ(s->read(r).status, ReadStatus::kTimeout) << type;
  }
}

TEST(BufferStorage, ReplayPriorityAndCooldown) {
  const std::string dir = temp_dir("replay");
  for (std::string type : {"queue", "sql", "pg"}) {
    StorageConfig c = backend(type, dir, "r");
    c.replay_buffer.enable = true;
    c.replay_buffer.priority_fn = "linear_decay";
    c.replay_buffer.decay = 2.0;
    c.replay_buffer.reuse_cooldown_time = 1.0;
    auto s = open_storage(c);
    // versions 0, 1, 5: priority = version - 2 * use_count
    s->write({make_exp(0, 12, false, 0), make_exp(1, 12, false, 1), make_exp(2, 12, false, 5)});
    ReadResult a = s->read(req(1));
    ASSERT_EQ(a.status, ReadStatus::kOk) << type;
    EXPECT_EQ(a.batch[0].model_version, 5) << type;
    EXPECT_EQ(a.batch[0].use_count, 1) << type;
    s->ack(a.lease);
    // During the cooldown the v5 experience is not available: next highest is v1.
    ReadResult b = s->read(req(1, 0.01));
    EXPECT_EQ(b.batch.at(0).model_version, 1) << type;
    s->ack(b.lease);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    // After cooldown: v5 has priority 5 - 2 = 3 > v0 (0) > v1 (1 - 2 = -1).
    ReadResult c3 = s->read(req(3));
    ASSERT_EQ(c3.status, ReadStatus::kOk) << type;
    EXPECT_EQ(c3.batch[0].model_version, 5) << type;
    EXPECT_EQ(c3.batch[0].use_count, 2) << type;
    EXPECT_EQ(c3.batch[1].model_version, 0) << type;
    EXPECT_EQ(c3.batch[2].model_version, 1) << type;
  }
}

TEST(BufferStorage, ReplayUseCountLimit) {
  const std::string dir = temp_dir("limit");
  for (std::string type : {"queue", "sql", "pg"}) {
    StorageConfig c = backend(type, dir, "u");
    c.replay_buffer.enable = true;
    c.replay_buffer.priority_fn = "decay_limit_randomization";
    c.replay_buffer.use_count_limit = 2;
    c.replay_buffer.reuse_cooldown_time = 0.0;
    auto s = open_storage(c);
    s->write({make_exp(0)});
    int uses = 0;
    for (int k = 0; k < 5; ++k) {
      ReadResult r = s->read(req(1, 0.05));
      if (r.status != ReadStatus::kOk) break;
      ++uses;
      s->ack(r.lease);
    }
    EXPECT_EQ(uses, 2) << type;
  }
  StorageConfig bad = cfg_for("queue");
  bad.replay_buffer.enable = true;
  bad.replay_buffer.priority_fn = "nope";
  EXPECT_THROW(open_storage(bad), trinity::ConfigError);
}

TEST(BufferStorage, QueueBlocksAndCloses) {
  StorageConfig c = cfg_for("queue");
  c.capacity = 4;
  QueueStorage q(c);
  std::vector<Experience> four;
  for (int i = 0; i < 4; ++i) four.push_back(make_exp(i));
  ASSERT_TRUE(q.write(four));
  EXPECT_FALSE(q.write({make_exp(9)}, 0.05));  // full: times out (a return value)
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ReadResult r = q.read(req(2));
    q.ack(r.lease);
  });
  EXPECT_TRUE(q.write({make_exp(10), make_exp(11)}, 5.0));  // unblocked by the reader
  reader.join();
  ReadResult drain = q.read(req(4));
  ASSERT_EQ(drain.status, ReadStatus::kOk);
  q.ack(drain.lease);
  // A blocked reader is woken by writers.
  ReadResult big;
  std::thread r2([&] { big = q.read(req(2, 5.0)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  q.write({make_exp(12)});
  q.write({make_exp(13)});
  r2.join();
  EXPECT_EQ(big.status, ReadStatus::kOk);
  q.ack(big.lease);
  q.write({make_exp(14)});
  q.close();
  ReadResult last = q.read(req(4, 5.0));
  EXPECT_EQ(last.status, ReadStatus::kClosed);
  EXPECT_EQ(last.batch.size(), 1u);
  q.ack(last.lease);  // an open lease could still be given back: drained means none is left
  EXPECT_EQ(q.read(req(4, 5.0)).status, ReadStatus::kClosed);
}

TEST(BufferStorage, QueueMirrorsToBackup) {
  const std::string dir = temp_dir("mirror");
  StorageConfig c = cfg_for("queue", dir + "/backup.jsonl");
  auto q = open_storage(c);
  q->write({make_exp(0), make_exp(1)});
  auto f = open_storage_url(dir + "/backup.jsonl");
  EXPECT_EQ(f->stats().total, 2);
}

TEST(BufferStorage, SqlResumeIsExact) {
  const std::string dir = temp_dir("resume");
  for (std::string type : {"sql", "pg"}) {
    const StorageConfig base = backend(type, dir, "res");
    std::set<std::string> trained;
    std::vector<Experience> in;
    for (int i = 0; i < 12; ++i) in.push_back(make_exp(i));
    std::string checkpoint;
    {
      StorageConfig c = base;
      c.lease_timeout = 3600;  // a crash must not rely on expiry
      auto s = open_storage(c);
      s->write(in);
      // step 1: read, train, checkpoint (state), ack
      ReadResult r1 = s->read(req(4));
      for (auto& e : r1.batch) trained.insert(e.eid.uid());
      checkpoint = s->state();
      s->ack(r1.lease);
      // step 2: read, train, checkpoint, then crash before ack
      ReadResult r2 = s->read(req(4));
      for (auto& e : r2.batch) trained.insert(e.eid.uid());
      checkpoint = s->state();
      // step 3: read, crash before training finishes (not in any checkpoint)
      ReadResult r3 = s->read(req(4));
      ASSERT_EQ(r3.status, ReadStatus::kOk);
    }  // process "dies": leases of r2 and r3 are open
    StorageConfig c = base;
    c.lease_timeout = 3600;
    auto s = open_storage(c);
    s->load_state(checkpoint);  // acks r2 (covered), gives r3 back at once
    ReadResult r = s->read(req(4));
    ASSERT_EQ(r.status, ReadStatus::kOk) << type;
    for (auto& e : r.batch)
      EXPECT_TRUE(trained.insert(e.eid.uid()).second) << type << " trained twice: " << e.eid.uid();
    s->ack(r.lease);
    EXPECT_EQ(trained.size(), 12u) << type;
    EXPECT_EQ(s->read(req(1, 0.05)).status, ReadStatus::kTimeout) << type;
  }
}

TEST(BufferStorage, FileResumeContinuesAtOffset) {
  const std::string dir = temp_dir("fres");
  StorageConfig c = cfg_for("file", dir + "/e.jsonl");
  std::vector<Experience> in;
  for (int i = 0; i < 10; ++i) in.push_back(make_exp(i));
  FileStorage(c).write(in);
  std::string st;
  {
    FileStorage f(c);
    f.read(req(3));
    f.read(req(3));
    st = f.state();
  }
  FileStorage f(c);
  f.load_state(st);
  ReadResult r = f.read(req(3));
  ASSERT_EQ(r.status, ReadStatus::kOk);
  EXPECT_EQ(r.batch[0].eid, in[6].eid);
  ReadResult end = f.read(req(3));
  EXPECT_EQ(end.status, ReadStatus::kClosed);
  EXPECT_EQ(end.batch.size(), 1u);
}

TEST(BufferStorage, MalformedFileNamesLine) {
  const std::string dir = temp_dir("bad");
  const std::string p = dir + "/bad.jsonl";
  {
    std::ofstream o(p);
    o << experience_to_json(make_exp(0)) << "\n\n" << "{\"tokens\": [1,2,\n";
  }
  FileStorage f(cfg_for("file", p));
  try {
    f.read(req(5));
    FAIL();
  } catch (const trinity::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open_storage(cfg_for("file", dir + "/x.parquet")), trinity::UnsupportedError);
  EXPECT_THROW(open_storage_url(dir + "/x.parquet"), trinity::UnsupportedError);
  EXPECT_THROW(open_storage(cfg_for("redis")), trinity::ConfigError);
  EXPECT_THROW(FileStorage(cfg_for("file", dir + "/missing.jsonl")).read(req(1)), trinity::IoError);
  EXPECT_THROW(open_storage(cfg_for("file", dir + "/e.jsonl"))->set_reward({"a"}, 1.0), trinity::UnsupportedError);
}

TEST(BufferStorage, SqlIgnoresDuplicateUids) {
  const std::string dir = temp_dir("dup");
  for (std::string type : {"sql", "pg"}) {
    auto s = open_storage(backend(type, dir, "d"));
    Experience e = make_exp(0);
    s->write({e});
    s->write({e, make_exp(1)});
    EXPECT_EQ(s->stats().total, 2) << type;
  }
}

TEST(BufferStorage, QueueReplayEvictsLowestWhenFull) {
  StorageConfig c = cfg_for("queue");
  c.capacity = 3;
  c.replay_buffer.enable = true;
  QueueStorage q(c);
  q.write({make_exp(0, 12, false, 5), make_exp(1, 12, false, 1), make_exp(2, 12, false, 3)});
  q.write({make_exp(3, 12, false, 0)});  // lower than everything held: dropped
  q.write({make_exp(4, 12, false, 4)});  // evicts v1
  ReadResult r = q.read(req(3));
  ASSERT_EQ(r.status, ReadStatus::kOk);
  std::vector<int64_t> v;
  for (auto& e : r.batch) v.push_back(e.model_version);
  EXPECT_EQ(v, (std::vector<int64_t>{5, 4, 3}));
  EXPECT_EQ(q.read(req(1, 0.01)).status, ReadStatus::kTimeout);
}

TEST(BufferStorage, SqlRandomizedPriorityStillRespectsLimit) {
  const std::string dir = temp_dir("sigma");
  for (std::string type : {"sql", "pg"}) {
    StorageConfig c = backend(type, dir, "s");
    c.replay_buffer.enable = true;
    c.replay_buffer.priority_fn = "decay_limit_randomization";
    c.replay_buffer.sigma = 0.5;
    c.replay_buffer.use_count_limit = 3;
    c.replay_buffer.reuse_cooldown_time = 0.0;
    auto s = open_storage(c);
    s->write({make_exp(0, 12, false, 0), make_exp(1, 12, false, 10)});
    std::map<int64_t, int> uses;
    for (int k = 0; k < 10; ++k) {
      ReadResult r = s->read(req(1, 0.01));
      if (r.status != ReadStatus::kOk) break;
      uses[r.batch[0].model_version]++;
      s->ack(r.lease);
    }
    EXPECT_EQ(uses[0], 3) << type;
    EXPECT_EQ(uses[10], 3) << type;
    EXPECT_EQ(s->stats().consumed, 2) << type;
  }
}

TEST(BufferStorage, ThreadsShareOneStorageExactlyOnce) {
  const std::string dir = temp_dir("threads");
  for (std::string type : {"queue", "sql", "pg"}) {
    StorageConfig c = backend(type, dir, "t");
    c.capacity = 64;  // the queue blocks writers: exercises both condition-variable paths
    auto s = open_storage(c);
    const int kWriters = 3, kPer = 200;
    std::vector<std::thread> th;
    std::mutex mu;
    std::multiset<std::string> seen;
    for (int w = 0; w < kWriters; ++w)
      th.emplace_back([&, w] {
        for (int k = 0; k < kPer; k += 10) {
          std::vector<Experience> b;
          for (int i = 0; i < 10; ++i) {
            b.push_back(make_exp(k + i));
            b.back().eid.batch = trinity::strcat("t", w, "-", k);
          }
          s->write(b, 30.0);
        }
      });
    for (int r = 0; r < 2; ++r)
      th.emplace_back([&] {
        for (;;) {
          ReadResult got = s->read(req(7, 1.0));
          if (got.status != ReadStatus::kOk) break;
          std::lock_guard<std::mutex> lock(mu);
          for (const auto& e : got.batch) seen.insert(e.eid.uid());
          s->ack(got.lease);
        }
      });
    for (auto& t : th) t.join();
    ReadRequest rest = req(1000, 0.0);
    rest.allow_partial = true;
    for (const auto& e : s->read(rest).batch) seen.insert(e.eid.uid());
    EXPECT_EQ(seen.size(), static_cast<size_t>(kWriters * kPer)) << type;
    EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size()) << type << ": duplicates";
  }
}

TEST(BufferStorage, QueueClosesWhenLastWriterReleases) {
  QueueStorage q(cfg_for("queue"));
  q.acquire();
  q.acquire();
  q.write({make_exp(0)});
  q.close();  // one writer left: still open
  EXPECT_EQ(q.read(req(2, 0.05)).status, ReadStatus::kTimeout);
  q.write({make_exp(1)});
  q.close();
  ReadResult r = q.read(req(2, 1.0));
  EXPECT_EQ(r.status, ReadStatus::kOk);
  q.ack(r.lease);
  EXPECT_EQ(q.read(req(1, 1.0)).status, ReadStatus::kClosed);
  EXPECT_THROW(q.write({make_exp(2)}), trinity::ValueError);
}

TEST(BufferStorage, PostgresUrlsFailFastAndSurviveARestart) {
  EXPECT_TRUE(is_postgres_url("postgresql+psycopg2://u:p@h:5432/db"));
  EXPECT_TRUE(is_postgres_url("postgres://h/db"));
  EXPECT_FALSE(is_postgres_url("sqlite:///x.db"));
  EXPECT_EQ(libpq_url("postgresql+psycopg2://u:p@h/db"), "postgresql://u:p@h/db");
  // Nobody listens there: one clear error, quickly, without the password.
  StorageConfig bad = cfg_for("sql", "postgresql://user:secret@127.0.0.1:1/db");
  bad.max_retry_times = 1, bad.max_retry_interval = 0.2;
  try {
    open_storage(bad);
    ADD_FAILURE() << "no error";
  } catch (const trinity::IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unreachable"), std::string::npos) << m;
    EXPECT_EQ(m.find("secret"), std::string::npos) << m;
  }
  // Trinity's SQLAlchemy form, and the server restarted while a writer and a reader are busy: both
  // reconnect, nothing is lost or read twice.
  auto& pg = trinity::test::pg_server();
  StorageConfig c = cfg_for("sql", "postgresql+psycopg2://" + pg.url().substr(std::string("postgresql://").size()));
  c.name = "exp_restart";
  auto s = open_storage(c);
  auto reader = open_storage(c);
  std::atomic<bool> wrote_all{false};
  std::thread writer([&] {
    for (int b = 0; b < 12; ++b) {
      std::vector<Experience> batch;
      for (int i = 0; i < 5; ++i) batch.push_back(make_exp(b * 5 + i));
      s->write(batch);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    wrote_all = true;
  });
  std::set<std::string> seen;
  std::thread restarter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    pg.restart();
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen.size() < 60 && std::chrono::steady_clock::now() < end) {
    ReadResult r = reader->read(req(5, 0.5));
    for (auto& e : r.batch) EXPECT_TRUE(seen.insert(e.eid.uid()).second) << "read twice: " << e.eid.uid();
    if (!r.lease.empty()) {
      EXPECT_TRUE(reader->ack(r.lease));
    }
  }
  restarter.join();
  writer.join();
  EXPECT_TRUE(wrote_all.load());
  EXPECT_EQ(seen.size(), 60u);
  const StorageStats st = s->stats();
  EXPECT_EQ(st.total, 60);
  EXPECT_EQ(st.consumed, 60);
}

TEST(BufferStorage, SqlUidRepeatedInsideOneBatchIsStoredOnce) {
  const std::string dir = temp_dir("dup_in_batch");
  for (std::string type : {"sql", "pg"}) {
    auto s = open_storage(backend(type, dir, "dib"));
    const Experience a = make_exp(0), b = make_exp(1);
    s->write({a, b, a});
    EXPECT_EQ(s->stats().total, 2) << type;
    ReadResult r = s->read(req(2));
    ASSERT_EQ(r.status, ReadStatus::kOk) << type;
    const Experience& got = r.batch[0].eid == a.eid ? r.batch[0] : r.batch[1];
    EXPECT_EQ(got.eid, a.eid) << type;
    EXPECT_EQ(got.tokens, a.tokens) << type;  // its own payload, not another row's
    EXPECT_EQ(got.logprobs, a.logprobs) << type;
  }
}
