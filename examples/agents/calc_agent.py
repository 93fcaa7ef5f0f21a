#!/usr/bin/env python3
"""A calculator agent for trinity's `command_workflow` (docs/agents.md), standard library only.

Contract: trinity starts this script once per run (one task x one repeat) with OPENAI_BASE_URL /
OPENAI_API_KEY pointing at the rollout model (every call made with that key is recorded as this
run's experience), TRINITY_TASK = the task row as JSON (also on stdin) and TRINITY_MODEL = the model
name to send. The script talks to the model, then prints ONE JSON line with the reward on stdout:
    {"reward": 1.0, "metrics": {"turns": 2, "tool_calls": 1, "correct": 1}, "info": {...}}
Everything else goes to stderr (the run's log file). An exit status other than 0, or no reward line,
is a failed run (retried, then counted), never a zero reward. Sampling parameters (temperature,
max_tokens) are not sent: they come from the config. Assistant messages are sent back exactly as
returned, so the endpoint can reuse the sampled token ids and train the whole episode as one sequence.

Task rows: {"question": "What is (12 + 7) * 3 - 5?", "answer": "52"}.
Environment: AGENT_MAX_TURNS (6) chat turns at most. A conversation that outgrows the model's context
(HTTP 400 context_length_exceeded) ends the episode with reward 0 instead of failing the run.
"""

import ast
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

SYSTEM_PROMPT = (
    "You are a careful assistant that solves arithmetic problems. Use the calculator tool for every "
    "computation, one step at a time if you like. When you know the result, reply with a short "
    "sentence that ends with the final answer as a plain number."
)

CALCULATOR_TOOL = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluates an arithmetic expression with numbers, + - * / // % **, parentheses "
                       "and unary minus, e.g. '(12 + 7) * 3 - 5'. Returns the value.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "the expression to evaluate"}},
            "required": ["expression"],
        },
    },
}

RETRY_STATUS = (429, 503)  # the server is busy: wait and retry; any other error ends the run
RETRY_DELAYS_S = (1, 2, 4, 8)
REQUEST_TIMEOUT_S = 600  # the run's own timeout (workflow_args.timeout) is the real limit


def log(msg):
    print(f"calc_agent: {msg}", file=sys.stderr, flush=True)


def fail(msg):
    """A failed run: a clear line on stderr, exit status 1, no reward line."""
    log(f"error: {msg}")
    sys.exit(1)


# ---- a safe calculator: walks the AST, allows only numbers and arithmetic (no eval) ----------------

class CalcError(ValueError):
    pass


_BIN_OPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a ** b,
}
MAX_EXPRESSION_CHARS = 200
MAX_INT_BITS = 1024  # bounds every intermediate integer, so 9**9**9 is refused instead of hanging


def _check_size(v):
    if type(v) not in (int, float):  # (-8) ** 0.5 is complex
        raise CalcError("the result is not a real number")
    if isinstance(v, int) and v.bit_length() > MAX_INT_BITS:
        raise CalcError("result too large")
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        raise CalcError("result is not a finite number")
    return v


def _eval_node(node, depth=0):
    if depth > 50:
        raise CalcError("expression nested too deeply")
    if isinstance(node, ast.Expression):
        return _eval_node(node.body, depth + 1)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):  # not bool, complex, str
        return _check_size(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval_node(node.operand, depth + 1)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN_OPS:
        a = _eval_node(node.left, depth + 1)
        b = _eval_node(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            if abs(b) > 1024:
                raise CalcError("exponent too large")
            if isinstance(a, int) and isinstance(b, int) and b > 0 and a.bit_length() * b > MAX_INT_BITS:
                raise CalcError("result too large")
        try:
            return _check_size(_BIN_OPS[type(node.op)](a, b))
        except ZeroDivisionError:
            raise CalcError("division by zero")
        except OverflowError:
            raise CalcError("result too large")
    raise CalcError(f"only numbers, + - * / // % ** and parentheses are allowed (found {type(node).__name__})")


def calculate(expression):
    """Evaluates an arithmetic expression; CalcError on anything else."""
    if not isinstance(expression, str):
        raise CalcError("expression must be a string")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalcError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    # Models often write ^ for power and the typographic signs for * and /.
    text = expression.replace("^", "**").replace("\u00d7", "*").replace("\u00f7", "/").replace(",", "")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):  # ValueError: a NUL byte
        raise CalcError(f"cannot parse {expression!r}")
    return _eval_node(tree)


def format_number(v):
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v) if isinstance(v, int) else repr(round(v, 10))


