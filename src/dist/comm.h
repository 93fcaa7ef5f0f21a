// Comm: the collectives a data-parallel trainer needs (all-reduce of gradients, broadcast of batches
// and weights, gather of metrics), each with a deadline, so a rank that stops answering ends the job
// with an error instead of hanging it. world() is the process's communicator: an MPI one when the
// process was started by mpirun (OMPI_COMM_WORLD_SIZE / PMIX_RANK in the environment), else a
// one-rank communicator whose collectives are no-ops. The interface is the backend seam: NCCL on
// GPUs implements the same calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trinity::dist {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;  // "local" or "mpi"
  // In-place sum over ranks of data[0..n), in buckets of bucket_floats() (one non-blocking
  // all-reduce each, all in flight together). `what` names the operation in a timeout error.
  virtual void allreduce_sum(float* data, int64_t n, const std::string& what) = 0;
  virtual void allreduce_sum(double* data, int64_t n, const std::string& what) = 0;
  // Root's bytes to every rank. wait_forever: no deadline (a follower waiting for the next batch while
  // rank 0 waits for the explorer), but a log line every minute says who waits for what.
  virtual void broadcast(std::string& bytes, int root, const std::string& what, bool wait_forever = false) = 0;
  virtual void broadcast(float* data, int64_t n, int root, const std::string& what) = 0;
  // Every rank's string at root, in rank order (empty on the other ranks).
  virtual std::vector<std::string> gather(const std::string& mine, int root, const std::string& what) = 0;
  // Ends every rank of the job (MPI_Abort); for main()'s error path only.
  virtual void abort(int code) = 0;
  // Seconds this rank spent inside collectives so far (waiting included), for benchmarks and metrics.
  virtual double comm_seconds() const = 0;
};

// The process's communicator; the first call decides (see the header comment) and initialises MPI.
Comm& world();
// True when this process was started by mpirun / srun with more than one rank.
bool launched_distributed();
// The end of main(): with MPI started, rc 0 (or 130, a clean stop) shuts MPI down; any other code
// aborts the whole job (MPI_Abort), so the other ranks end now instead of waiting out a deadline.
// A no-op when MPI was never started.
void end_job(int rc);
// Seconds a collective may wait for the other ranks (TRINITY_DIST_TIMEOUT, default 300).
double timeout_s();
// Floats per all-reduce bucket (TRINITY_DIST_BUCKET_MB, default 16 MiB = 4 Mi floats).
int64_t bucket_floats();

}  // namespace trinity::dist
