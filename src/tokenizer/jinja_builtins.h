// Jinja builtins (internal): operators, attribute/item lookup with Python string/list/dict
// methods, filters, tests and global functions. Helpers throw Fail with a bare message; the
// evaluator adds the template line and construct.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/jinja.h"

namespace trinity::tok::jinja {

struct Fail {
  std::string msg;
};

// Limits that keep a hostile template from hanging or exhausting memory (a clear error instead):
// rendered output, any one string or list value, and loop iterations over the whole render.
inline constexpr int64_t kMaxOutputBytes = int64_t{64} << 20;
inline constexpr int64_t kMaxValueItems = int64_t{16} << 20;  // string bytes or list items
inline constexpr int64_t kMaxLoopIterations = int64_t{1000} * 1000;

Array string_chars(const std::string& s);  // one string per code point
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
Value binary_op(const std::string& op, const Value& a, const Value& b);
Value apply_filter(const std::string& name, std::vector<Value>& args, const Kwargs& kwargs);
bool apply_test(const std::string& name, const std::vector<Value>& args);
std::unordered_map<std::string, Value> builtin_globals();

}  // namespace trinity::tok::jinja
