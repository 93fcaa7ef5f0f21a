// Jinja AST shared by the parser and the evaluator (internal). One generic node type; the layout
// of `kids`/`names` per kind is documented at each enumerator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/jinja.h"

namespace trinity::tok::jinja {

struct Node {
  enum class Kind {
    // statements
    Block,       // kids: statements in order
    Text,        // text
    Output,      // kids[0]: expression
    If,          // kids: cond0, body0, cond1, body1, ... [, else_body]  (odd size -> has else)
    For,         // names: targets; kids: iter, body, else_body, filter (nullptr if none)
    Set,         // names: [var] or [namespace, attr]; kids[0]: value
    SetBlock,    // names: [var]; kids[0]: body
    Macro,       // text: name; names: params; kids[0]: body; kids[1..]: defaults (nullptr if none)
    Break,
    Continue,
    Generation,  // kids[0]: body
    // expressions
    Literal,     // value
    Name,        // text
    Attr,        // kids[0]: object; text: attribute
    Index,       // kids[0]: object; kids[1]: index
    Slice,       // kids[0]: object; kids[1..3]: start, stop, step (nullptr if omitted)
    Call,        // kids[0]: callee; kids[1..]: args then kwargs; names: kwarg names (last names.size() kids)
    Filter,      // text: filter; kids[0]: input; kids[1..]: args then kwargs; names: kwarg names
    Test,        // text: test; kids[0]: input; kids[1..]: args; flag: negated
    Unary,       // text: op ("not", "-", "+"); kids[0]
    Binary,      // text: op; kids[0], kids[1]
    Ternary,     // kids: then, cond, else (nullptr -> undefined)
    List,        // kids: items
    Tuple,       // kids: items
    Dict,        // kids: key0, value0, key1, value1, ...
  };
  Kind kind;
  int line = 0;
  std::string text;
  Value value;
  bool flag = false;
  std::vector<std::string> names;
  std::vector<std::unique_ptr<Node>> kids;

  Node(Kind k, int l) : kind(k), line(l) {}
};

// Parses template source into a Block node. Throws ConfigError "<name>:<line>: ..." on errors.
std::unique_ptr<Node> parse_template(const std::string& source, const std::string& name);

// Filter and test names the evaluator implements (checked at parse time).
bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

}  // namespace trinity::tok::jinja
