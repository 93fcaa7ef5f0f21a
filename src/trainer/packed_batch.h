// Rows of an ExperienceBatch -> the packed model batch the trainer runs forward/backward on. The
// packed batch has targets = next token only where that token is a response token (-1 elsewhere),
// so the model's logprob/entropy outputs, in row order, are exactly the response tokens of rows
// b0, b0+1, ... (the packed per-response-token layout ExperienceBatch::scatter/gather convert).
// With share_prompts, rows whose prompts are equal (GRPO's repeat_times samples of a task, a DPO
// pair) share them: the prompt but its last token becomes one packed sequence, placed before its
// first continuation, that each row continues (model::Batch::prefix). Its rows have no targets, so
// the outputs are the same response tokens in the same order, and the prompt is computed once
// instead of once per row, forward and backward (same logprobs and gradients up to summation order).
#pragma once

#include <cstdint>

#include "model/transformer.h"
#include "pipeline/experience_batch.h"

namespace trinity::trainer {

// Packed model batch of rows [b0, b1).
model::Batch packed_batch(const pipeline::ExperienceBatch& eb, int64_t b0, int64_t b1, bool share_prompts);

}  // namespace trinity::trainer
