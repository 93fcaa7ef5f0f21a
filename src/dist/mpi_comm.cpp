// The MPI communicator (see comm.h): non-blocking collectives on MPI_COMM_WORLD, completed by a
// polling loop that enforces the deadline (spinning for the first 2 s — OpenMPI progresses a
// transfer only inside MPI calls — then sleeping 100 us between tests so a rank waiting on a slow
// peer leaves its core to others; the open-ended wait for rank 0's next batch sleeps 1 ms after 20 ms). MPI runs with
// MPI_THREAD_SERIALIZED: the trainer may run on a thread other than main's, and a mutex keeps calls one at a time.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "dist/comm.h"

namespace trinity::dist {

namespace {

using Clock = std::chrono::steady_clock;

void check(int rc, const char* call, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error("dist", strcat(call, " failed during ", what, ": ", std::string(msg, static_cast<size_t>(len))));
}

class MpiComm final : public Comm {
 public:
  MpiComm() {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread", "start-up");
    if (provided < MPI_THREAD_SERIALIZED)
      throw UnsupportedError("dist",
                             "the MPI library does not support MPI_THREAD_SERIALIZED (the trainer calls MPI "
                             "from its own thread)");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    limit_ = timeout_s();
    bucket_ = bucket_floats();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }

  void allreduce_sum(float* data, int64_t n, const std::string& what) override {
    allreduce(data, n, MPI_FLOAT, bucket_, what);
  }
  void allreduce_sum(double* data, int64_t n, const std::string& what) override {
    allreduce(data, n, MPI_DOUBLE, bucket_ / 2, what);
  }

  void broadcast(std::string& bytes, int root, const std::string& what, bool wait_forever) override {
    std::lock_guard<std::mutex> g(mu_);
    uint64_t n = bytes.size();
    std::vector<MPI_Request> reqs(1);
    check(MPI_Ibcast(&n, 1, MPI_UINT64_T, root, MPI_COMM_WORLD, &reqs[0]), "MPI_Ibcast", what);
    wait(reqs, what, wait_forever ? 0.0 : limit_);
    if (rank_ != root) bytes.assign(n, '\0');
    reqs.clear();
    constexpr uint64_t kChunk = 1u << 30;
    for (uint64_t off = 0; off < n; off += kChunk) {
      reqs.emplace_back();
      check(MPI_Ibcast(bytes.data() + off, static_cast<int>(std::min(kChunk, n - off)), MPI_CHAR, root, MPI_COMM_WORLD,
                       &reqs.back()),
            "MPI_Ibcast", what);
    }
    wait(reqs, what, limit_);
  }

  void broadcast(float* data, int64_t n, int root, const std::string& what) override {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<MPI_Request> reqs;
    for (int64_t off = 0; off < n; off += bucket_) {
      reqs.emplace_back();
      check(MPI_Ibcast(data + off, static_cast<int>(std::min(bucket_, n - off)), MPI_FLOAT, root, MPI_COMM_WORLD,
                       &reqs.back()),
            "MPI_Ibcast", what);
    }
    wait(reqs, what, limit_);
  }

  std::vector<std::string> gather(const std::string& mine, int root, const std::string& what) override {
    std::lock_guard<std::mutex> g(mu_);
    if (mine.size() > static_cast<size_t>(INT_MAX))
      throw ValueError("dist", strcat(what, ": ", mine.size(), " bytes are too many to gather"));
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<size_t>(size_));
    std::vector<MPI_Request> reqs(1);
    check(MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, MPI_COMM_WORLD, &reqs[0]), "MPI_Igather", what);
    wait(reqs, what, limit_);
    std::vector<int> displs(static_cast<size_t>(size_), 0);
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[static_cast<size_t>(r)] = static_cast<int>(total);
      total += lens[static_cast<size_t>(r)];
    }
    std::string all(rank_ == root ? static_cast<size_t>(total) : 0, '\0');
    check(MPI_Igatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, root,
                       MPI_COMM_WORLD, &reqs[0]),
          "MPI_Igatherv", what);
    wait(reqs, what, limit_);
    std::vector<std::string> out;
    if (rank_ != root) return out;
    for (int r = 0; r < size_; ++r)
      out.push_back(all.substr(static_cast<size_t>(displs[static_cast<size_t>(r)]),
                               static_cast<size_t>(lens[static_cast<size_t>(r)])));
    return out;
  }

  void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }
  double comm_seconds() const override { return seconds_; }

 private:
  void allreduce(void* data, int64_t n, MPI_Datatype type, int64_t bucket, const std::string& what) {
    std::lock_guard<std::mutex> g(mu_);
    int elem = 0;
    MPI_Type_size(type, &elem);
    std::vector<MPI_Request> reqs;
    for (int64_t off = 0; off < n; off += bucket) {
      reqs.emplace_back();
      check(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + off * elem,
                           static_cast<int>(std::min(bucket, n - off)), type, MPI_SUM, MPI_COMM_WORLD, &reqs.back()),
            "MPI_Iallreduce", what);
    }
    wait(reqs, what, limit_);
  }

  // Completes `reqs`; limit <= 0 waits forever with a log line a minute.
  void wait(std::vector<MPI_Request>& reqs, const std::string& what, double limit) {
    if (reqs.empty()) return;
    const auto t0 = Clock::now();
    struct Account {  // adds the wait to seconds_ however it ends
      double& total;
      Clock::time_point t0;
      ~Account() { total += std::chrono::duration<double>(Clock::now() - t0).count(); }
    } account{seconds_, t0};
    double next_log = 60;
    for (int64_t spins = 0;; ++spins) {
      int done = 0;
      check(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall", what);
      if (done) return;
      const double el = std::chrono::duration<double>(Clock::now() - t0).count();
      if (limit > 0 && el > limit)
        throw Error("dist",
                    strcat("rank ", rank_, " of ", size_, ": ", what, " did not complete within ", limit,
                           " s (TRINITY_DIST_TIMEOUT): another rank is stopped, stuck or dead; ending the job"));
      if (limit <= 0 && el > next_log) {
        log::info("rank ", rank_, ": still waiting for ", what, " (", static_cast<int64_t>(el), " s)");
        next_log += 60;
      }
      // OpenMPI progresses a collective only inside MPI calls: spin while the peers are probably just
      // finishing their own compute; a wait with no deadline (the next batch) sleeps early.
      if (el > (limit > 0 ? 2.0 : 0.02)) std::this_thread::sleep_for(std::chrono::microseconds(limit > 0 ? 100 : 1000));
    }
  }

  int rank_ = 0, size_ = 1;
  double limit_ = 300;
  int64_t bucket_ = 1 << 22;
  double seconds_ = 0;
  std::mutex mu_;
};

}  // namespace

std::unique_ptr<Comm> make_mpi_comm() {
  return std::make_unique<MpiComm>();
}

void finalize_mpi() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Finalize();
}

}  // namespace trinity::dist
