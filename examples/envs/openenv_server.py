#!/usr/bin/env python3
"""Environment servers for trinity's env_workflow (standard library only; docs/environments.md).

  python3 openenv_server.py --env linewalk [--port 8011] [--protocol openenv|agentgym]

Speaks the OpenEnv protocol (meta-pytorch/OpenEnv, core/env_server/http_server.py):
  WebSocket /ws, one environment per connection: {"type": "reset"|"step"|"state"|"close", "data": {...}}
    -> {"type": "observation", "data": {"observation": {...}, "reward": r|null, "done": b}}
     | {"type": "state", "data": {...}} | {"type": "error", "data": {"message", "code"}}
  HTTP POST /reset {seed, ...}, POST /step {"action": {...}} -> {"observation", "reward", "done"}
       (one shared environment: OpenEnv's HTTP form keeps no session; use /ws for parallel episodes),
       GET /state, /health, /schema, /metadata.
or, with --protocol agentgym, AgentGym's (WooooDyy/AgentGym agentenv-* servers):
  POST /create -> {"id": n}; POST /reset {"id", "data_idx"}; POST /step {"id", "action"}
    -> {"observation", "reward", "done"}; GET /observation?id=n; POST /close {"id"}.

Environments:
  linewalk  a text game on a line of `size` cells (reset arg, default 10): "You are at 2. The goal is
            at 7." The agent answers left or right; reaching the goal gives reward 1 and ends the
            episode; after max_steps (reset arg, default distance + 2) it ends with 0. Action
            {"message": "<text>"}: the last word left/right in the text counts. Reset args: seed,
            size, start, goal, max_steps.
  calc      a tool environment: reset gives an arithmetic question; action {"tool": "calculate",
            "expression": "..."} returns the value (reward null), {"tool": "answer", "answer": "..."}
            ends the episode with reward 1 if it is right, else 0.

Fault injection for tests: --die-after-steps N (the process exits during the N-th step), --never-done
(episodes never end), --delay S (each reply waits S seconds), --malformed-step (a step reply that is
not JSON). The first line on stdout is "listening on http://127.0.0.1:<port>".
"""

import argparse
import ast
import base64
import hashlib
import json
import operator
import os
import random
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
ARGS = None


class LineWalk:
    schema = {
        "action": {"type": "object", "properties": {"message": {"type": "string",
                   "description": "left or right"}}, "required": ["message"]},
        "observation": {"type": "object", "properties": {"text": {"type": "string"},
                        "position": {"type": "integer"}, "goal": {"type": "integer"}}},
        "state": {"type": "object", "properties": {"step_count": {"type": "integer"}}},
    }

    def __init__(self):
        self.pos = self.goal = self.steps = 0
        self.size = 10
        self.max_steps = 1
        self.done = False

    def text(self, note=""):
        return (f"{note}You are at {self.pos}. The goal is at {self.goal}. "
                "Answer left or right.")

    def reset(self, seed=None, start=None, goal=None, max_steps=None, size=10, **_):
        rng = random.Random(seed)
        self.size = max(2, min(10, int(size)))
        self.pos = int(start) if start is not None else rng.randint(0, self.size - 1)
        self.goal = int(goal) if goal is not None else rng.choice([g for g in range(self.size) if g != self.pos])
        self.max_steps = int(max_steps) if max_steps is not None else abs(self.goal - self.pos) + 2
        self.steps, self.done = 0, False
        return {"text": self.text(), "position": self.pos, "goal": self.goal}, None, False

    def step(self, action):
        msg = str(action.get("message", action.get("action", "")))
        words = [w.strip(".,!`*\"'()").lower() for w in msg.split()]
        moves = [w for w in words if w in ("left", "right")]
        note = ""
        if self.done:
            note = "The episode is over. "
        elif not moves:
            note = "Invalid answer: say left or right. "
        else:
            self.pos = max(0, min(self.size - 1, self.pos + (1 if moves[-1] == "right" else -1)))
        self.steps += 1
        reward = 0.0
        if self.pos == self.goal and not self.done:
            reward, self.done = 1.0, True
            note = "You reached the goal! "
        elif self.steps >= self.max_steps and not ARGS.never_done:
            self.done = True
        return {"text": self.text(note), "position": self.pos, "goal": self.goal}, reward, self.done

    def state(self):
        return {"step_count": self.steps, "position": self.pos, "goal": self.goal}


OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def safe_eval(expr):
    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.BinOp) and type(n.op) in OPS:
            return OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        raise ValueError("only integers with + - * are allowed")
    return ev(ast.parse(expr, mode="eval"))


class Calc:
    schema = {
        "action": {"type": "object", "properties": {
            "tool": {"type": "string", "enum": ["calculate", "answer"]},
            "expression": {"type": "string", "description": "an expression with + - * to evaluate"},
            "answer": {"type": "string", "description": "the final answer"}}, "required": ["tool"]},
        "observation": {"type": "object", "properties": {"text": {"type": "string"}}},
        "state": {"type": "object", "properties": {"step_count": {"type": "integer"}}},
    }

    def __init__(self):
        self.question, self.value, self.steps, self.done = "", 0, 0, False

    def reset(self, seed=None, a=None, b=None, c=None, **_):
        rng = random.Random(seed)
        a = int(a) if a is not None else rng.randint(10, 99)
        b = int(b) if b is not None else rng.randint(10, 99)
        c = int(c) if c is not None else rng.randint(1, 9)
        self.question, self.value = f"What is {a}*{b}+{c}?", a * b + c
        self.steps, self.done = 0, False
        return {"text": self.question}, None, False

    def step(self, action):
        self.steps += 1
        tool = action.get("tool")
        if tool == "calculate":
            try:
                return {"text": str(safe_eval(str(action.get("expression", ""))))}, None, False
            except Exception as e:  # noqa: BLE001 - any bad expression is an observation
                return {"text": f"error: {e}"}, None, False
        if tool == "answer":
            self.done = True
            right = str(action.get("answer", "")).strip() == str(self.value)
            return {"text": "correct" if right else "wrong"}, 1.0 if right else 0.0, True
        return {"text": "unknown tool: use calculate or answer"}, None, False

    def state(self):
        return {"step_count": self.steps, "question": self.question}


ENVS = {"linewalk": LineWalk, "calc": Calc}


class Faults:
    lock = threading.Lock()
    steps = 0

    @classmethod
    def on_step(cls):
        with cls.lock:
            cls.steps += 1
            if ARGS.die_after_steps and cls.steps >= ARGS.die_after_steps:
                os._exit(3)


def do_reset(env, data):
    obs, reward, done = env.reset(**data)
    return {"observation": obs, "reward": reward, "done": done}


