// Jinja evaluator (see jinja.h): scopes (for loops and macros open a scope, if does not), loop
// variables, Python operators and truthiness, attribute/item lookup with string/list/dict methods.
// Runtime errors carry the template line and the construct being evaluated.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_builtins.h"

namespace trinity::tok::jinja {

namespace {

using K = Node::Kind;
using Scope = std::unordered_map<std::string, Value>;

enum class Flow { Normal, Break, Continue };

std::string describe(const Node& n) {
  switch (n.kind) {
    case K::Name: return "variable '" + n.text + "'";
    case K::Attr: return "attribute '." + n.text + "'";
    case K::Index: return "subscript '[...]'";
    case K::Slice: return "slice '[a:b]'";
    case K::Call: return n.kids[0]->kind == K::Name   ? "call of '" + n.kids[0]->text + "()'"
                         : n.kids[0]->kind == K::Attr ? "call of method '" + n.kids[0]->text + "()'"
                                                      : "call";
    case K::Filter: return "filter '" + n.text + "'";
    case K::Test: return "test 'is " + n.text + "'";
    case K::Unary: return "operator '" + n.text + "'";
    case K::Binary: return "operator '" + n.text + "'";
    case K::For: return "'for' loop";
    case K::If: return "'if'";
    case K::Set: return "'set'";
    case K::Output: return "'{{ }}' output";
    default: return "expression";
  }
}

class Renderer {
 public:
  Renderer(const std::string& name, std::string& out, std::vector<GenerationSpan>* gen)
      : name_(name), out_(out), gen_(gen) {}

  std::vector<Scope> scopes;

  Flow exec(const Node& n) {
    switch (n.kind) {
      case K::Block:
        for (const auto& k : n.kids) {
          const Flow f = exec(*k);
          if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
      case K::Text:
        out_ += n.text;
        check_output(n);
        return Flow::Normal;
      case K::Output: {
        const Value v = eval(*n.kids[0]);
        out_ += v.str();
        check_output(n);
        return Flow::Normal;
      }
      case K::If:
        for (size_t i = 0; i + 1 < n.kids.size(); i += 2)
          if (eval(*n.kids[i]).truthy()) return exec(*n.kids[i + 1]);
        if (n.kids.size() % 2 == 1) return exec(*n.kids.back());
        return Flow::Normal;
      case K::For: return exec_for(n);
      case K::Set: {
        Value v = eval(*n.kids[0]);
        if (n.names.size() == 1) {
          scopes.back()[n.names[0]] = std::move(v);
        } else {
          const Value target = lookup(n.names[0]);
          if (!target.is_namespace())
            fail(n, strcat("cannot set attribute '", n.names[1], "' on '", n.names[0], "' (a ", target.type_name(),
                           "; only namespace() objects are assignable)"));
          target.set(n.names[1], std::move(v));
        }
        return Flow::Normal;
      }
      case K::SetBlock: {
        std::string saved;
        saved.swap(out_);
        exec(*n.kids[0]);
        saved.swap(out_);
        scopes.back()[n.names[0]] = Value(saved);
        return Flow::Normal;
      }
      case K::Macro: scopes.back()[n.text] = make_macro(n); return Flow::Normal;
      case K::Break: return Flow::Break;
      case K::Continue: return Flow::Continue;
      case K::Generation: {
        const size_t begin = out_.size();
        const Flow f = exec(*n.kids[0]);
        if (gen_) gen_->push_back({begin, out_.size()});
        return f;
      }
      default: fail(n, "internal: expression used as statement");
    }
  }

  [[noreturn]] void fail(const Node& n, const std::string& msg) const {
    throw ValueError("chat_template", strcat(name_, ":", n.line, ": ", describe(n), ": ", msg));
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return Value();
  }

  Value eval(const Node& n) {
    try {
      return eval_inner(n);
    } catch (const Fail& f) {
      fail(n, f.msg);
    }
  }

 private:
  Flow exec_for(const Node& n) {
    Value iter = eval(*n.kids[0]);
    Array items;
    switch (iter.type()) {
      case Value::Type::List: items = iter.array(); break;
      case Value::Type::Dict:
        for (const auto& [k, v] : iter.object()) items.emplace_back(k);
        break;
      case Value::Type::String: items = string_chars(iter.as_string()); break;
      case Value::Type::Undefined:
      case Value::Type::None: break;  // Jinja2 iterates an undefined value as empty
      default: fail(n, strcat("cannot iterate over a ", iter.type_name()));
    }
    const Node* filter = n.kids[3].get();
    scopes.emplace_back();
    if (filter) {  // the filter runs before loop.* is known, on each candidate item
      Array kept;
      for (const Value& item : items) {
        bind_targets(n, item);
        if (eval(*filter).truthy()) kept.push_back(item);
      }
      items.swap(kept);
    }
    Flow result = Flow::Normal;
    const int64_t len = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < len; ++i) {
      if (++loop_iterations_ > kMaxLoopIterations)
        fail(n, strcat("more than ", kMaxLoopIterations, " loop iterations in one render"));
      scopes.back().clear();
      bind_targets(n, items[static_cast<size_t>(i)]);
      Object loop{{"index", Value(i + 1)},
                  {"index0", Value(i)},
                  {"revindex", Value(len - i)},
                  {"revindex0", Value(len - i - 1)},
                  {"first", Value(i == 0)},
                  {"last", Value(i == len - 1)},
                  {"length", Value(len)},
                  {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value()},
                  {"nextitem", i + 1 < len ? items[static_cast<size_t>(i + 1)] : Value()}};
      const int64_t idx = i;
      loop.emplace_back("cycle", Value::function([idx](const std::vector<Value>& args, const Kwargs&) {
                          if (args.empty()) throw Fail{"loop.cycle() needs at least one argument"};
                          return args[static_cast<size_t>(idx) % args.size()];
                        }));
      scopes.back()["loop"] = Value(std::move(loop));
      const Flow f = exec(*n.kids[1]);
      if (f == Flow::Break) break;
    }
    if (len == 0) result = exec(*n.kids[2]);
    scopes.pop_back();
    return result == Flow::Normal ? Flow::Normal : result;
  }

