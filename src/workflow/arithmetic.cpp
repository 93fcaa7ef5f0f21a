// arithmetic_workflow and the arithmetic data generators (see arithmetic.h).
#include "workflow/arithmetic.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "core/file.h"
#include "core/rng.h"
#include "core/text.h"
#include "workflow/builtins.h"
#include "workflow/simple_workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

void check_digits(int digits) {
  if (digits < 1 || digits > 9) throw ValueError("arithmetic", strcat("digits must be in 1..9, got ", digits));
}

int64_t operand(Rng& rng, int digits) {
  int64_t lo = 1, hi = 10;
  for (int i = 1; i < digits; ++i) lo *= 10, hi *= 10;
  if (digits == 1) lo = 0;
  return lo + static_cast<int64_t>(rng.below(static_cast<uint64_t>(hi - lo)));
}

class ArithmeticWorkflow : public Workflow {
 public:
  explicit ArithmeticWorkflow(const buffer::Task& task) : task_(task) {
    WorkflowArgs wa("arithmetic_workflow", task.workflow_args, {"plain_text"});
    plain_text_ = wa.get_bool("plain_text", false);
    if (!task.task_desc.empty()) {
      prompt_ = task.task_desc;
      answer_ = trim(task.truth);
      if (answer_.empty()) {  // derive the sum from "a+b="
        const size_t plus = prompt_.find('+');
        try {
          if (plus == std::string::npos) throw std::invalid_argument("no +");
          answer_ = std::to_string(std::stoll(prompt_.substr(0, plus)) + std::stoll(prompt_.substr(plus + 1)));
        } catch (const std::exception&) {
          throw ValueError("workflow", strcat("arithmetic_workflow: task has no truth and its prompt '", prompt_,
                                              "' is not of the form a+b="));
        }
      }
    } else {
      json raw;
      try {
        raw = json::parse(task.raw.empty() ? "{}" : task.raw);
      } catch (const json::exception& e) {
        throw ValueError("workflow", strcat("arithmetic_workflow: task row is not JSON: ", e.what()));
      }
      if (!raw.is_object() || !raw.contains("a") || !raw.contains("b") || !raw["a"].is_number_integer() ||
          !raw["b"].is_number_integer())
        throw ValueError("workflow", strcat("arithmetic_workflow: task needs a prompt (\"12+34=\") or integer keys "
                                            "\"a\" and \"b\", got ", task.raw.substr(0, 200)));
      const int64_t a = raw["a"].get<int64_t>(), b = raw["b"].get<int64_t>();
      prompt_ = strcat(a, "+", b, "=");
      answer_ = std::to_string(a + b);
    }
  }
  bool can_repeat() const override { return true; }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    TRINITY_ASSERT(ctx.model != nullptr, "arithmetic_workflow: run without a model");
    const GenOptions opt = gen_options_for(task_, std::max<int64_t>(1, ctx.repeat_times), ctx.rng);
    // Chat by default, so the rollouts are formatted exactly like SFT demonstrations of plaintext
    // rows (which go through the chat template); workflow_args {"plain_text": true} samples a raw
    // completion of "a+b=" instead (base models without a template).
    std::vector<Sample> samples;
    if (plain_text_) {
      samples = ctx.model->generate(prompt_, opt);
    } else {
      const json msgs = json::array({{{"role", "user"}, {"content", prompt_}}});
      samples = ctx.model->chat(msgs.dump(), opt);
    }
    std::vector<buffer::Experience> out;
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      buffer::Experience e = experience_from_sample(s, *ctx.model, ctx.run_id_base + static_cast<int64_t>(i));
      const bool ok = s.finish_reason == "stop" && trim(s.text) == answer_;
      e.reward = ok ? 1.0 : 0.0;
      e.metrics["accuracy"] = ok ? 1.0 : 0.0;
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  buffer::Task task_;
  std::string prompt_, answer_;
  bool plain_text_ = false;
};

void write_lines(const std::string& path, const std::vector<json>& rows) {
  std::string text;
  for (const auto& r : rows) text += r.dump() + "\n";
  file::write_atomic(path, text);
}

// A carry out of any column but the leading one (whose full sum is written anyway).
bool has_lower_carry(int64_t a, int64_t b) {
  while (a / 10 > 0 || b / 10 > 0) {
    if (a % 10 + b % 10 >= 10) return true;
    a /= 10, b /= 10;
  }
  return false;
}

}  // namespace

int64_t sum_without_carry(int64_t a, int64_t b) {
  int64_t out = 0, place = 1;
  while (a > 0 || b > 0) {
    const int64_t col = a % 10 + b % 10;
    const bool leading = a / 10 == 0 && b / 10 == 0;
    out += (leading ? col : col % 10) * place;
    a /= 10, b /= 10, place *= 10;
  }
  return out;
}

void write_arithmetic_taskset(const std::string& path, int64_t n, uint64_t seed, int digits) {
  check_digits(digits);
  if (n < 0) throw ValueError("arithmetic", strcat("row count must be >= 0, got ", n));
  Rng rng(seed);
  std::vector<json> rows;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t a = operand(rng, digits), b = operand(rng, digits);
    rows.push_back({{"prompt", strcat(a, "+", b, "=")}, {"answer", std::to_string(a + b)}});
  }
  write_lines(path, rows);
}

void write_arithmetic_sft(const std::string& path, int64_t n, double correct_fraction, uint64_t seed, int digits) {
  check_digits(digits);
  if (n < 0) throw ValueError("arithmetic", strcat("row count must be >= 0, got ", n));
  if (!(correct_fraction >= 0.0 && correct_fraction <= 1.0))
    throw ValueError("arithmetic", strcat("correct fraction must be in [0, 1], got ", correct_fraction));
  Rng rng(seed);
  const auto n_correct = static_cast<int64_t>(std::llround(static_cast<double>(n) * correct_fraction));
  std::vector<uint8_t> correct(static_cast<size_t>(n), 0);
  std::fill(correct.begin(), correct.begin() + n_correct, 1);
  for (int64_t i = n - 1; i > 0; --i)  // Fisher-Yates
    std::swap(correct[static_cast<size_t>(i)], correct[rng.below(static_cast<uint64_t>(i + 1))]);
  std::vector<json> rows;
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = operand(rng, digits), b = operand(rng, digits);
    const bool ok = correct[static_cast<size_t>(i)] != 0;
    if (!ok)
      while (!has_lower_carry(a, b)) a = operand(rng, digits), b = operand(rng, digits);
    const int64_t resp = ok ? a + b : sum_without_carry(a, b);
    rows.push_back({{"prompt", strcat(a, "+", b, "=")}, {"response", std::to_string(resp)}});
  }
  write_lines(path, rows);
}

void detail::register_arithmetic_workflow() {
  add_builtin("arithmetic_workflow",
              [](const buffer::Task& t) -> std::unique_ptr<Workflow> { return std::make_unique<ArithmeticWorkflow>(t); });
}

}  // namespace trinity::workflow
