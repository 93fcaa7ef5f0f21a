// The one-rank communicator, the choice of world(), and the TRINITY_DIST_* settings (see comm.h).
#include "dist/comm.h"

#include <cstdlib>
#include <memory>
#include <mutex>

#include "core/error.h"

namespace trinity::dist {

std::unique_ptr<Comm> make_mpi_comm();  // mpi_comm.cpp
void finalize_mpi();                    // mpi_comm.cpp

namespace {

class LocalComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* backend() const override { return "local"; }
  void allreduce_sum(float*, int64_t, const std::string&) override {}
  void allreduce_sum(double*, int64_t, const std::string&) override {}
  void broadcast(std::string&, int, const std::string&, bool) override {}
  void broadcast(float*, int64_t, int, const std::string&) override {}
  std::vector<std::string> gather(const std::string& mine, int, const std::string&) override { return {mine}; }
  void abort(int) override {}
  double comm_seconds() const override { return 0; }
};

int env_int(const char* name, int fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return end && *end == 0 ? static_cast<int>(v) : fallback;
}

double env_positive(const char* name, double fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (!end || *end != 0 || !(v > 0)) throw ConfigError("dist", strcat(name, "='", s, "': expected a positive number"));
  return v;
}

std::once_flag g_once;
std::unique_ptr<Comm> g_world;

}  // namespace

bool launched_distributed() {
  // OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE; PMIx launchers (srun, prterun) PMIX_RANK and a size.
  const int n = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", env_int("SLURM_NTASKS", 1)));
  return n > 1 && (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK"));
}

Comm& world() {
  std::call_once(g_once, [] {
    if (launched_distributed())
      g_world = make_mpi_comm();
    else
      g_world = std::make_unique<LocalComm>();
  });
  return *g_world;
}

void end_job(int rc) {
  if (!g_world || g_world->size() <= 1) return;
  if (rc == 0 || rc == 130)
    finalize_mpi();
  else
    g_world->abort(rc);
}

double timeout_s() {
  return env_positive("TRINITY_DIST_TIMEOUT", 300.0);
}

int64_t bucket_floats() {
  return static_cast<int64_t>(env_positive("TRINITY_DIST_BUCKET_MB", 16.0) * (1 << 20) / sizeof(float));
}

}  // namespace trinity::dist
