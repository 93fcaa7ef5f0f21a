// Qwen2.5-Math answer checking (rewards/qwen25_eval.h) and Python's text forms
// (rewards/py_json.h). Expected values were produced by upstream's qwen25_eval.py and word2number
// under CPython (cases that reach sympy's LaTeX parser excepted: those are marked), plus upstream's
// own eval_utils_test.py cases.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "workflow/rewards/py_json.h"
#include "workflow/rewards/qwen25_eval.h"

namespace trinity::workflow {
namespace {

struct Opt {
  std::string in;
  std::optional<std::string> out;
};

TEST(Qwen25Eval, ExtractAnswerMatchesUpstream) {
  const std::vector<Opt> cases = {
      {"The answer is \\boxed{42}", "42"},
      {"The result is \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"},
      {"Therefore, the final answer is 100.", "100"},
      {"My final answer is: 3.14", "3.14"},
      {"所以，答案是x^2", "x^2"},
      {"The cost is 10 dollars and the profit is 20 dollars.", "20"},
      {"There are 1,000 apples and 2,000 oranges.", "2000"},
      {"The probability is 0.75.", "0.75"},
      {"This sentence has no answer.", std::nullopt},
      {"The box is empty \\boxed{}", std::nullopt},
      {"so \\boxed{\\dfrac{3}{4}} done", "\\frac{3}{4}"},
      {"\\boxed 5", "5"},
      {"\\boxed{12", "12"},
      {"the answer is\n\n  7 apples", "7"},
      {"THE ANSWER IS 12.", "12"},
      {"bathe answer is 9", "9"},
      {"x \\boxed{\\text{5 cm}}", "5"},
      {"\\boxed{x = 3}", "3"},
      {"\\boxed{5.00}", "5"},
      {"\\boxed{\\left( 1, 2 \\right)}", "1,2"},
      {"\\boxed{1/2}", "\\frac{1}{2}"},
      {"\\boxed{\\sqrt2}", "\\sqrt{2}"},
      {"\\boxed{\\frac12}", "\\frac{1}{2}"},
      {"\\boxed{50\\%}", "50\\"},
      {"\\boxed{\\$10}", "10"},
      {"\\boxed{twenty three}", "23"},
      {"\\boxed{two thousand five hundred}", "2500"},
      {"\\boxed{three point five}", "3.5"},
      {"\\boxed{007}", "7"},
      {"\\boxed{10 mph}", "10"},
      {"\\boxed{apple}", "apple"},
      {"\\boxed{\\infty}", "\\\\inftyty"},
      {"\\boxed{.5}", "0.5"},
      {"\\boxed{\\begin{array}{cc} 1 & 2 \\end{array}}", "\\begin{pmatrix}1&2\\end{pmatrix}"},
      {"\\boxed{\\mbox{hi}7}", "7"},
      {"answer: boxed", std::nullopt},
      {"-5 and +7.5 and 3.", "3"},
      {"no digits here", std::nullopt},
      {"\\boxed{one million two thousand}", "1002000"},
      {"\\boxed{\\text{(A)}}", "A"},
      {"\\boxed{x^{\\circ}}", "x"},
      {"\\boxed{90^\\circ}", "90"},
      {"\\boxed{\\{1,2\\}}", "1,2"},
      {"\\boxed{a \\neq b}", "\\neb"},
  };
  for (const auto& c : cases) {
    const auto got = qwen25::extract_answer(c.in);
    EXPECT_EQ(got, c.out) << "input: " << c.in << " got: " << got.value_or("<None>");
  }
}

TEST(Qwen25Eval, MathEqualMatchesUpstream) {
  struct Case {
    std::string a, b;
    bool eq;
  };
  const std::vector<Case> cases = {
      {"42", "42.0", true},
      {"50", "0.5", true},
      {"0.5", "50", true},
      {"1,000", "1000", true},
      {"[1,2)", "[1.0,2)", true},
      {"y=2", "2", true},
      {"2", "x=2", true},
      {"abc=2", "2", false},
      {"\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix}1&2.0\\\\3&4\\end{pmatrix}", true},
      {"3.14159", "3.1416", true},
      {"3.14", "3.15", false},
      {"1e3", "1000", true},
      {"-50", "50", false},
  };
  for (const auto& c : cases) EXPECT_EQ(qwen25::math_equal(c.a, c.b), c.eq) << c.a << " vs " << c.b;
  EXPECT_FALSE(qwen25::math_equal(std::nullopt, std::string("1")));
  EXPECT_FALSE(qwen25::math_equal(std::nullopt, std::nullopt));
}

TEST(Qwen25Eval, WordToNumMatchesWord2Number) {
  const std::vector<Opt> cases = {
      {"twenty three", "23"},
      {"one hundred five", "105"},
      {"two thousand five hundred", "2500"},
      {"three point five", "3.5"},
      {"007", "7"},
      {"hello", std::nullopt},
      {"point", "0"},
      {"one million two thousand", "1002000"},
      {"two million three hundred thousand", "2300000"},
      {"nine billion", "9000000000"},
      {"one point two x", "1.2"},
      {"thousand thousand", std::nullopt},
      {"five hundred", "500"},
  };
  for (const auto& c : cases) EXPECT_EQ(qwen25::word_to_num(c.in), c.out) << c.in;
}

// upstream tests/utils/eval_utils_test.py::test_verify_math_answer
TEST(Qwen25Eval, VerifyMathAnswerUpstreamCases) {
  struct Case {
    std::string response, truth;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"The answer is \\boxed{42}", "42", true},
      {"The result is 1,000.", "1000", true},
      {"The answer is -50.", "-50", true},
      {"The solution is 5", "x=5", true},
      {"The answer is \\boxed{42}", "43", false},
      {"The answer is \\boxed{x+1}", "x-1", false},
      {"The matrix is \\boxed{\\begin{pmatrix}1 & 1 \\\\ 0 & 1\\end{pmatrix}}",
       "\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}", false},
      {"The speed is 50 km/h", "50", true},
      // GSM8K-style gold answers: the last number after "####".
      {"so \\boxed{72}", "Natalia sold 48/2 = 24 clips in May.\n#### 72", true},
      {"so \\boxed{71}", "Natalia sold 48/2 = 24 clips in May.\n#### 72", false},
      // Percent conversions and the 1e-4 relative tolerance.
      {"\\boxed{0.25}", "25", true},
      {"\\boxed{3.1416}", "3.14159", true},
  };
  for (const auto& c : cases)
    EXPECT_EQ(qwen25::verify_math_answer(c.response, c.truth), c.ok ? 1.0 : 0.0) << c.response << " vs " << c.truth;
}

// Upstream's last resort is sympy (parse_latex + simplify); ours compares plain numeric values.
TEST(Qwen25Eval, SymbolicStandInComparesValues) {
  EXPECT_TRUE(qwen25::math_equal(std::string("\\frac{1}{2}"), std::string("0.5")));      // sympy: True
  EXPECT_TRUE(qwen25::math_equal(std::string("2\\sqrt{2}"), std::string("\\sqrt{8}")));  // sympy: True
  EXPECT_FALSE(qwen25::math_equal(std::string("\\frac{1}{3}"), std::string("0.33")));    // sympy: False
  EXPECT_FALSE(qwen25::math_equal(std::string("x+1"), std::string("x-1")));
}

TEST(PyJson, FloatReprAndDumps) {
  EXPECT_EQ(py::float_repr(3.0), "3.0");
  EXPECT_EQ(py::float_repr(0.1), "0.1");
  EXPECT_EQ(py::float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(py::float_repr(1e16), "1e+16");
  EXPECT_EQ(py::float_repr(1e-5), "1e-05");
  EXPECT_EQ(py::float_repr(0.0001), "0.0001");
  EXPECT_EQ(py::float_repr(-2.5), "-2.5");
  const auto j = nlohmann::ordered_json::parse(R"({"b": [1, 2.0, null, true], "a": "Zürich 😀 \"q\"\n"})");
  EXPECT_EQ(py::json_dumps(j), R"({"b": [1, 2.0, null, true], "a": "Z\u00fcrich \ud83d\ude00 \"q\"\n"})");
  EXPECT_EQ(py::json_dumps(j, true), R"({"a": "Z\u00fcrich \ud83d\ude00 \"q\"\n", "b": [1, 2.0, null, true]})");
  EXPECT_EQ(py::json_dumps(nlohmann::ordered_json::parse("{}")), "{}");
  EXPECT_EQ(py::json_dumps(nlohmann::ordered_json::parse("[]")), "[]");
}

}  // namespace
}  // namespace trinity::workflow
