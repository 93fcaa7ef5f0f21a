// Qwen / Hermes tool-call parsing (see tool_calls.h).
#include "server/tool_calls.h"

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "server/json_limits.h"

namespace trinity::server {

namespace {

using json = nlohmann::json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::string new_tool_call_id() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::lock_guard<std::mutex> l(mu);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kChars[gen() % (sizeof(kChars) - 1)];
  return id;
}

ParsedToolCalls parse_tool_calls(const std::string& text) {
  ParsedToolCalls out;
  const size_t first = text.find(kOpen);
  if (first == std::string::npos) {
    out.content = text;
    return out;
  }
  std::vector<ToolCall> calls;
  size_t pos = first;
  bool ok = true;
  while (pos != std::string::npos && ok) {
    const size_t body = pos + kOpen.size();
    const size_t close = text.find(kClose, body);
    const std::string_view block =
        trim(std::string_view(text).substr(body, close == std::string::npos ? std::string::npos : close - body));
    json j;
    try {
      // Model output can nest arbitrarily deep (or hold 1e400): not a call, left as text.
      if (json_depth(block) > kMaxRequestJsonDepth) throw std::invalid_argument("too deep");
      j = json::parse(block);
    } catch (const std::exception&) {
      ok = false;
      break;
    }
    const auto name = j.is_object() ? j.find("name") : j.end();
    if (!j.is_object() || name == j.end() || !name->is_string() || name->get<std::string>().empty()) {
      ok = false;
      break;
    }
    ToolCall c;
    c.id = new_tool_call_id();
    c.name = name->get<std::string>();
    const auto args = j.find("arguments");
    if (args == j.end() || args->is_null()) c.arguments = "{}";
    else if (args->is_string()) c.arguments = args->get<std::string>();
    else c.arguments = args->dump(-1, ' ', false, json::error_handler_t::replace);
    calls.push_back(std::move(c));
    if (close == std::string::npos) break;
    // Only whitespace may separate blocks; anything else after a block is kept as-is by refusing.
    const size_t next = text.find(kOpen, close + kClose.size());
    const std::string_view between = trim(std::string_view(text).substr(
        close + kClose.size(), next == std::string::npos ? std::string::npos : next - close - kClose.size()));
    if (!between.empty()) {
      ok = false;
      break;
    }
    pos = next;
  }
  if (!ok) {
    out.content = text;
    return out;
  }
  const std::string_view before = trim(std::string_view(text).substr(0, first));
  if (!before.empty()) out.content = std::string(std::string_view(text).substr(0, first));
  out.calls = std::move(calls);
  return out;
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

}  // namespace trinity::server
