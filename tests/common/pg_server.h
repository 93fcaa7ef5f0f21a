// A throwaway PostgreSQL server for tests (Debian's postgresql package, installed by scripts/setup):
// initdb in a temp dir, pg_ctl start on a free loopback port with its socket in that dir, one database,
// trust auth; stopped and removed at process exit. As root, the server runs as the postgres user
// (initdb refuses root). pg_server() starts it once per test binary; url() is a postgresql:// URL.
// restart() stops and starts it on the same port and data (clients must reconnect).
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace trinity::test {

class PgServer {
 public:
  PgServer() {
    namespace fs = std::filesystem;
    for (const auto& e : fs::directory_iterator("/usr/lib/postgresql"))
      if (fs::exists(e.path() / "bin/initdb") && e.path().string() > bin_) bin_ = e.path().string();
    if (bin_.empty())
      throw std::runtime_error("no /usr/lib/postgresql/*/bin/initdb: install postgresql (scripts/setup)");
    bin_ += "/bin/";
    char tmpl[] = "/tmp/trinity-pg-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    as_root_ = geteuid() == 0;
    if (as_root_) run({"/bin/chown", "postgres:postgres", dir_}, false);
    port_ = free_port();
    run(as_postgres(
        {bin_ + "initdb", "-D", dir_ + "/data", "-A", "trust", "-U", "trinity", "--no-sync", "-E", "UTF8"}));
    start();
    run(as_postgres(
        {bin_ + "createdb", "-h", "127.0.0.1", "-p", std::to_string(port_), "-U", "trinity", "trinity_test"}));
  }
  ~PgServer() {
    run(as_postgres({bin_ + "pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "stop"}), false);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  std::string url() const { return "postgresql://trinity@127.0.0.1:" + std::to_string(port_) + "/trinity_test"; }
  int port() const { return port_; }
  void stop() { run(as_postgres({bin_ + "pg_ctl", "-D", dir_ + "/data", "-m", "fast", "-w", "stop"})); }
  void start() {
    run(as_postgres({bin_ + "pg_ctl", "-D", dir_ + "/data", "-l", dir_ + "/server.log", "-w", "-t", "60", "-o",
                     "-p " + std::to_string(port_) + " -k " + dir_ +
                         " -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200",
                     "start"}));
  }
  void restart() {
    stop();
    start();
  }

 private:
  std::vector<std::string> as_postgres(std::vector<std::string> argv) const {
    if (as_root_) argv.insert(argv.begin(), {"/sbin/runuser", "-u", "postgres", "--"});
    return argv;
  }
  // Runs argv (output to <dir>/commands.log); throws when it fails and `check`.
  void run(const std::vector<std::string>& argv, bool check = true) const {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string log = dir_ + "/commands.log";
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, a[0], &fa, nullptr, a.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    int st = 0;
    if (rc == 0) waitpid(pid, &st, 0);
    if (check && (rc != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0))
      throw std::runtime_error("postgres test server: '" + argv[as_root_ ? 4 : 0] + "' failed; see " + log);
  }
  static int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t n = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    close(fd);
    return ntohs(a.sin_port);
  }

  std::string bin_, dir_;
  bool as_root_ = false;
  int port_ = 0;
};

// One server per test binary, started on first use.
inline PgServer& pg_server() {
  static PgServer s;
  return s;
}

}  // namespace trinity::test
