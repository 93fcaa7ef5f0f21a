// Tool-N1 prompt construction and scoring (see tool_n1.h). Each check keeps upstream's order, which
// decides the score when several rules fail.
#include "workflow/rewards/tool_n1.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "core/error.h"
#include "workflow/rewards/py_json.h"

namespace trinity::workflow::tool_n1 {
namespace {

using ojson = nlohmann::ordered_json;

const char* const kToolPromptHead = "# Tool\n\n<tools>\n";
const char* const kToolPromptTail =
    "\n</tools>\n\nIn each action step, you MUST:\n"
    "1. Think about the reasoning process in the mind and enclosed your reasoning within <think> </think> XML "
    "tags.\n"
    "2. Then, provide a json object with function names and arguments within <tool_call></tool_call> XML tags. "
    "i.e., <tool_call>[{\"name\": <function-name>, \"arguments\": <args-json-object>}, {\"name\": <function-name2>, "
    "\"arguments\": <args-json-object2>}, ...]</tool_call>\n"
    "3. Make sure both the reasoning and the tool call steps are included together in one single reply.\n"
    "A complete reply example is: <think>To address the query, I need to send the email to Bob and then buy the "
    "banana through walmart. </think> <tool_call> [{\"name\": \"email\", \"arguments\": {\"receiver\": \"Bob\", "
    "\"content\": \"I will bug banana through walmart\"}}, {\"name\": \"walmart\", \"arguments\": {\"input\": "
    "\"banana\"}}]</tool_call>. Please make sure the type of the arguments is correct.\n";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string strip(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

size_t count(std::string_view s, std::string_view t) {
  size_t n = 0, p = 0;
  while ((p = s.find(t, p)) != std::string_view::npos) ++n, p += t.size();
  return n;
}

std::optional<ojson> parse(std::string_view text) {
  ojson j = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// The content of the last non-overlapping <tool_call>(.*?)</tool_call>, stripped; nullopt if none.
std::optional<std::string> last_tool_call(std::string_view s) {
  const std::string_view open = "<tool_call>", close = "</tool_call>";
  std::optional<std::string> last;
  size_t p = 0;
  while (true) {
    const size_t a = s.find(open, p);
    if (a == std::string_view::npos) break;
    const size_t b = s.find(close, a + open.size());
    if (b == std::string_view::npos) break;
    last = strip(s.substr(a + open.size(), b - a - open.size()));
    p = b + close.size();
  }
  return last;
}

// A Counter key for a call name: Python hashes and compares 1, 1.0 and true alike; lists and dicts
// are unhashable (nullopt -> validate_result's TypeError -> 0).
std::optional<std::string> name_key(const ojson& n) {
  std::string k;
  if (n.is_string())
    k = "s", k += n.get<std::string>();
  else if (n.is_boolean())
    k = "n", k += py::float_repr(n.get<bool>() ? 1.0 : 0.0);
  else if (n.is_number())
    k = "n", k += py::float_repr(n.get<double>());
  else if (n.is_null())
    k = "null";
  else
    return std::nullopt;
  return k;
}

// validate_result == 2 (the full multiset of (name, sorted-keys arguments) matches).
bool full_match(const ojson& result, const ojson& answer) {
  if (result.empty() || answer.empty()) return result.size() == answer.size();
  std::map<std::pair<std::string, std::string>, int> got, want;
  for (const auto& item : result) {  // validate_format already checked: objects with name + arguments
    const auto k = name_key(item.at("name"));
    if (!k) return false;
    ++got[{*k, py::json_dumps(item.at("arguments"), true)}];
  }
  for (const auto& item : answer) {
    if (!item.is_object()) return false;  // item["name"] on a str / list / number: TypeError -> 0
    if (!item.contains("name") || !item.contains("arguments"))
      throw ValueError("tool_call", strcat("tool_call_workflow: a gold call in the row's \"answer\" lacks \"",
                                           item.contains("name") ? "arguments" : "name",
                                           "\": ", py::json_dumps(item).substr(0, 200)));
    const auto k = name_key(item.at("name"));
    if (!k) return false;
    ++want[{*k, py::json_dumps(item.at("arguments"), true)}];
  }
  return got == want;
}

}  // namespace

std::string construct_prompt(const ojson& row) {
  auto need = [&](const char* key) -> const ojson& {
    if (!row.is_object() || !row.contains(key))
      throw ValueError("tool_call", strcat("tool_call_workflow: the task row has no \"", key,
                                           "\" field (ToolACE rows: tools, raw_system, conversations, answer)"));
    return row.at(key);
  };
  const ojson& tools_field = need("tools");
  ojson tools = tools_field;
  if (tools_field.is_string()) {
    auto t = parse(tools_field.get<std::string>());
    if (!t) throw ValueError("tool_call", "tool_call_workflow: the row's \"tools\" is not JSON text");
    tools = *t;
  }
  if (!tools.is_array())
    throw ValueError("tool_call", strcat("tool_call_workflow: the row's \"tools\" must be a JSON list of function "
                                         "schemas, got ",
                                         py::json_dumps(tools).substr(0, 200)));
  std::string tool_lines;
  for (const auto& tool : tools) {
    ojson line = ojson::object();
    line["type"] = "function";
    line["function"] = tool;
    if (!tool_lines.empty()) tool_lines += "\n";
    tool_lines += py::json_dumps(line);
  }
  const ojson& system = need("raw_system");
  if (!system.is_string())
    throw ValueError("tool_call", "tool_call_workflow: the row's \"raw_system\" must be a string");
  const ojson& conv = need("conversations");
  if (!conv.is_array())
    throw ValueError("tool_call", "tool_call_workflow: the row's \"conversations\" must be a list of {from, value}");

  ojson msgs = ojson::array();
  msgs.push_back(
      {{"role", "system"}, {"content", system.get<std::string>() + kToolPromptHead + tool_lines + kToolPromptTail}});
  for (const auto& turn : conv) {
    if (!turn.is_object() || !turn.contains("from") || !turn.contains("value"))
      throw ValueError("tool_call",
                       strcat("tool_call_workflow: each conversation turn needs \"from\" and \"value\", got ",
                              py::json_dumps(turn).substr(0, 200)));
    const std::string from = turn["from"].is_string() ? turn["from"].get<std::string>() : "";
    const ojson& v = turn["value"];
    const std::string text = v.is_string() ? v.get<std::string>() : py::json_dumps(v);
    if (from == "human" || from == "user")
      msgs.push_back({{"role", "user"}, {"content", text}});
    else if (from == "gpt" || from == "assistant")
      msgs.push_back({{"role", "assistant"}, {"content", text}});
    else if (from == "observation" || from == "tool")
      msgs.push_back({{"role", "tool"}, {"content", text}});
    else if (from == "function_call")
      msgs.push_back({{"role", "assistant"}, {"content", py::json_dumps(v)}});
  }
  return msgs.dump();
}

double score(std::string_view response, const ojson& ground_truth) {
  ojson answer = ground_truth;
  if (answer.is_string()) {
    auto a = parse(answer.get<std::string>());
    if (!a) throw ValueError("tool_call", "tool_call_workflow: the row's \"answer\" is not JSON text");
    answer = *a;
  }
  std::optional<ojson> result;
  if (auto body = last_tool_call(response)) result = parse(*body);
  if (result && result->is_string()) result = parse(result->get<std::string>());
  if (result && result->is_object()) result = ojson::array({*result});
  if (answer.is_string()) {
    auto a = parse(answer.get<std::string>());
    if (!a) throw ValueError("tool_call", "tool_call_workflow: the row's \"answer\" is not JSON text");
    answer = *a;
  }
  if (result &&
      (response.find("<think>") == std::string_view::npos || response.find("</think>") == std::string_view::npos))
    return 0.0;
  if (!result) return 0.0;
  if (count(response, "<think>") != 1 || count(response, "</think>") != 1) return 0.0;
  const size_t think_end = response.find("</think>"), call_start = response.find("<tool_call>");
  if (call_start != std::string_view::npos && think_end > call_start) return 0.0;
  // validate_format; a payload that is no list (a number, true, a string's characters) fails here
  // (upstream: TypeError on iterating a number, format 0 for a string).
  if (!result->is_array()) return 0.0;
  for (const auto& item : *result)
    if (!item.is_object() || !item.contains("name") || !item.contains("arguments")) return 0.0;
  if (!answer.is_array() && !answer.is_object())
    throw ValueError("tool_call", strcat("tool_call_workflow: the row's \"answer\" must be a list of calls, got ",
                                         py::json_dumps(answer).substr(0, 200)));
  if (answer.is_object()) {  // iterating a dict yields its keys: item["name"] on a str -> TypeError -> 0
    if (result->empty() || answer.empty()) return result->size() == answer.size() ? 1.0 : 0.0;
    return 0.0;
  }
  return full_match(*result, answer) ? 1.0 : 0.0;
}

}  // namespace trinity::workflow::tool_n1
