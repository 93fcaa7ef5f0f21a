// Several processes on one buffer (fork), each test on sqlite and on PostgreSQL (a real server started
// for this binary, tests/common/pg_server.h): 4 writers and 4 readers with exact counts, a writer killed
// with SIGKILL mid-transaction (nothing committed lost, no partial batch), and a reader killed mid-batch
// whose batch comes back after the lease. Children report through pipes and _exit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "buffer/sqlite_storage.h"
#include "buffer/storage.h"
#include "common/pg_server.h"
#include "test_util.h"

using namespace trinity::buffer;
using trinity::buffer::testing::make_exp;
using trinity::buffer::testing::temp_dir;

namespace {

// `target`: a sqlite file path, or "postgresql://...#table".
StorageConfig sql_cfg(const std::string& target, double lease = 600) {
  StorageConfig c;
  c.storage_type = "sql";
  c.name = "exp";
  if (target.rfind("postgresql://", 0) == 0) {
    c.path = target.substr(0, target.find('#'));
    c.name = target.substr(target.find('#') + 1);
  } else {
    c.path = "sqlite:///" + target;
  }
  c.lease_timeout = lease;
  c.max_retry_times = 20;
  c.max_retry_interval = 0.05;
  return c;
}

ReadRequest req(size_t n, double timeout) {
  ReadRequest r;
  r.batch_size = n;
  r.timeout_s = timeout;
  return r;
}

// Runs fn in a child process; the child exits 0 on success, 1 on exception.
template <typename Fn>
pid_t spawn(Fn&& fn) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 0;
    try {
      fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %d: %s\n", ::getpid(), e.what());
      rc = 1;
    }
    ::_exit(rc);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Writer w writes n experiences in batches; batch ids "w<w>-<k>" make every uid distinct.
void write_n(const std::string& path, int w, int n, int per_tx, int n_tokens = 64) {
  auto s = open_storage(sql_cfg(path));
  for (int k = 0; k * per_tx < n; ++k) {
    std::vector<Experience> batch;
    for (int i = 0; i < per_tx && k * per_tx + i < n; ++i) {
      Experience e = make_exp(k * per_tx + i, n_tokens);
      e.eid.batch = trinity::strcat("w", w, "-", k);
      e.eid.task = i;
      batch.push_back(std::move(e));
    }
    s->write(batch);
  }
}

class BufferMultiProcess : public ::testing::TestWithParam<std::string> {
 protected:
  // Where test `name` keeps its buffer: a file in `dir`, or a table of its own on the server.
  std::string target(const std::string& dir, const std::string& name) {
    if (GetParam() == "sqlite") return dir + "/" + name + ".db";
    return trinity::test::pg_server().url() + "#mp_" + name;
  }
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(Backends, BufferMultiProcess, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(BufferMultiProcess, FourWritersFourReadersExactlyOnce) {
  const std::string dir = temp_dir("mp");
  const std::string db = target(dir, "mp");
  const int kPerWriter = 750;
  { auto init = open_storage(sql_cfg(db)); }  // create the table before the race
  std::vector<pid_t> writers;
  for (int w = 0; w < 4; ++w) writers.push_back(spawn([&, w] { write_n(db, w, kPerWriter, 25 + 5 * w); }));
  // Child readers: read until they time out, ack, record uids.
  std::vector<pid_t> readers;
  for (int k = 0; k < 3; ++k)
    readers.push_back(spawn([&, k] {
      StorageConfig c = sql_cfg(db);
      c.reader_id = trinity::strcat("reader-child-", k);
      auto s = open_storage(c);
      std::ofstream out(trinity::strcat(dir, "/child_uids_", k, ".txt"));
      for (;;) {
        ReadResult r = s->read(req(16, 3.0));
        if (r.status != ReadStatus::kOk) break;
        for (const auto& e : r.batch) out << e.eid.uid() << "\n";
        out.flush();
        s->ack(r.lease);
        std::this_thread::sleep_for(std::chrono::milliseconds(3));  // "train": lets the other readers in
      }
    }));
  std::vector<std::string> mine;
  {
    StorageConfig c = sql_cfg(db);
    c.reader_id = "reader-parent";
    auto s = open_storage(c);
    for (;;) {
      ReadResult r = s->read(req(10, 3.0));
      if (r.status != ReadStatus::kOk) break;
      for (const auto& e : r.batch) {
        mine.push_back(e.eid.uid());
        ASSERT_EQ(e.tokens.size(), 64u);
      }
      s->ack(r.lease);
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  }
  for (pid_t w : writers) EXPECT_EQ(wait_exit(w), 0);
  for (pid_t r : readers) EXPECT_EQ(wait_exit(r), 0);
  std::vector<std::string> theirs;
  for (int k = 0; k < 3; ++k) {
    std::ifstream in(trinity::strcat(dir, "/child_uids_", k, ".txt"));
    for (std::string l; std::getline(in, l);) theirs.push_back(l);
  }
  std::set<std::string> all;
  for (const auto& u : mine) EXPECT_TRUE(all.insert(u).second) << "duplicate " << u;
  for (const auto& u : theirs) EXPECT_TRUE(all.insert(u).second) << "duplicate " << u;
  // Batches are full-size only, so a few rows may remain; drain them to get the exact count.
  auto s = open_storage(sql_cfg(db));
  ReadRequest rest = req(1000000, 0.0);
  rest.allow_partial = true;
  ReadResult r = s->read(rest);
  for (const auto& e : r.batch) EXPECT_TRUE(all.insert(e.eid.uid()).second) << "duplicate " << e.eid.uid();
  EXPECT_EQ(all.size(), static_cast<size_t>(4 * kPerWriter));
  EXPECT_GT(mine.size(), 0u);
  EXPECT_GT(theirs.size(), 0u);
  StorageStats st = s->stats();
  EXPECT_EQ(st.total, 4 * kPerWriter);
}

TEST_P(BufferMultiProcess, WriterKilledMidTransactionLosesNothingCommitted) {
  const std::string dir = temp_dir("kill");
  const std::string db = target(dir, "k");
  { auto init = open_storage(sql_cfg(db)); }
  const int kBatch = 100;
  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t w = spawn([&] {
      ::close(fds[0]);
      auto s = open_storage(sql_cfg(db));
      for (int k = 0;; ++k) {
        std::vector<Experience> batch;
        for (int i = 0; i < kBatch; ++i) {
          Experience e = make_exp(i, 1024);
          e.eid.batch = trinity::strcat("r", round, "-", k);
          e.eid.task = i;
          batch.push_back(std::move(e));
        }
        s->write(batch);
        const int32_t done = k + 1;  // committed batches so far
        if (::write(fds[1], &done, sizeof done) != sizeof done) ::_exit(3);
      }
    });
    ::close(fds[1]);
    int32_t committed = 0, v;
    // Let it commit a few batches, then kill at a round-dependent moment (likely inside a transaction).
    while (committed < 2 + round && ::read(fds[0], &v, sizeof v) == sizeof v) committed = v;
    std::this_thread::sleep_for(std::chrono::milliseconds(7 + 13 * round));
    ::kill(w, SIGKILL);
    while (::read(fds[0], &v, sizeof v) == sizeof v) committed = v;
    ::close(fds[0]);
    EXPECT_EQ(wait_exit(w), 128 + SIGKILL);
    // Count this round's rows per batch: every batch is complete, none committed is missing.
    auto s = open_storage(sql_cfg(db));
    std::map<std::string, int> per_batch;
    for (int64_t off = 0;; off += 500) {
      std::vector<Experience> page = s->scan(off, 500);
      if (page.empty()) break;
      for (const auto& e : page) {
        ASSERT_EQ(e.tokens.size(), 1024u);
        if (e.eid.batch.rfind(trinity::strcat("r", round, "-"), 0) == 0) per_batch[e.eid.batch]++;
      }
    }
    EXPECT_GE(static_cast<int>(per_batch.size()), committed) << "round " << round;
    EXPECT_LE(static_cast<int>(per_batch.size()), committed + 1) << "round " << round;
    for (const auto& [b, n] : per_batch) EXPECT_EQ(n, kBatch) << "partial batch " << b;
  }
}

TEST_P(BufferMultiProcess, ReaderKilledMidBatchGetsBatchBackAfterLease) {
  const std::string dir = temp_dir("rkill");
  const std::string db = target(dir, "r");
  std::set<std::string> written;
  {
    auto s = open_storage(sql_cfg(db));
    std::vector<Experience> in;
    for (int i = 0; i < 8; ++i) {
      in.push_back(make_exp(i));
      written.insert(in.back().eid.uid());
    }
    s->write(in);
  }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t r = spawn([&] {
    ::close(fds[0]);
    auto s = open_storage(sql_cfg(db, /*lease=*/2.0));
    ReadResult got = s->read(req(8, 5.0));
    const int32_t n = static_cast<int32_t>(got.batch.size());
    if (::write(fds[1], &n, sizeof n) != sizeof n) ::_exit(3);
    ::pause();  // "training": killed before ack
  });
  ::close(fds[1]);
  int32_t n = 0;
  ASSERT_EQ(::read(fds[0], &n, sizeof n), static_cast<ssize_t>(sizeof n));
  ::close(fds[0]);
  EXPECT_EQ(n, 8);
  ::kill(r, SIGKILL);
  EXPECT_EQ(wait_exit(r), 128 + SIGKILL);
  auto s = open_storage(sql_cfg(db));
  EXPECT_EQ(s->read(req(1, 0.05)).status, ReadStatus::kTimeout);  // still leased
  const auto t0 = std::chrono::steady_clock::now();
  ReadResult back = s->read(req(8, 10.0));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(back.status, ReadStatus::kOk);
  EXPECT_LT(waited, 6.0);
  std::set<std::string> got;
  for (const auto& e : back.batch) {
    got.insert(e.eid.uid());
    EXPECT_EQ(e.use_count, 1);  // the dead reader's use was taken back
  }
  EXPECT_EQ(got, written);
}

TEST_P(BufferMultiProcess, ProcessesCreatingTheSameFreshBufferAgree) {
  const std::string dir = temp_dir("fresh");
  const std::string db = target(dir, "fresh");
  std::vector<pid_t> kids;
  for (int w = 0; w < 4; ++w) kids.push_back(spawn([&, w] { write_n(db, w, 50, 10); }));
  for (pid_t k : kids) EXPECT_EQ(wait_exit(k), 0);
  auto s = open_storage(sql_cfg(db));
  EXPECT_EQ(s->stats().total, 200);
  if (GetParam() == "sqlite") {
    EXPECT_EQ(sqlite_buffer_names(db), std::vector<std::string>{"exp"});
  }
}
