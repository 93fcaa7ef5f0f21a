// Assertion failure handler: prints the failed condition with file:line and aborts.
#include "core/error.h"

#include <cstdio>
#include <cstdlib>

namespace trinity::detail {

void assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "trinity: assertion failed: %s at %s:%d%s%s\n", cond, file, line,
               msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace trinity::detail