def do_step(env, action):
    Faults.on_step()
    obs, reward, done = env.step(action)
    return {"observation": obs, "reward": reward, "done": done}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    shared = None          # the HTTP form's one environment
    gym = {}               # AgentGym: id -> env
    gym_next = 0
    gym_lock = threading.Lock()

    def log_message(self, *a):
        pass

    def reply(self, status, obj=None, raw=None):
        if ARGS.delay:
            time.sleep(ARGS.delay)
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if not n:
            return {}
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        if url.path == "/health":
            return self.reply(200, {"status": "healthy"})
        if url.path == "/schema":
            return self.reply(200, ENVS[ARGS.env].schema)
        if url.path == "/metadata":
            return self.reply(200, {"name": ARGS.env, "description": ENVS[ARGS.env].__doc__ or ARGS.env})
        if url.path == "/state" and ARGS.protocol == "openenv":
            return self.reply(200, Handler.shared.state() if Handler.shared else {})
        if url.path == "/observation" and ARGS.protocol == "agentgym":
            env = Handler.gym.get(int(parse_qs(url.query).get("id", ["-1"])[0]))
            return self.reply(200, env.text() if env and hasattr(env, "text") else "")
        self.reply(404, {"detail": "Not Found"})

    def do_POST(self):
        path = urlparse(self.path).path
        try:
            data = self.body()
        except ValueError as e:
            return self.reply(422, {"detail": f"invalid JSON: {e}"})
        try:
            if ARGS.protocol == "agentgym":
                return self.agentgym(path, data)
            if path == "/reset":
                Handler.shared = ENVS[ARGS.env]()
                return self.reply(200, do_reset(Handler.shared, data))
            if path == "/step":
                if Handler.shared is None:
                    return self.reply(400, {"detail": "reset first"})
                if not isinstance(data.get("action"), dict):
                    return self.reply(422, {"detail": "action must be an object"})
                if ARGS.malformed_step:
                    return self.reply(200, raw=b"<html>not json</html>")
                return self.reply(200, do_step(Handler.shared, data["action"]))
        except Exception as e:  # noqa: BLE001
            return self.reply(500, {"detail": str(e)})
        self.reply(404, {"detail": "Not Found"})

    def agentgym(self, path, data):
        if path == "/create":
            with Handler.gym_lock:
                Handler.gym_next += 1
                Handler.gym[Handler.gym_next] = ENVS[ARGS.env]()
                return self.reply(200, {"id": Handler.gym_next})
        env = Handler.gym.get(int(data.get("id", -1)))
        if env is None:
            return self.reply(404, {"detail": f"no environment {data.get('id')}"})
        if path == "/reset":
            obs, _, _ = env.reset(seed=data.get("data_idx"))
            return self.reply(200, {"observation": obs["text"], "reward": 0, "done": False})
        if path == "/step":
            if ARGS.malformed_step:
                return self.reply(200, raw=b"not json")
            r = do_step(env, {"message": data.get("action", "")})
            return self.reply(200, {"observation": r["observation"]["text"], "reward": r["reward"] or 0,
                                    "done": r["done"]})
        if path == "/close":
            with Handler.gym_lock:
                Handler.gym.pop(int(data["id"]), None)
            return self.reply(200, {"closed": True})
        return self.reply(404, {"detail": "Not Found"})

    # --- WebSocket (RFC 6455, server side) ---
    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        env = ENVS[ARGS.env]()
        while True:
            msg = self.ws_read()
            if msg is None:
                break
            try:
                m = json.loads(msg)
                kind = m.get("type")
                if kind == "reset":
                    out = {"type": "observation", "data": do_reset(env, m.get("data") or {})}
                elif kind == "step":
                    if ARGS.malformed_step:
                        self.ws_send("this is not json")
                        continue
                    out = {"type": "observation", "data": do_step(env, m.get("data") or {})}
                elif kind == "state":
                    out = {"type": "state", "data": env.state()}
                elif kind == "close":
                    self.ws_send_frame(0x8, struct.pack("!H", 1000))
                    break
                else:
                    out = {"type": "error", "data": {"message": f"Unknown message type: {kind}",
                                                     "code": "UNKNOWN_TYPE"}}
            except Exception as e:  # noqa: BLE001
                out = {"type": "error", "data": {"message": str(e), "code": "EXECUTION_ERROR"}}
            if ARGS.delay:
                time.sleep(ARGS.delay)
            self.ws_send(json.dumps(out))
        self.close_connection = True

    def ws_read(self):
        parts = []
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return None
            fin, op = head[0] & 0x80, head[0] & 0x0F
            n = head[1] & 0x7F
            if n == 126:
                n = struct.unpack("!H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytearray(self.rfile.read(n))
            for i in range(len(data)):
                data[i] ^= mask[i % 4]
            if op == 0x8:
                self.ws_send_frame(0x8, bytes(data[:2]) or struct.pack("!H", 1000))
                return None
            if op == 0x9:
                self.ws_send_frame(0xA, bytes(data))
                continue
            if op == 0xA:
                continue
            parts.append(bytes(data))
            if fin:
                return b"".join(parts).decode()

    def ws_send_frame(self, op, payload):
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | op, n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | op, 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | op, 127, n)
        try:
            self.wfile.write(head + payload)
            self.wfile.flush()
        except OSError:
            pass

    def ws_send(self, text):
        self.ws_send_frame(0x1, text.encode())


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", choices=sorted(ENVS), default="linewalk")
    p.add_argument("--protocol", choices=["openenv", "agentgym"], default="openenv")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--die-after-steps", type=int, default=0)
    p.add_argument("--never-done", action="store_true")
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--malformed-step", action="store_true")
    ARGS = p.parse_args()
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer((ARGS.host, ARGS.port), Handler)
    print(f"listening on http://{ARGS.host}:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
