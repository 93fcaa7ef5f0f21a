// calculator: evaluates an arithmetic expression for tool-using workflows (react_workflow's optional
// second tool). Numbers (decimal, exponent), + - * / % and ** (or ^, right-associative), unary signs,
// parentheses (nested at most 64 deep), and sqrt / abs / floor / ceil / round / log / exp. The result
// prints like Python's repr of a float that is an integer ("12") or with 15 significant digits; a
// malformed expression or a math error (division by zero, sqrt(-1)) is an error result for the model.
#pragma once

#include <optional>
#include <string>

#include "workflow/tools/tool.h"

namespace trinity::workflow {

// The value of `expr`, or nullopt with `error` set.
std::optional<double> evaluate_expression(const std::string& expr, std::string& error);

class CalculatorTool : public Tool {
 public:
  std::string name() const override { return "calculator"; }
  std::string schema_json() const override;
  // {"expression": "..."}
  ToolResult call(const std::string& arguments_json) override;
};

}  // namespace trinity::workflow
