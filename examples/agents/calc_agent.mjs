// A calculator agent for trinity's `command_workflow` (docs/agents.md), written with the official
// `openai` npm client; the same agent as calc_agent.py, with the same output line.
// Needs the `openai` package: `npm install openai` in this folder, or point NODE_PATH at a
// node_modules folder that has it (e.g. NODE_PATH=tests/js/node_modules in a trinity checkout).
//
// Contract: trinity starts `node calc_agent.mjs` once per run with OPENAI_BASE_URL / OPENAI_API_KEY set
// (the client reads both by itself; every call made with the key is recorded as this run's
// experience), TRINITY_TASK = the task row as JSON (also on stdin) and TRINITY_MODEL. The agent prints
// one line on stdout: {"reward": 1.0, "metrics": {"turns": 2, "tool_calls": 1, "correct": 1}, ...};
// everything else goes to stderr. A non-zero exit or no reward line is a failed run, never a zero
// reward. No temperature / max_tokens are sent (the config sets them), and assistant messages go back
// exactly as returned, so the endpoint reuses their sampled token ids. AGENT_MAX_TURNS: 6.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

// A static `import OpenAI from "openai"` works after `npm install openai`; Node's ES module loader
// ignores NODE_PATH, so fall back to require(), which honours it.
let OpenAI;
try {
  ({ default: OpenAI } = await import("openai"));
} catch {
  try {
    OpenAI = createRequire(import.meta.url)("openai");
  } catch {
    fail("the 'openai' package is missing: run `npm install openai` here or set NODE_PATH to a node_modules that has it");
  }
}

const SYSTEM_PROMPT =
  "You are a careful assistant that solves arithmetic problems. Use the calculator tool for every " +
  "computation, one step at a time if you like. When you know the result, reply with a short " +
  "sentence that ends with the final answer as a plain number.";

const CALCULATOR_TOOL = {
  type: "function",
  function: {
    name: "calculator",
    description:
      "Evaluates an arithmetic expression with numbers, + - * / // % **, parentheses and unary minus, " +
      "e.g. '(12 + 7) * 3 - 5'. Returns the value.",
    parameters: {
      type: "object",
      properties: { expression: { type: "string", description: "the expression to evaluate" } },
      required: ["expression"],
    },
  },
};

function log(msg) {
  process.stderr.write(`calc_agent.mjs: ${msg}\n`);
}

// A failed run: a clear line on stderr, exit status 1, no reward line.
function fail(msg) {
  log(`error: ${msg}`);
  process.exit(1);
}

// ---- a safe calculator: a small recursive-descent parser with Python's precedence (no eval) --------
//   expr := term (("+" | "-") term)*        term := factor (("*" | "/" | "//" | "%") factor)*
//   factor := ("+" | "-") factor | power    power := atom ("**" factor)?     atom := number | "(" expr ")"

class CalcError extends Error {}

const MAX_EXPRESSION_CHARS = 200;

function tokenize(text) {
  const tokens = [];
  const re = /\s*(?:(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|(\*\*|\/\/|[-+*/%()]))/y;
  let pos = 0;
  while (pos < text.length) {
    if (/^\s*$/.test(text.slice(pos))) break;
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) throw new CalcError(`only numbers, + - * / // % ** and parentheses are allowed (at ${JSON.stringify(text.slice(pos, pos + 10))})`);
    tokens.push(m[1] !== undefined ? { num: Number(m[1]) } : { op: m[2] });
    pos = re.lastIndex;
  }
  return tokens;
}

function checked(v) {
  if (Number.isNaN(v)) throw new CalcError("the result is not a real number");
  if (!Number.isFinite(v)) throw new CalcError("result too large");
  return v;
}

// Python's float divmod (Objects/floatobject.c), so // and % agree with the Python agent's.
function pyDivmod(a, b) {
  let mod = a % b;
  let div = (a - mod) / b;
  if (mod !== 0 && (b < 0) !== (mod < 0)) { mod += b; div -= 1; }
  let floordiv = div === 0 ? 0 : Math.floor(div);
  if (div - floordiv > 0.5) floordiv += 1;
  if (mod === 0) mod = b < 0 ? -0 : 0;
  return [floordiv, mod];
}

