// Chat conversations for the chat-template golden test and `trinity tokenize` tests: system
// prompts, multi-turn, tools and tool calls (object and string arguments, parallel calls, tool
// responses), reasoning content (field and inline <think>), unicode and special characters, and
// extra template variables (`extra`: Llama 3.1's date_string).
// Content edges avoid leading/trailing spaces next to stripped newlines: @huggingface/jinja's
// str.strip/lstrip/rstrip ignore their `chars` argument, unlike Python (trinity follows Python).

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather in a city",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "City name, e.g. Paris" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
      },
      required: ["city"],
    },
  },
};
const calcTool = {
  type: "function",
  function: {
    name: "calculate",
    description: "Evaluate an arithmetic expression",
    parameters: { type: "object", properties: { expression: { type: "string" }, precision: { type: "integer", default: 2 } }, required: ["expression"] },
  },
};

export const TOOLS = { weather: [weatherTool], both: [weatherTool, calcTool] };

export const CASES = [
  { name: "single_user", messages: [{ role: "user", content: "Hello!" }] },
  { name: "system_user", messages: [{ role: "system", content: "You are a terse assistant." }, { role: "user", content: "What is 2+2?" }] },
  {
    name: "multi_turn",
    messages: [
      { role: "system", content: "You are helpful." },
      { role: "user", content: "Name a prime." },
      { role: "assistant", content: "7 is prime." },
      { role: "user", content: "Another one?" },
      { role: "assistant", content: "11." },
    ],
  },
  {
    name: "multi_turn_open",
    messages: [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello! How can I help?" },
      { role: "user", content: "Tell me a joke about C++ templates." },
    ],
  },
  {
    name: "reasoning_field",
    messages: [
      { role: "user", content: "Is 91 prime?" },
      { role: "assistant", content: "No, 91 = 7 * 13.", reasoning_content: "Check small primes: 91 / 7 = 13." },
    ],
  },
  {
    name: "think_inline_history",
    messages: [
      { role: "user", content: "What is 3*4?" },
      { role: "assistant", content: "<think>\n3*4 means 3 added 4 times.\n</think>\n\n12" },
      { role: "user", content: "And 5*6?" },
      { role: "assistant", content: "<think>\nFive sixes.\n</think>\n\n30" },
    ],
  },
  {
    name: "tool_call_flow",
    tools: "weather",
    messages: [
      { role: "system", content: "You can check the weather." },
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: "", tool_calls: [{ type: "function", function: { name: "get_weather", arguments: { city: "Paris", unit: "celsius" } } }] },
      { role: "tool", content: "{\"temperature\": 18, \"sky\": \"cloudy\"}" },
      { role: "assistant", content: "It is 18 °C and cloudy in Paris." },
    ],
  },
  {
    name: "parallel_tool_calls",
    tools: "both",
    messages: [
      { role: "user", content: "Weather in Oslo and Lima, and 17*23?" },
      {
        role: "assistant",
        content: "Let me check.",
        tool_calls: [
          { type: "function", function: { name: "get_weather", arguments: { city: "Oslo" } } },
          { type: "function", function: { name: "get_weather", arguments: { city: "Lima" } } },
          { type: "function", function: { name: "calculate", arguments: "{\"expression\": \"17*23\"}" } },
        ],
      },
      { role: "tool", content: "Oslo: -3 C, snow" },
      { role: "tool", content: "Lima: 22 C, sunny" },
      { role: "tool", content: "391" },
    ],
  },
  {
    name: "tools_no_system",
    tools: "both",
    messages: [{ role: "user", content: "What can you do?" }],
  },
  {
    name: "tool_then_reasoning",
    tools: "weather",
    messages: [
      { role: "user", content: "Should I take an umbrella in Rome?" },
      { role: "assistant", content: "", reasoning_content: "Need the weather first.", tool_calls: [{ function: { name: "get_weather", arguments: { city: "Rome" } } }] },
      { role: "tool", content: "rain, 14 C" },
      { role: "assistant", content: "Yes, take one.", reasoning_content: "Rain means umbrella." },
    ],
  },
  {
    name: "unicode_and_quotes",
    messages: [
      { role: "system", content: "Réponds en français. 日本語もOK。" },
      { role: "user", content: "Quote: \"to be\" or 'not'\nBackslash \\ and tab\there 👨‍👩‍👧" },
      { role: "assistant", content: "« D'accord » — 好的 ✅" },
    ],
  },
  {
    name: "special_tokens_in_content",
    messages: [
      { role: "user", content: "Print the literal <|im_end|> and <|eot_id|> please." },
      { role: "assistant", content: "Here: <|im_end|> <|eot_id|>" },
    ],
  },
  {
    // builtin_tools would exercise Llama 3.1's <|python_tag|> path, but @huggingface/jinja 0.5.11 has
    // no `reject` filter on arrays (trinity has; see jinja_test), so only date_string is varied.
    name: "extra_vars_ipython",
    extra: { date_string: "01 Jan 2025" },
    messages: [
      { role: "system", content: "  Search when unsure.  " },
      { role: "user", content: "Who won the 2022 World Cup?" },
      { role: "assistant", content: "", tool_calls: [{ function: { name: "brave_search", arguments: { query: "2022 World Cup winner" } } }] },
      { role: "ipython", content: "Argentina" },
      { role: "assistant", content: "Argentina won." },
    ],
  },
  {
    name: "long_multiline",
    messages: [
      { role: "system", content: "Line one.\nLine two.\n\nParagraph." },
      { role: "user", content: "def f(x):\n    return x * 2\n\nExplain this code." },
      { role: "assistant", content: "It doubles x.\n\n```python\nf(3)  # 6\n```" },
      { role: "user", content: "Thanks\r\nbye" },
    ],
  },
];

// Options varied per template: [add_generation_prompt, enable_thinking or undefined].
export const OPTIONS = [
  [false, undefined],
  [true, undefined],
  [true, false],
  [true, true],
];
