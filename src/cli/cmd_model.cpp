// Model commands: init-model, debug logprobs, debug grad, demo.
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"

namespace trinity::cli {
int cmd_init_model(const Argv&) { throw UnsupportedError("cli", "init-model: not implemented yet"); }
int cmd_debug_logprobs(const Argv&) { throw UnsupportedError("cli", "debug logprobs: not implemented yet"); }
int cmd_debug_grad(const Argv&) { throw UnsupportedError("cli", "debug grad: not implemented yet"); }
int cmd_demo(const Argv&) { throw UnsupportedError("cli", "demo: not implemented yet"); }
}  // namespace trinity::cli