function binary(op, a, b) {
  if ((op === "/" || op === "//" || op === "%") && b === 0) throw new CalcError("division by zero");
  switch (op) {
    case "+": return checked(a + b);
    case "-": return checked(a - b);
    case "*": return checked(a * b);
    case "/": return checked(a / b);
    case "//": return checked(pyDivmod(a, b)[0]);
    case "%": return checked(pyDivmod(a, b)[1]);  // the sign of the divisor, as in Python
    case "**":
      if (Math.abs(b) > 1024) throw new CalcError("exponent too large");
      if (a === 0 && b < 0) throw new CalcError("division by zero");
      return checked(a ** b);
  }
  throw new CalcError(`unknown operator ${op}`);
}

function calculate(expression) {
  if (typeof expression !== "string") throw new CalcError("expression must be a string");
  if (expression.length > MAX_EXPRESSION_CHARS) throw new CalcError(`expression longer than ${MAX_EXPRESSION_CHARS} characters`);
  // Models often write ^ for power and the typographic signs for * and /.
  const text = expression.replaceAll("^", "**").replaceAll("\u00d7", "*").replaceAll("\u00f7", "/").replaceAll(",", "");
  const tokens = tokenize(text);
  let i = 0;
  const peek = () => tokens[i]?.op;
  const expr = (depth) => {
    if (depth > 50) throw new CalcError("expression nested too deeply");
    let v = term(depth);
    while (peek() === "+" || peek() === "-") v = binary(tokens[i++].op, v, term(depth));
    return v;
  };
  const term = (depth) => {
    let v = factor(depth);
    while (["*", "/", "//", "%"].includes(peek())) v = binary(tokens[i++].op, v, factor(depth));
    return v;
  };
  const factor = (depth) => {
    if (depth > 50) throw new CalcError("expression nested too deeply");
    if (peek() === "-") { i++; return -factor(depth + 1); }
    if (peek() === "+") { i++; return factor(depth + 1); }
    const base = atom(depth);
    if (peek() === "**") { i++; return binary("**", base, factor(depth + 1)); }
    return base;
  };
  const atom = (depth) => {
    const t = tokens[i++];
    if (t === undefined) throw new CalcError(`cannot parse ${JSON.stringify(expression)}: unexpected end`);
    if (t.num !== undefined) return t.num;
    if (t.op === "(") {
      const v = expr(depth + 1);
      if (tokens[i++]?.op !== ")") throw new CalcError(`cannot parse ${JSON.stringify(expression)}: missing ')'`);
      return v;
    }
    throw new CalcError(`cannot parse ${JSON.stringify(expression)}: unexpected '${t.op}'`);
  };
  const v = expr(0);
  if (i !== tokens.length) throw new CalcError(`cannot parse ${JSON.stringify(expression)}: unexpected '${tokens[i].op ?? tokens[i].num}'`);
  return v;
}

function formatNumber(v) {
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  return Math.abs(v) >= 1e15 ? String(v) : String(Math.round(v * 1e10) / 1e10);
}

// One tool call -> the tool message's content. Bad input gives an error text, never a crash.
function runTool(call) {
  const fn = call.function ?? {};
  if (fn.name !== "calculator") return `error: unknown tool ${JSON.stringify(fn.name)}; the only tool is 'calculator'`;
  let args = fn.arguments;
  if (typeof args === "string") {
    try {
      args = JSON.parse(args);
    } catch {
      return 'error: the arguments are not valid JSON; send {"expression": "..."}';
    }
  }
  if (args === null || typeof args !== "object" || !("expression" in args)) return "error: missing argument 'expression'";
  try {
    return formatNumber(calculate(args.expression));
  } catch (e) {
    if (e instanceof CalcError) return `error: ${e.message}`;
    throw e;
  }
}

// ---- the episode -------------------------------------------------------------------------------------

