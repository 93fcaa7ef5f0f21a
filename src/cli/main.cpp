// trinity main: dispatches to subcommands; turns any trinity::Error into one line on stderr and
// exit code 1 (2 for usage errors).
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/names.h"
#include "dist/comm.h"

namespace {

using trinity::cli::Argv;

struct Command {
  const char* name;  // may contain a space: "debug logprobs"
  int (*fn)(const Argv&);
  const char* help;
};

const Command kCommands[] = {
    {"buffer stats", trinity::cli::cmd_buffer_stats, "counts by status / model version, reward histogram"},
    {"buffer head", trinity::cli::cmd_buffer_head, "print the first experiences of a buffer"},
    {"buffer export", trinity::cli::cmd_buffer_export, "export a buffer to lossless JSONL"},
    {"run", trinity::cli::cmd_run, "run a config: all stages, in their modes (both/explore/train/bench)"},
    {"bench", trinity::cli::cmd_bench, "evaluate the base model and every checkpoint of a config's (last) stage"},
    {"config check", trinity::cli::cmd_config_check, "validate a config; print it fully resolved and its warnings"},
    {"demo", trinity::cli::cmd_demo, "train a small model on a pattern, then generate from it"},
    {"init-model", trinity::cli::cmd_init_model, "write a random-init HF checkpoint"},
    {"make-data", trinity::cli::cmd_make_data,
     "write a synthetic data set (arithmetic: train/eval/sft JSONL; frozen_lake: train/eval maps)"},
    {"data process", trinity::cli::cmd_data_process,
     "run a config's data_processor.task_pipeline: filter, score and order a taskset; write it and a report"},
    {"data annotate", trinity::cli::cmd_data_annotate,
     "pairwise-preference labelling: generate pairs, serve a labelling API, export DPO data"},
    {"serve", trinity::cli::cmd_serve, "OpenAI-compatible HTTP server over the generation engine"},
    {"studio", trinity::cli::cmd_studio, "web UI: runs, live dashboards, rollouts, config, chat, labelling"},
    {"tokenize", trinity::cli::cmd_tokenize, "tokenize JSONL text / chat messages with a HF tokenizer dir"},
    {"debug logprobs", trinity::cli::cmd_debug_logprobs, "per-token logprobs and entropy of token sequences"},
    {"debug workflow", trinity::cli::cmd_debug_workflow,
     "run one task's workflow once; print conversation, reward, logprobs"},
    {"debug grad", trinity::cli::cmd_debug_grad, "gradient of -sum(logprobs) for every parameter"},
    {"export merge", trinity::cli::cmd_export_merge, "merge a PEFT LoRA adapter into its base: a plain HF model"},
    {"debug loss", trinity::cli::cmd_debug_loss,
     "run an algorithm on one batch: loss, advantages, dloss/dlogprob, metrics"},
    {"version", trinity::cli::cmd_version, "version, git commit, build flags, BLAS library (also --version)"},
};

void usage(FILE* f) {
  std::fprintf(f, "usage: trinity <command> [flags]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(f, "  %-18s %s\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--version" || args[0] == "-V")) args[0] = "version";
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    usage(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const Command* found = nullptr;
  size_t consumed = 0;
  for (const auto& c : kCommands) {
    const std::string name = c.name;
    const auto sp = name.find(' ');
    if (sp == std::string::npos) {
      if (args[0] == name) found = &c, consumed = 1;
    } else if (args.size() >= 2 && args[0] == name.substr(0, sp) && args[1] == name.substr(sp + 1)) {
      found = &c, consumed = 2;
    }
    if (found) break;
  }
  if (!found) {  // a command group ("trinity buffer [--help]"): list its commands
    std::string group;
    for (const auto& c : kCommands) {
      const std::string name = c.name;
      if (name.rfind(args[0] + " ", 0) == 0) group += "  " + name + "  " + c.help + "\n";
    }
    if (!group.empty()) {
      const bool help = args.size() >= 2 && (args[1] == "--help" || args[1] == "-h");
      std::fprintf(help ? stdout : stderr, "usage: trinity %s <command> [flags]\n\ncommands:\n%s", args[0].c_str(),
                   group.c_str());
      return help ? 0 : 2;
    }
  }
  if (!found) {
    std::vector<std::string> names;
    for (const auto& c : kCommands) {
      const std::string name = c.name;
      names.push_back(name.substr(0, name.find(' ')));
    }
    const std::string near = trinity::closest_name(args[0], names);
    std::fprintf(stderr, "trinity: unknown command '%s'%s\n", args[0].c_str(),
                 near.empty() ? "" : (" (did you mean '" + near + "'?)").c_str());
    usage(stderr);
    return 2;
  }
  int rc = 0;
  try {
    rc = found->fn(Argv(args.begin() + static_cast<long>(consumed), args.end()));
  } catch (const trinity::cli::HelpRequested& h) {
    std::fputs(h.usage.c_str(), stdout);
  } catch (const trinity::Error& e) {
    std::fprintf(stderr, "trinity: error: %s\n", e.what());
    rc = 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "trinity: error: [memory] out of memory (a model, KV cache or data set too large for this "
                 "machine's RAM; try a smaller model, batch or max_model_len)\n");
    rc = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trinity: internal error: %s\n", e.what());
    rc = 1;
  }
  std::fflush(stderr);
  trinity::dist::end_job(rc);  // under mpirun: a failed rank ends the whole job
  return rc;
}
