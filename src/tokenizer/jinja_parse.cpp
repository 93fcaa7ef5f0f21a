// Jinja lexer + recursive-descent parser (see jinja_ast.h). Whitespace control follows Jinja2 with
// transformers' settings: `{%-`/`-%}` strip all whitespace on that side, lstrip_blocks removes
// spaces/tabs before a block or comment tag that starts a line, trim_blocks removes the newline
// after a block or comment tag, and one trailing newline of the source is dropped. Operator
// precedence is Jinja2's: ternary < or < and < not < compare < ~ < +- < */ //% < ** < unary <
// filters/tests < postfix.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "tokenizer/jinja_ast.h"

namespace trinity::tok::jinja {

namespace {

struct Tok {
  enum T { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof } t;
  std::string s;
  int line;
  int64_t i = 0;
  double f = 0;
};

const char* tok_desc(Tok::T t) {
  switch (t) {
    case Tok::Text: return "text";
    case Tok::VarBegin: return "'{{'";
    case Tok::VarEnd: return "'}}'";
    case Tok::BlockBegin: return "'{%'";
    case Tok::BlockEnd: return "'%}'";
    case Tok::Name: return "name";
    case Tok::String: return "string";
    case Tok::Int: return "integer";
    case Tok::Float: return "float";
    case Tok::Op: return "operator";
    case Tok::Eof: return "end of template";
  }
  return "?";
}

std::string show(const Tok& t) {
  if (t.t == Tok::Name || t.t == Tok::Op) return "'" + t.s + "'";
  if (t.t == Tok::String) return "string '" + t.s + "'";
  return tok_desc(t.t);
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class Lexer {
 public:
  Lexer(const std::string& src, const std::string& name) : src_(src), name_(name) {
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();  // keep_trailing_newline=False
  }

  std::vector<Tok> run() {
    size_t pos = 0;
    bool strip_next = false;
    while (pos < src_.size()) {
      size_t p = pos;
      while (true) {
        p = src_.find('{', p);
        if (p == std::string::npos || p + 1 >= src_.size()) { p = std::string::npos; break; }
        const char c = src_[p + 1];
        if (c == '{' || c == '%' || c == '#') break;
        ++p;
      }
      const size_t text_end = p == std::string::npos ? src_.size() : p;
      size_t tb = pos, te = text_end;
      if (strip_next)
        while (tb < te && is_ws(src_[tb])) ++tb;
      strip_next = false;
      if (p != std::string::npos) {
        const char kind = src_[p + 1];
        const char mod = p + 2 < src_.size() ? src_[p + 2] : '\0';
        if (mod == '-') {
          while (te > tb && is_ws(src_[te - 1])) --te;
        } else if ((kind == '%' || kind == '#') && mod != '+') {
          size_t j = te;
          while (j > tb && (src_[j - 1] == ' ' || src_[j - 1] == '\t')) --j;
          if (j == 0 || src_[j - 1] == '\n') te = j;  // lstrip_blocks: only from a line start
        }
      }
      if (te > tb) push(Tok::Text, src_.substr(tb, te - tb), tb);
      if (p == std::string::npos) break;
      pos = lex_tag(p, strip_next);
    }
    toks_.push_back({Tok::Eof, "", line_at(src_.size())});
    return std::move(toks_);
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& msg) const {
    throw ConfigError("chat_template", strcat(name_, ":", line_at(pos), ": syntax error: ", msg));
  }
  int line_at(size_t pos) const {
    return 1 + static_cast<int>(std::count(src_.begin(), src_.begin() + static_cast<long>(std::min(pos, src_.size())), '\n'));
  }
  void push(Tok::T t, std::string s, size_t pos) { toks_.push_back({t, std::move(s), line_at(pos)}); }

  // Lexes the tag at p ("{{", "{%" or "{#"); returns the position after it.
  size_t lex_tag(size_t p, bool& strip_next) {
    const char kind = src_[p + 1];
    size_t i = p + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    if (kind == '#') {
      const size_t e = src_.find("#}", i);
      if (e == std::string::npos) fail(p, "unclosed comment '{#' (missing '#}')");
      strip_next = e > i && src_[e - 1] == '-';
      size_t after = e + 2;
      if (!strip_next && after < src_.size() && src_[after] == '\n') ++after;  // trim_blocks
      return after;
    }
    const bool var = kind == '{';
    push(var ? Tok::VarBegin : Tok::BlockBegin, "", p);
    const char* close = var ? "}}" : "%}";
    while (true) {
      while (i < src_.size() && is_ws(src_[i])) ++i;
      if (i >= src_.size()) fail(p, strcat("unclosed tag '", var ? "{{" : "{%", "' (missing '", close, "')"));
      if (src_.compare(i, 3, std::string("-") + close) == 0 || src_.compare(i, 2, close) == 0) {
        const bool strip = src_[i] == '-';
        push(var ? Tok::VarEnd : Tok::BlockEnd, "", i);
        i += strip ? 3 : 2;
        strip_next = strip;
        if (!var && !strip && i < src_.size() && src_[i] == '\n') ++i;  // trim_blocks
        return i;
      }
      i = lex_token(i);
    }
  }

  size_t lex_token(size_t i) {
    const char c = src_[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = i;
      while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
      push(Tok::Name, src_.substr(i, e - i), i);
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t e = i;
      bool is_float = false;
      while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
      if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
        is_float = true;
        ++e;
        while (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) ++e;
      }
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t k = e + 1;
        if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
        if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
          is_float = true;
          e = k;
          while (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) ++e;
        }
      }
      std::string num = src_.substr(i, e - i);
      num.erase(std::remove(num.begin(), num.end(), '_'), num.end());
      Tok t{is_float ? Tok::Float : Tok::Int, num, line_at(i)};
      try {
        if (is_float) t.f = std::stod(num);
        else t.i = std::stoll(num);
      } catch (const std::exception&) {
        fail(i, "number out of range: " + num);
      }
      toks_.push_back(t);
      return e;
    }
    if (c == '\'' || c == '"') return lex_string(i);
    static const char* kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                 "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"};
    for (const char* op : kOps) {
      const size_t n = std::strlen(op);
      if (src_.compare(i, n, op) == 0) {
        push(Tok::Op, op, i);
        return i + n;
      }
    }
    fail(i, strcat("unexpected character '", std::string(1, c), "'"));
  }

  size_t lex_string(size_t i) {
    const char q = src_[i];
    std::string s;
    size_t k = i + 1;
    while (true) {
      if (k >= src_.size()) fail(i, "unterminated string literal");
      const char c = src_[k];
      if (c == q) break;
      if (c == '\\' && k + 1 < src_.size()) {
        const char e = src_[++k];
        switch (e) {
          case 'n': s += '\n'; break;
          case 't': s += '\t'; break;
          case 'r': s += '\r'; break;
          case '0': s += '\0'; break;
          case 'b': s += '\b'; break;
          case 'f': s += '\f'; break;
          case '\\': s += '\\'; break;
          case '\'': s += '\''; break;
          case '"': s += '"'; break;
          case '\n': break;
          case 'x':
          case 'u':
          case 'U': {
            const int len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (k + static_cast<size_t>(len) >= src_.size()) fail(k, "truncated escape in string literal");
            const std::string hex = src_.substr(k + 1, static_cast<size_t>(len));
            if (!std::all_of(hex.begin(), hex.end(), [](char h) { return std::isxdigit(static_cast<unsigned char>(h)) != 0; }))
              fail(k, strcat("invalid \\", std::string(1, e), " escape in string literal"));
            const uint32_t cp = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail(k, "escape is not a Unicode scalar value");
            if (cp < 0x80) s += static_cast<char>(cp);
            else if (cp < 0x800) s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
            else if (cp < 0x10000)
              s += static_cast<char>(0xE0 | (cp >> 12)), s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                  s += static_cast<char>(0x80 | (cp & 0x3F));
            else
              s += static_cast<char>(0xF0 | (cp >> 18)), s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
                  s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), s += static_cast<char>(0x80 | (cp & 0x3F));
            k += static_cast<size_t>(len);
            break;
          }
          default: s += '\\', s += e;  // Python keeps unknown escapes verbatim
        }
        ++k;
        continue;
      }
      s += c;
      ++k;
    }
    push(Tok::String, s, i);
    return k + 1;
  }

  std::string src_;
  const std::string& name_;
  std::vector<Tok> toks_;
};

