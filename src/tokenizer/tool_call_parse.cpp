// Tool-call parsing, hermes and Llama-3 JSON (see tool_call_parse.h).
#include "tokenizer/tool_call_parse.h"

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "core/error.h"
#include "core/json_limits.h"
#include "core/text.h"

namespace trinity::tok {

namespace {

using json = nlohmann::json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
// Model output can nest arbitrarily deep (or hold 1e400): deeper than this is not a call, left as text.
constexpr int kMaxCallDepth = 64;

// One call from a JSON object text with "name" and `args_key` (or "arguments"); nullopt if it is not one.
std::optional<ToolCall> call_from_json(std::string_view text, bool accept_parameters) {
  json j;
  try {
    if (json_depth(text) > kMaxCallDepth) return std::nullopt;
    j = json::parse(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto name = j.is_object() ? j.find("name") : j.end();
  if (!j.is_object() || name == j.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  ToolCall c;
  c.id = new_tool_call_id();
  c.name = name->get<std::string>();
  auto args = j.find("arguments");
  if (accept_parameters && args == j.end()) args = j.find("parameters");
  if (args == j.end() || args->is_null())
    c.arguments = "{}";
  else if (args->is_string())
    c.arguments = args->get<std::string>();
  else
    c.arguments = args->dump(-1, ' ', false, json::error_handler_t::replace);
  return c;
}

}  // namespace

size_t json_object_end(std::string_view s) {
  int depth = 0;
  bool in_str = false, esc = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      if (esc)
        esc = false;
      else if (c == '\\')
        esc = true;
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"')
      in_str = true;
    else if (c == '{' || c == '[')
      ++depth;
    else if ((c == '}' || c == ']') && --depth == 0)
      return i + 1;
  }
  return std::string_view::npos;
}

namespace {

ParsedToolCalls parse_hermes(const std::string& text) {
  ParsedToolCalls out;
  const size_t first = text.find(kOpen);
  if (first == std::string::npos) {
    out.content = text;
    return out;
  }
  std::vector<ToolCall> calls;
  size_t pos = first;
  while (pos != std::string::npos) {
    const size_t body = pos + kOpen.size();
    const size_t close = text.find(kClose, body);
    auto c = call_from_json(
        trim_view(std::string_view(text).substr(body, close == std::string::npos ? std::string::npos : close - body)),
        /*accept_parameters=*/false);
    if (!c) {
      out.content = text;
      return out;
    }
    calls.push_back(std::move(*c));
    if (close == std::string::npos) break;
    // Only whitespace may separate blocks; anything else after a block is kept as-is by refusing.
    const size_t next = text.find(kOpen, close + kClose.size());
    const std::string_view between = trim_view(std::string_view(text).substr(
        close + kClose.size(), next == std::string::npos ? std::string::npos : next - close - kClose.size()));
    if (!between.empty()) {
      out.content = text;
      return out;
    }
    pos = next;
  }
  const std::string_view before = trim_view(std::string_view(text).substr(0, first));
  if (!before.empty()) out.content = std::string(std::string_view(text).substr(0, first));
  out.calls = std::move(calls);
  return out;
}

ParsedToolCalls parse_llama3_json(const std::string& text) {
  ParsedToolCalls out;
  std::string_view rest = trim_view(text);
  if (rest.substr(0, kPythonTag.size()) == kPythonTag) rest = trim_view(rest.substr(kPythonTag.size()));
  std::vector<ToolCall> calls;
  while (!rest.empty()) {
    const size_t end = rest.front() == '{' ? json_object_end(rest) : std::string_view::npos;
    std::optional<ToolCall> c;
    if (end != std::string_view::npos) c = call_from_json(rest.substr(0, end), /*accept_parameters=*/true);
    if (!c) {
      out.content = text;
      return out;
    }
    calls.push_back(std::move(*c));
    rest = trim_view(rest.substr(end));
    if (!rest.empty() && rest.front() == ';') rest = trim_view(rest.substr(1));
  }
  if (calls.empty()) out.content = text;
  out.calls = std::move(calls);
  return out;
}

}  // namespace

ToolCallFormat tool_call_format_from_name(std::string_view name) {
  if (name == "hermes" || name == "qwen") return ToolCallFormat::kHermes;
  if (name == "llama3_json" || name == "llama3") return ToolCallFormat::kLlama3Json;
  throw ConfigError("tokenizer", strcat("unknown tool-call format '", name, "': expected hermes or llama3_json"));
}

const char* tool_call_format_name(ToolCallFormat f) {
  return f == ToolCallFormat::kHermes ? "hermes" : "llama3_json";
}

ToolCallFormat tool_call_format_for_template(std::string_view template_text) {
  return template_text.find(kOpen) != std::string_view::npos ? ToolCallFormat::kHermes : ToolCallFormat::kLlama3Json;
}

std::string new_tool_call_id() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::lock_guard<std::mutex> l(mu);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kChars[gen() % (sizeof(kChars) - 1)];
  return id;
}

ParsedToolCalls parse_tool_calls(const std::string& text, ToolCallFormat format) {
  return format == ToolCallFormat::kHermes ? parse_hermes(text) : parse_llama3_json(text);
}

std::string ToolCallStreamFilter::push(std::string_view delta) {
  if (in_call_) {
    held_.append(delta);
    return {};
  }
  held_.append(delta);
  const size_t at = held_.find(kOpen);
  if (at != std::string::npos) {
    std::string out = held_.substr(0, at);
    held_.erase(0, at);
    in_call_ = true;
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of the tag.
  size_t keep = 0;
  for (size_t k = std::min(held_.size(), kOpen.size() - 1); k > 0; --k) {
    if (std::string_view(held_).substr(held_.size() - k) == kOpen.substr(0, k)) {
      keep = k;
      break;
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace trinity::tok
