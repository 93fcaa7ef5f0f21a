#!/usr/bin/env python3
"""Agent quickstart agent (standard library): offers an `add` tool; reward 1 when the final answer is the sum."""
import json
import os
import sys
import urllib.request

TOOLS = [{"type": "function", "function": {
    "name": "add", "description": "adds two numbers given as 'a+b'",
    "parameters": {"type": "object", "properties": {"e": {"type": "string"}}, "required": ["e"]}}}]


def chat(messages):
    body = json.dumps({"model": os.environ.get("TRINITY_MODEL", "trinity"), "messages": messages, "tools": TOOLS}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body, headers={
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)["choices"][0]["message"]


def add(expression):
    a, _, b = expression.partition("+")
    try:
        return str(int(a) + int(b))
    except ValueError:
        return "error"


def main():
    task = json.loads(os.environ.get("TRINITY_TASK") or sys.stdin.readline())
    messages = [{"role": "user", "content": task["prompt"]}]
    reply = chat(messages)
    calls = reply.get("tool_calls") or []
    if calls:
        messages.append(reply)
        for call in calls:
            try:
                args = json.loads(call["function"]["arguments"])
                result = add(str(args.get("e", ""))) if call["function"]["name"] == "add" else "error"
            except (ValueError, AttributeError):
                result = "error"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        reply = chat(messages)
    correct = int((reply.get("content") or "").strip() == str(task["answer"]).strip())
    print(json.dumps({"reward": float(correct), "metrics": {"tool_calls": int(bool(calls)), "correct": correct}}))


if __name__ == "__main__":
    main()