using NodeP = std::unique_ptr<Node>;
using K = Node::Kind;

class Parser {
 public:
  Parser(std::vector<Tok> toks, const std::string& name) : t_(std::move(toks)), name_(name) {}

  NodeP parse_root() {
    std::string end;
    NodeP body = parse_body({}, end);
    return body;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& msg) const {
    throw ConfigError("chat_template", strcat(name_, ":", line, ": syntax error: ", msg));
  }
  const Tok& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  const Tok& next() { return t_[std::min(p_++, t_.size() - 1)]; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).t == Tok::Op && peek(k).s == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).t == Tok::Name && peek(k).s == n; }
  void expect_op(const char* op, const char* ctx) {
    if (!is_op(op)) fail(peek().line, strcat("expected '", op, "' in ", ctx, ", got ", show(peek())));
    ++p_;
  }
  void expect_block_end(const std::string& ctx) {
    if (peek().t != Tok::BlockEnd) fail(peek().line, strcat("expected '%}' to close '", ctx, "', got ", show(peek())));
    ++p_;
  }
  std::string expect_name(const char* ctx) {
    if (peek().t != Tok::Name) fail(peek().line, strcat("expected a name in ", ctx, ", got ", show(peek())));
    return next().s;
  }

  // Parses statements until a block tag whose keyword is in `ends` (consumed up to the keyword).
  NodeP parse_body(const std::vector<std::string>& ends, std::string& found, const std::string& opener = "", int open_line = 0) {
    auto block = std::make_unique<Node>(K::Block, peek().line);
    while (true) {
      const Tok& t = peek();
      if (t.t == Tok::Eof) {
        if (!ends.empty())
          fail(open_line, strcat("'", opener, "' is never closed (expected '", ends.back(), "')"));
        found.clear();
        return block;
      }
      if (t.t == Tok::Text) {
        auto n = std::make_unique<Node>(K::Text, t.line);
        n->text = t.s;
        block->kids.push_back(std::move(n));
        ++p_;
      } else if (t.t == Tok::VarBegin) {
        ++p_;
        auto n = std::make_unique<Node>(K::Output, t.line);
        n->kids.push_back(parse_expr());
        if (peek().t != Tok::VarEnd) fail(peek().line, strcat("expected '}}' to close '{{', got ", show(peek())));
        ++p_;
        block->kids.push_back(std::move(n));
      } else if (t.t == Tok::BlockBegin) {
        const Tok& kw = peek(1);
        if (kw.t != Tok::Name) fail(kw.line, strcat("expected a statement keyword after '{%', got ", show(kw)));
        if (std::find(ends.begin(), ends.end(), kw.s) != ends.end()) {
          p_ += 2;
          found = kw.s;
          return block;
        }
        p_ += 2;
        block->kids.push_back(parse_statement(kw));
      } else {
        fail(t.line, strcat("unexpected ", show(t)));
      }
    }
  }

  NodeP parse_statement(const Tok& kw) {
    DepthGuard guard(*this);
    const std::string& k = kw.s;
    const int line = kw.line;
    std::string found;
    if (k == "if") {
      auto n = std::make_unique<Node>(K::If, line);
      n->kids.push_back(parse_expr());
      expect_block_end("if");
      while (true) {
        n->kids.push_back(parse_body({"elif", "else", "endif"}, found, "if", line));
        if (found == "endif") break;
        if (found == "elif") {
          n->kids.push_back(parse_expr());
          expect_block_end("elif");
        } else {
          expect_block_end("else");
          n->kids.push_back(parse_body({"endif"}, found, "if", line));
          break;
        }
      }
      expect_block_end("endif");
      return n;
    }
    if (k == "for") {
      auto n = std::make_unique<Node>(K::For, line);
      n->names.push_back(expect_name("for target"));
      while (is_op(",")) {
        ++p_;
        n->names.push_back(expect_name("for target"));
      }
      if (!is_name("in")) fail(peek().line, strcat("expected 'in' in 'for', got ", show(peek())));
      ++p_;
      n->kids.push_back(parse_or());  // no ternary: a trailing `if` is the loop filter
      NodeP filter;
      if (is_name("if")) {
        ++p_;
        filter = parse_or();
      }
      if (is_name("recursive")) fail(peek().line, "recursive for loops are not supported");
      expect_block_end("for");
      n->kids.push_back(parse_body({"else", "endfor"}, found, "for", line));
      if (found == "else") {
        expect_block_end("else");
        n->kids.push_back(parse_body({"endfor"}, found, "for", line));
      } else {
        n->kids.push_back(std::make_unique<Node>(K::Block, line));
      }
      expect_block_end("endfor");
      n->kids.push_back(std::move(filter));
      return n;
    }
    if (k == "set") {
      std::vector<std::string> target{expect_name("set")};
      if (is_op(".")) {
        ++p_;
        target.push_back(expect_name("set attribute"));
      }
      if (is_op(",")) fail(peek().line, "tuple assignment in 'set' is not supported");
      if (peek().t == Tok::BlockEnd) {
        if (target.size() != 1) fail(line, "a set block needs a plain variable name");
        ++p_;
        auto n = std::make_unique<Node>(K::SetBlock, line);
        n->names = target;
        n->kids.push_back(parse_body({"endset"}, found, "set", line));
        expect_block_end("endset");
        return n;
      }
      expect_op("=", "set");
      auto n = std::make_unique<Node>(K::Set, line);
      n->names = target;
      n->kids.push_back(parse_expr());
      expect_block_end("set");
      return n;
    }
    if (k == "macro") {
      auto n = std::make_unique<Node>(K::Macro, line);
      n->text = expect_name("macro");
      expect_op("(", "macro");
      std::vector<NodeP> defaults;
      while (!is_op(")")) {
        n->names.push_back(expect_name("macro parameter"));
        if (is_op("=")) {
          ++p_;
          defaults.push_back(parse_expr());
        } else {
          defaults.push_back(nullptr);
        }
        if (!is_op(")")) expect_op(",", "macro parameters");
      }
      ++p_;
      expect_block_end("macro");
      n->kids.push_back(parse_body({"endmacro"}, found, "macro", line));
      expect_block_end("endmacro");
      for (auto& d : defaults) n->kids.push_back(std::move(d));
      return n;
    }
    if (k == "break" || k == "continue") {
      expect_block_end(k);
      return std::make_unique<Node>(k == "break" ? K::Break : K::Continue, line);
    }
    if (k == "generation") {
      expect_block_end(k);
      auto n = std::make_unique<Node>(K::Generation, line);
      n->kids.push_back(parse_body({"endgeneration"}, found, "generation", line));
      expect_block_end("endgeneration");
      return n;
    }
    static const char* kEnds[] = {"endif", "endfor", "endset", "endmacro", "else", "elif", "endgeneration"};
    for (const char* e : kEnds)
      if (k == e) fail(line, strcat("unexpected '", k, "' (no matching open block)"));
    fail(line, strcat("unknown or unsupported statement '", k, "'"));
  }

  // ---- expressions ----
  NodeP mk(K k, int line) { return std::make_unique<Node>(k, line); }
  NodeP bin(const std::string& op, NodeP a, NodeP b, int line) {
    auto n = mk(K::Binary, line);
    n->text = op;
    n->kids.push_back(std::move(a));
    n->kids.push_back(std::move(b));
    return n;
  }

  // Bounds parser recursion so hostile input cannot overflow the stack.
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.fail(p.peek().line, "expression or block nesting is too deep");
    }
    ~DepthGuard() { --p.depth_; }
  };
  static constexpr int kMaxDepth = 256;

  NodeP parse_expr() {
    DepthGuard guard(*this);
    NodeP e = parse_or();
    if (is_name("if")) {
      const int line = next().line;
      auto n = mk(K::Ternary, line);
      NodeP cond = parse_or();
      NodeP other;
      if (is_name("else")) {
        ++p_;
        other = parse_expr();
      }
      n->kids.push_back(std::move(e));
      n->kids.push_back(std::move(cond));
      n->kids.push_back(std::move(other));
      return n;
    }
    return e;
  }
  NodeP parse_or() {
    NodeP a = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      a = bin("or", std::move(a), parse_and(), line);
    }
    return a;
  }
  NodeP parse_and() {
    NodeP a = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      a = bin("and", std::move(a), parse_not(), line);
    }
    return a;
  }
  NodeP parse_not() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      const int line = next().line;
      auto n = mk(K::Unary, line);
      n->text = "not";
      n->kids.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }
  NodeP parse_compare() {
    NodeP a = parse_concat();
    while (true) {
      const Tok& t = peek();
      std::string op;
      if (t.t == Tok::Op && (t.s == "==" || t.s == "!=" || t.s == "<" || t.s == ">" || t.s == "<=" || t.s == ">=")) {
        op = t.s;
        ++p_;
      } else if (is_name("in")) {
        op = "in";
        ++p_;
      } else if (is_name("not") && is_name("in", 1)) {
        op = "not in";
        p_ += 2;
      } else {
        return a;
      }
      a = bin(op, std::move(a), parse_concat(), t.line);
    }
  }
  NodeP parse_concat() {
    NodeP a = parse_add();
    while (is_op("~")) {
      const int line = next().line;
      a = bin("~", std::move(a), parse_add(), line);
    }
    return a;
  }
  NodeP parse_add() {
    NodeP a = parse_mul();
    while (is_op("+") || is_op("-")) {
      const Tok& t = next();
      a = bin(t.s, std::move(a), parse_mul(), t.line);
    }
    return a;
  }
  NodeP parse_mul() {
    NodeP a = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Tok& t = next();
      a = bin(t.s, std::move(a), parse_pow(), t.line);
    }
    return a;
  }
  NodeP parse_pow() {
    NodeP a = parse_unary();
    while (is_op("**")) {
      const int line = next().line;
      a = bin("**", std::move(a), parse_unary(), line);
    }
    return a;
  }
  NodeP parse_unary() {
    DepthGuard guard(*this);
    if (is_op("-") || is_op("+")) {
      const Tok& t = next();
      auto n = mk(K::Unary, t.line);
      n->text = t.s;
      n->kids.push_back(parse_unary());
      return parse_filters(std::move(n));
    }
    return parse_filters(parse_postfix(parse_primary()));
  }

  void parse_call_args(Node& n) {
    // after '(' : positional args then kwargs
    std::vector<NodeP> pos, kw;
    while (!is_op(")")) {
      if (peek().t == Tok::Name && is_op("=", 1)) {
        n.names.push_back(next().s);
        ++p_;
        kw.push_back(parse_expr());
      } else {
        if (!kw.empty()) fail(peek().line, "positional argument after keyword argument");
        pos.push_back(parse_expr());
      }
      if (!is_op(")")) expect_op(",", "argument list");
    }
    ++p_;
    for (auto& a : pos) n.kids.push_back(std::move(a));
    for (auto& a : kw) n.kids.push_back(std::move(a));
  }

  NodeP parse_filters(NodeP e) {
    while (true) {
      if (is_op("|")) {
        const int line = next().line;
        auto n = mk(K::Filter, line);
        n->text = expect_name("filter");
        if (!is_known_filter(n->text)) fail(line, strcat("unknown filter '", n->text, "'"));
        n->kids.push_back(std::move(e));
        if (is_op("(")) {
          ++p_;
          parse_call_args(*n);
        }
        e = std::move(n);
      } else if (is_name("is")) {
        const int line = next().line;
        auto n = mk(K::Test, line);
        if (is_name("not")) {
          ++p_;
          n->flag = true;
        }
        n->text = expect_name("test");
        if (!is_known_test(n->text)) fail(line, strcat("unknown test '", n->text, "'"));
        n->kids.push_back(std::move(e));
        if (is_op("(")) {
          ++p_;
          parse_call_args(*n);
          if (!n->names.empty()) fail(line, "tests take no keyword arguments");
        } else {
          const Tok& t = peek();
          const bool starts_arg = t.t == Tok::String || t.t == Tok::Int || t.t == Tok::Float ||
                                  (t.t == Tok::Name && t.s != "else" && t.s != "or" && t.s != "and" &&
                                   t.s != "if" && t.s != "in" && t.s != "not" && t.s != "is") ||
                                  is_op("[") || is_op("{");
          if (starts_arg) n->kids.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(n);
      } else {
        return e;
      }
    }
  }

  NodeP parse_postfix(NodeP e) {
    while (true) {
      if (is_op(".")) {
        const int line = next().line;
        auto n = mk(K::Attr, line);
        if (peek().t == Tok::Int) n->text = std::to_string(next().i);
        else n->text = expect_name("attribute access");
        n->kids.push_back(std::move(e));
        e = std::move(n);
      } else if (is_op("[")) {
        const int line = next().line;
        NodeP parts[3];
        int nparts = 0;
        bool slice = false;
        while (true) {
          if (is_op(":")) {
            slice = true;
            ++p_;
            if (++nparts > 2) fail(line, "too many ':' in slice");
            continue;
          }
          if (is_op("]")) break;
          if (parts[nparts]) fail(peek().line, "expected ']' or ':' in subscript");
          parts[nparts] = parse_expr();
        }
        ++p_;
        if (slice) {
          auto n = mk(K::Slice, line);
          n->kids.push_back(std::move(e));
          for (auto& p : parts) n->kids.push_back(std::move(p));
          e = std::move(n);
        } else {
          if (!parts[0]) fail(line, "empty subscript '[]'");
          auto n = mk(K::Index, line);
          n->kids.push_back(std::move(e));
          n->kids.push_back(std::move(parts[0]));
          e = std::move(n);
        }
      } else if (is_op("(")) {
        const int line = next().line;
        auto n = mk(K::Call, line);
        n->kids.push_back(std::move(e));
        parse_call_args(*n);
        e = std::move(n);
      } else {
        return e;
      }
    }
  }

  NodeP parse_primary() {
    const Tok& t = next();
    switch (t.t) {
      case Tok::String: {
        auto n = mk(K::Literal, t.line);
        std::string s = t.s;
        while (peek().t == Tok::String) s += next().s;  // adjacent literals concatenate
        n->value = Value(s);
        return n;
      }
      case Tok::Int: {
        auto n = mk(K::Literal, t.line);
        n->value = Value(t.i);
        return n;
      }
      case Tok::Float: {
        auto n = mk(K::Literal, t.line);
        n->value = Value(t.f);
        return n;
      }
      case Tok::Name: {
        auto n = mk(K::Literal, t.line);
        if (t.s == "true" || t.s == "True") n->value = Value(true);
        else if (t.s == "false" || t.s == "False") n->value = Value(false);
        else if (t.s == "none" || t.s == "None") n->value = Value::none();
        else {
          n->kind = K::Name;
          n->text = t.s;
        }
        return n;
      }
      case Tok::Op: {
        if (t.s == "(") {
          if (is_op(")")) {
            ++p_;
            return mk(K::Tuple, t.line);
          }
          NodeP first = parse_expr();
          if (is_op(")")) {
            ++p_;
            return first;
          }
          auto n = mk(K::Tuple, t.line);
          n->kids.push_back(std::move(first));
          while (is_op(",")) {
            ++p_;
            if (is_op(")")) break;
            n->kids.push_back(parse_expr());
          }
          expect_op(")", "tuple");
          return n;
        }
        if (t.s == "[") {
          auto n = mk(K::List, t.line);
          while (!is_op("]")) {
            n->kids.push_back(parse_expr());
            if (!is_op("]")) expect_op(",", "list literal");
          }
          ++p_;
          return n;
        }
        if (t.s == "{") {
          auto n = mk(K::Dict, t.line);
          while (!is_op("}")) {
            n->kids.push_back(parse_expr());
            expect_op(":", "dict literal");
            n->kids.push_back(parse_expr());
            if (!is_op("}")) expect_op(",", "dict literal");
          }
          ++p_;
          return n;
        }
        break;
      }
      default: break;
    }
    fail(t.line, strcat("unexpected ", show(t), " in expression"));
  }

  std::vector<Tok> t_;
  size_t p_ = 0;
  int depth_ = 0;
  const std::string& name_;
};

}  // namespace

std::unique_ptr<Node> parse_template(const std::string& source, const std::string& name) {
  Lexer lx(source, name);
  Parser ps(lx.run(), name);
  return ps.parse_root();
}

}  // namespace trinity::tok::jinja