function lastNumber(text) {
  const found = (text ?? "").match(/-?\d[\d,]*(?:\.\d+)?/g);
  if (!found) return [null, null];
  const word = found.at(-1).replace(/,+$/, "");
  return [word, Number(word.replaceAll(",", ""))];
}

function readTask() {
  // Not set: read the row from stdin (trinity writes it there too).
  const text = process.env.TRINITY_TASK ?? readFileSync(0, "utf8");
  let task;
  try {
    task = JSON.parse(text);
  } catch (e) {
    fail(`the task is not JSON: ${e.message}`);
  }
  if (task === null || typeof task !== "object" || !("question" in task) || !("answer" in task))
    fail(`the task row needs 'question' and 'answer', got ${JSON.stringify(text.slice(0, 200))}`);
  return task;
}

async function main() {
  if (!process.env.OPENAI_BASE_URL) fail("OPENAI_BASE_URL is not set");
  if (!process.env.OPENAI_API_KEY) fail("OPENAI_API_KEY is not set");
  const model = process.env.TRINITY_MODEL || "trinity";
  const maxTurns = Number(process.env.AGENT_MAX_TURNS ?? "6");
  if (!Number.isInteger(maxTurns)) fail(`AGENT_MAX_TURNS must be an integer, got ${JSON.stringify(process.env.AGENT_MAX_TURNS)}`);
  const task = readTask();
  const truth = Number(String(task.answer).replaceAll(",", ""));
  if (String(task.answer).trim() === "" || Number.isNaN(truth)) fail(`the task's answer ${JSON.stringify(task.answer)} is not a number`);
  log(`run ${process.env.TRINITY_RUN_ID ?? "-"} question: ${task.question}`);

  // The client reads OPENAI_BASE_URL and OPENAI_API_KEY; it retries 408/409/429/5xx and connection
  // errors with backoff by itself.
  const client = new OpenAI({ maxRetries: 4 });
  const messages = [
    { role: "system", content: SYSTEM_PROMPT },
    { role: "user", content: String(task.question) },
  ];
  let turns = 0, toolCalls = 0, predicted = null, value = null, stopped = "max_turns";
  while (turns < maxTurns) {
    let reply;
    try {
      reply = await client.chat.completions.create({ model, messages, tools: [CALCULATOR_TOOL] });
    } catch (e) {
      if (e instanceof OpenAI.APIError && e.status === 400 && e.code === "context_length_exceeded") {
        log(`the conversation no longer fits the context: ${e.message}`);  // the episode ends here
        stopped = "context_length";
        break;
      }
      if (e instanceof OpenAI.APIError) fail(`chat.completions.create -> ${e.status ? `HTTP ${e.status}: ` : ""}${e.message}`);
      throw e;
    }
    turns++;
    const choice = reply.choices?.[0];
    if (!choice?.message) fail(`unexpected response: ${JSON.stringify(reply).slice(0, 300)}`);
    const message = choice.message;
    // Sent back unchanged (role, content, tool_calls): the endpoint recognises its own answer and
    // reuses the sampled token ids, so the episode trains as one experience.
    messages.push(message);
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) {
      [predicted, value] = lastNumber(message.content);
      stopped = choice.finish_reason === "length" ? "length" : "answer";
      log(`turn ${turns}: answer ${JSON.stringify(message.content)}`);
      break;
    }
    for (const call of calls) {
      const result = runTool(call);
      toolCalls++;
      log(`turn ${turns}: calculator(${call.function?.arguments}) = ${result}`);
      messages.push({ role: "tool", tool_call_id: call.id ?? "", content: result });
    }
  }

  const correct = value !== null && Math.abs(value - truth) < 1e-6 ? 1 : 0;
  log(`predicted ${predicted}, truth ${task.answer}, reward ${correct.toFixed(1)}`);
  process.stdout.write(JSON.stringify({
    reward: correct,
    metrics: { turns, tool_calls: toolCalls, correct },
    info: { predicted, answer: String(task.answer), stopped },
  }) + "\n");
}

main().catch((e) => fail(e?.stack ?? String(e)));