  void bind_targets(const Node& n, const Value& item) {
    if (n.names.size() == 1) {
      scopes.back()[n.names[0]] = item;
      return;
    }
    if (!item.is_array() || item.array().size() != n.names.size())
      fail(n, strcat("cannot unpack a ", item.type_name(), " into ", n.names.size(), " loop variables"));
    for (size_t k = 0; k < n.names.size(); ++k) scopes.back()[n.names[k]] = item.array()[k];
  }

  Value make_macro(const Node& n) {
    const Node* node = &n;
    return Value::function([this, node](const std::vector<Value>& args, const Kwargs& kwargs) {
      if (macro_depth_ >= kMaxMacroDepth)
        throw Fail{strcat("macro '", node->text, "' recursion deeper than ", kMaxMacroDepth, " calls")};
      struct Depth {
        int& d;
        ~Depth() { --d; }
      } depth{++macro_depth_};
      if (args.size() > node->names.size())
        throw Fail{strcat("macro '", node->text, "' takes ", node->names.size(), " arguments, got ", args.size())};
      std::vector<Scope> saved = std::move(scopes);
      scopes.clear();
      scopes.push_back(saved.front());
      if (saved.size() > 1) scopes.push_back(saved[1]);
      Scope local;
      for (size_t i = 0; i < node->names.size(); ++i) {
        const std::string& p = node->names[i];
        Value v;
        if (i < args.size()) v = args[i];
        else if (node->kids[i + 1]) v = eval(*node->kids[i + 1]);
        for (const auto& [k, kv] : kwargs)
          if (k == p) v = kv;
        local[p] = v;
      }
      scopes.push_back(std::move(local));
      std::string saved_out;
      saved_out.swap(out_);
      try {
        exec(*node->kids[0]);
      } catch (...) {
        saved_out.swap(out_);
        scopes = std::move(saved);
        throw;
      }
      saved_out.swap(out_);
      scopes = std::move(saved);
      return Value(saved_out);
    });
  }

