// `mode: serve` (see serve_mode.cpp): the OpenAI endpoint that records its traffic, takes rewards
// through /feedback and turns them into experiences on /commit. Private to the launcher.
#pragma once

#include <atomic>

#include "config/config.h"
#include "launcher/launcher.h"

namespace trinity::launcher {

// Serves until *stop; returns the number of commits as explore_steps.
StageSummary run_serve(const config::Config& c, const std::atomic<bool>* stop);

}  // namespace trinity::launcher
