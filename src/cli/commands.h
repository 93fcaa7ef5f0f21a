// Subcommand entry points of the `trinity` binary. Each takes the arguments after its name and
// returns the process exit code; errors are thrown as trinity::Error and reported by main().
#pragma once

#include <string>
#include <vector>

namespace trinity::cli {

using Argv = std::vector<std::string>;

int cmd_init_model(const Argv& args);
int cmd_debug_logprobs(const Argv& args);
int cmd_debug_grad(const Argv& args);
int cmd_debug_loss(const Argv& args);
int cmd_demo(const Argv& args);
int cmd_buffer_stats(const Argv& args);
int cmd_buffer_head(const Argv& args);
int cmd_buffer_export(const Argv& args);
int cmd_tokenize(const Argv& args);
int cmd_serve(const Argv& args);
int cmd_studio(const Argv& args);
int cmd_make_data(const Argv& args);
int cmd_data_annotate(const Argv& args);
int cmd_data_process(const Argv& args);
int cmd_config_check(const Argv& args);
int cmd_run(const Argv& args);
int cmd_bench(const Argv& args);
int cmd_debug_workflow(const Argv& args);
int cmd_version(const Argv& args);
int cmd_export_merge(const Argv& args);

}  // namespace trinity::cli