  Value eval_inner(const Node& n) {
    switch (n.kind) {
      case K::Literal: return n.value;
      case K::Name: return lookup(n.text);
      case K::Attr: {
        const Value obj = eval(*n.kids[0]);
        return get_attr(obj, n.text);
      }
      case K::Index: {
        const Value obj = eval(*n.kids[0]);
        return get_item(obj, eval(*n.kids[1]));
      }
      case K::Slice: {
        const Value obj = eval(*n.kids[0]);
        Value a = n.kids[1] ? eval(*n.kids[1]) : Value(), b = n.kids[2] ? eval(*n.kids[2]) : Value(),
              c = n.kids[3] ? eval(*n.kids[3]) : Value();
        return slice(obj, a, b, c);
      }
      case K::Call: {
        const Value fn = eval(*n.kids[0]);
        std::vector<Value> args;
        Kwargs kwargs;
        eval_args(n, 1, args, kwargs);
        if (fn.type() != Value::Type::Callable)
          throw Fail{strcat("'", n.kids[0]->kind == K::Name ? n.kids[0]->text : "value", "' is ",
                            fn.is_undefined() ? "undefined" : "a " + fn.type_name(), ", not callable")};
        return fn.func()(args, kwargs);
      }
      case K::Filter: {
        std::vector<Value> args;
        Kwargs kwargs;
        args.push_back(eval(*n.kids[0]));
        eval_args(n, 1, args, kwargs);
        return apply_filter(n.text, args, kwargs);
      }
      case K::Test: {
        std::vector<Value> args;
        for (size_t i = 0; i < n.kids.size(); ++i) args.push_back(eval(*n.kids[i]));
        const bool r = apply_test(n.text, args);
        return Value(n.flag ? !r : r);
      }
      case K::Unary: {
        const Value v = eval(*n.kids[0]);
        if (n.text == "not") return Value(!v.truthy());
        if (v.type() == Value::Type::Int) return Value(n.text == "-" ? -v.as_int() : v.as_int());
        if (v.type() == Value::Type::Float) return Value(n.text == "-" ? -v.as_double() : v.as_double());
        throw Fail{strcat("bad operand type for unary ", n.text, ": ", v.type_name())};
      }
      case K::Binary: {
        if (n.text == "and") {
          Value a = eval(*n.kids[0]);
          return a.truthy() ? eval(*n.kids[1]) : a;
        }
        if (n.text == "or") {
          Value a = eval(*n.kids[0]);
          return a.truthy() ? a : eval(*n.kids[1]);
        }
        const Value a = eval(*n.kids[0]);
        const Value b = eval(*n.kids[1]);
        return binary_op(n.text, a, b);
      }
      case K::Ternary:
        if (eval(*n.kids[1]).truthy()) return eval(*n.kids[0]);
        return n.kids[2] ? eval(*n.kids[2]) : Value();
      case K::List:
      case K::Tuple: {
        Array a;
        for (const auto& k : n.kids) a.push_back(eval(*k));
        return Value(std::move(a));
      }
      case K::Dict: {
        Value o{Object{}};
        for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
          const Value k = eval(*n.kids[i]);
          if (!k.is_string()) throw Fail{"dict literal keys must be strings"};
          o.set(k.as_string(), eval(*n.kids[i + 1]));
        }
        return o;
      }
      default: throw Fail{"internal: statement used as expression"};
    }
  }

  void eval_args(const Node& n, size_t first, std::vector<Value>& args, Kwargs& kwargs) {
    const size_t nkw = n.names.size();
    const size_t npos = n.kids.size() - first - nkw;
    for (size_t i = 0; i < npos; ++i) args.push_back(eval(*n.kids[first + i]));
    for (size_t i = 0; i < nkw; ++i) kwargs.emplace_back(n.names[i], eval(*n.kids[first + npos + i]));
  }

 private:
  void check_output(const Node& n) const {
    if (static_cast<int64_t>(out_.size()) > kMaxOutputBytes)
      fail(n, strcat("rendered output is over the limit of ", kMaxOutputBytes, " bytes"));
  }

  static constexpr int kMaxMacroDepth = 64;
  int macro_depth_ = 0;
  int64_t loop_iterations_ = 0;
  const std::string& name_;
  std::string& out_;
  std::vector<GenerationSpan>* gen_;
};

}  // namespace

Template::Template(const std::string& source, const std::string& name) : name_(name), root_(parse_template(source, name)) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context, std::vector<GenerationSpan>* generation) const {
  std::string out;
  Renderer r(name_, out, generation);
  Scope globals = builtin_globals();
  if (context.is_object())
    for (const auto& [k, v] : context.object()) globals[k] = v;
  else if (!context.is_undefined())
    throw ValueError("chat_template", "render: the context must be an object");
  r.scopes.push_back(std::move(globals));
  r.scopes.emplace_back();
  r.exec(*root_);
  return out;
}

}  // namespace trinity::tok::jinja
