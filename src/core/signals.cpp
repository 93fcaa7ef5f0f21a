// StopSignals: SIGINT / SIGTERM -> stop flag + self-pipe (see signals.h).
#include "core/signals.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/error.h"

namespace trinity {

namespace {

// Process-wide state the handler can reach: signal handlers take no context pointer.
std::atomic<bool> g_stop{false};
std::atomic<int> g_count{0}, g_first{0};
int g_pipe[2] = {-1, -1};
char g_message[256] = {0};
size_t g_message_len = 0;
struct sigaction g_old_int {
}, g_old_term{};
std::atomic<bool> g_active{false};

void on_signal(int sig) {
  if (g_count.fetch_add(1) > 0) _exit(128 + sig);
  g_first.store(sig);
  g_stop.store(true);
  if (g_message_len > 0) {
    const ssize_t w = write(2, g_message, g_message_len);
    (void)w;
  }
  const unsigned char b = static_cast<unsigned char>(sig);
  const ssize_t w = write(g_pipe[1], &b, 1);
  (void)w;
}

}  // namespace

StopSignals::StopSignals(std::string message) {
  if (g_active.exchange(true)) throw UnsupportedError("signals", "only one StopSignals may be active at a time");
  const std::string m =
      message.empty() ? std::string() : "\ntrinity: " + message + " (press Ctrl-C again to exit at once)\n";
  g_message_len = std::min(m.size(), sizeof g_message);
  std::memcpy(g_message, m.data(), g_message_len);
  g_stop.store(false), g_count.store(0), g_first.store(0);
  if (pipe(g_pipe) != 0) {
    g_active.store(false);
    throw IoError("signals", strcat("cannot create the signal pipe: ", std::strerror(errno)));
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  close(g_pipe[0]);
  close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
  g_active.store(false);
}

const std::atomic<bool>* StopSignals::flag() const {
  return &g_stop;
}

int StopSignals::signal_number() const {
  return g_first.load();
}

int StopSignals::wait() {
  unsigned char sig = 0;
  while (read(g_pipe[0], &sig, 1) < 0 && errno == EINTR) {
  }
  return sig;
}

void StopSignals::wake() {
  const unsigned char zero = 0;
  const ssize_t w = write(g_pipe[1], &zero, 1);
  (void)w;
}

}  // namespace trinity