def run_tool(call):
    """One tool call -> the tool message's content. Bad input gives an error text, never a crash."""
    fn = call.get("function") or {}
    if fn.get("name") != "calculator":
        return f"error: unknown tool {fn.get('name')!r}; the only tool is 'calculator'"
    args = fn.get("arguments")
    try:
        args = json.loads(args) if isinstance(args, str) else args
    except json.JSONDecodeError:
        return "error: the arguments are not valid JSON; send {\"expression\": \"...\"}"
    if not isinstance(args, dict) or "expression" not in args:
        return "error: missing argument 'expression'"
    try:
        return format_number(calculate(args["expression"]))
    except CalcError as e:
        return f"error: {e}"


# ---- the model endpoint ----------------------------------------------------------------------------

def chat(base_url, api_key, body):
    """POST /chat/completions -> the response; None when the conversation no longer fits the model's
    context (the episode ends there). Retries 429/503, exits 1 on any other failure."""
    url = base_url + "/chat/completions"
    data = json.dumps(body).encode()
    for attempt in range(len(RETRY_DELAYS_S) + 1):
        req = urllib.request.Request(url, data=data, method="POST", headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {api_key}"})
        try:
            with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT_S) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            detail, code = e.read().decode(errors="replace"), None
            try:
                error = json.loads(detail)["error"]
                detail, code = error["message"], error.get("code")
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
            if e.code == 400 and code == "context_length_exceeded":
                log(f"the conversation no longer fits the context: {detail}")
                return None
            if e.code in RETRY_STATUS and attempt < len(RETRY_DELAYS_S):
                log(f"POST {url} -> {e.code}, retrying in {RETRY_DELAYS_S[attempt]} s")
                time.sleep(RETRY_DELAYS_S[attempt])
                continue
            fail(f"POST {url} -> HTTP {e.code}: {detail}")
        except (urllib.error.URLError, OSError) as e:
            fail(f"POST {url} failed: {getattr(e, 'reason', e)}")
        except ValueError as e:
            fail(f"POST {url}: the response is not JSON ({e})")
    fail("unreachable")


# ---- the episode -----------------------------------------------------------------------------------

NUMBER_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def last_number(text):
    """The last number in the text as (text, value), or (None, None)."""
    found = NUMBER_RE.findall(text or "")
    if not found:
        return None, None
    word = found[-1].rstrip(",")
    return word, float(word.replace(",", ""))


def read_task():
    text = os.environ.get("TRINITY_TASK")
    if text is None:  # not set: read the row from stdin (trinity writes it there too)
        text = sys.stdin.read()
    try:
        task = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"the task is not JSON: {e}")
    if not isinstance(task, dict) or "question" not in task or "answer" not in task:
        fail(f"the task row needs 'question' and 'answer', got {text[:200]!r}")
    return task


def main():
    base_url = os.environ.get("OPENAI_BASE_URL", "").rstrip("/")
    if not base_url:
        fail("OPENAI_BASE_URL is not set")
    api_key = os.environ.get("OPENAI_API_KEY", "")
    model = os.environ.get("TRINITY_MODEL", "trinity")
    try:
        max_turns = int(os.environ.get("AGENT_MAX_TURNS", "6"))
    except ValueError:
        fail(f"AGENT_MAX_TURNS must be an integer, got {os.environ['AGENT_MAX_TURNS']!r}")
    task = read_task()
    try:
        truth = float(str(task["answer"]).replace(",", ""))
    except ValueError:
        fail(f"the task's answer {task['answer']!r} is not a number")
    log(f"run {os.environ.get('TRINITY_RUN_ID', '-')} question: {task['question']}")

    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": str(task["question"])}]
    turns = tool_calls = 0
    predicted = value = None
    stopped = "max_turns"
    while turns < max_turns:
        reply = chat(base_url, api_key, {"model": model, "messages": messages, "tools": [CALCULATOR_TOOL]})
        if reply is None:
            stopped = "context_length"
            break
        turns += 1
        try:
            choice = reply["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            fail(f"unexpected response: {json.dumps(reply)[:300]}")
        # Sent back unchanged (role, content, tool_calls): the endpoint recognises its own answer and
        # reuses the sampled token ids, so the episode trains as one experience.
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            predicted, value = last_number(message.get("content"))
            stopped = "answer" if choice.get("finish_reason") != "length" else "length"
            log(f"turn {turns}: answer {message.get('content')!r}")
            break
        for call in calls:
            result = run_tool(call)
            tool_calls += 1
            log(f"turn {turns}: calculator({(call.get('function') or {}).get('arguments')}) = {result}")
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result})

    correct = int(value is not None and abs(value - truth) < 1e-6)
    log(f"predicted {predicted}, truth {task['answer']}, reward {float(correct)}")
    print(json.dumps({
        "reward": float(correct),
        "metrics": {"turns": turns, "tool_calls": tool_calls, "correct": correct},
        "info": {"predicted": predicted, "answer": str(task["answer"]), "stopped": stopped},
    }), flush=True)


if __name__ == "__main__":
    main()
