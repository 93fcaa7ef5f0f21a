// A Jinja2 interpreter for Hugging Face chat templates (Qwen2.5, Qwen3, Llama 3/3.1, SmolLM, ...).
// Semantics follow Python Jinja2 as transformers configures it (trim_blocks, lstrip_blocks,
// loopcontrols, no trailing newline): statements if/elif/else, for (loop.*, else, filter, tuple
// unpacking), set (incl. namespace attributes and set blocks), macro, break/continue,
// generation; Python-like values and string/list/dict methods; filters and tests used by real
// templates. Errors name the template line and the construct: ConfigError for syntax, ValueError
// at render time (raise_exception included).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace trinity::tok::jinja {

class Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion-ordered like Python dicts
using Kwargs = std::vector<std::pair<std::string, Value>>;
using Function = std::function<Value(const std::vector<Value>& args, const Kwargs& kwargs)>;

// A dynamically typed template value. Arrays and objects have reference semantics (as in Python),
// so a namespace() mutated inside a loop is visible outside it.
class Value {
 public:
  enum class Type { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

  Value() = default;  // undefined
  static Value none();
  Value(bool b);
  Value(int v) : Value(static_cast<int64_t>(v)) {}
  Value(int64_t v);
  Value(double v);
  Value(const char* s) : Value(std::string(s)) {}
  Value(std::string s);
  Value(Array a);
  Value(Object o);
  static Value function(Function f);
  static Value namespace_(Object o);

  // Parses JSON text (objects keep key order); throws ValueError on invalid JSON.
  static Value from_json(const std::string& json_text);
  // Serializes like Python json.dumps(ensure_ascii=False) with indent < 0 meaning compact
  // (", " and ": " separators), as transformers' tojson filter.
  std::string to_json(int indent = -1, bool sort_keys = false) const;

  Type type() const { return type_; }
  bool is_undefined() const { return type_ == Type::Undefined; }
  bool is_none() const { return type_ == Type::None; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::List; }
  bool is_object() const { return type_ == Type::Dict; }
  bool is_number() const { return type_ == Type::Int || type_ == Type::Float; }
  bool is_namespace() const { return type_ == Type::Dict && ns_; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_double() const { return type_ == Type::Int ? static_cast<double>(i_) : f_; }
  const std::string& as_string() const { return *s_; }
  Array& array() const { return *a_; }
  Object& object() const { return *o_; }
  const Function& func() const { return *fn_; }

  // Object access: nullptr when the key is absent.
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v) const;

  bool truthy() const;
  std::string str() const;   // Python str(): None -> "None", True -> "True", lists as repr
  std::string repr() const;  // Python repr()
  std::string type_name() const;

 private:
  Type type_ = Type::Undefined;
  bool b_ = false;
  bool ns_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<std::string> s_;
  std::shared_ptr<Array> a_;
  std::shared_ptr<Object> o_;
  std::shared_ptr<Function> fn_;
};

bool operator==(const Value& a, const Value& b);

struct Node;
struct GenerationSpan {
  size_t begin, end;  // byte offsets in the rendered output of a {% generation %} block
};

class Template {
 public:
  // Parses the template; throws ConfigError "[chat_template] <name>:<line>: ..." on syntax errors.
  explicit Template(const std::string& source, const std::string& name = "chat_template");
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with the given variables (an object). raise_exception is predefined.
  std::string render(const Value& context, std::vector<GenerationSpan>* generation = nullptr) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::unique_ptr<Node> root_;
};

}  // namespace trinity::tok::jinja
