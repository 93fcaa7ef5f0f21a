#!/usr/bin/env python3
"""Data for add_agent.py (standard library): python3 make_add_data.py --out DIR [--seed S]

Two-digit additions with a carry (so the carry-less sum is always wrong):
DIR/add_train.jsonl, DIR/add_eval.jsonl: {"prompt": "87+26=", "answer": "113"}.
DIR/add_sft.jsonl: conversations for the SFT warm-up (messages format). A fraction (--tool-fraction,
0.3) calls the tool as the agent offers it (assistant tool call, tool result, assistant answer = the
result); the rest answer directly with the carries forgotten (87+26 -> "103"), which is always wrong.
"""

import argparse
import json
import os
import random


def carryless(a, b):
    out, place = 0, 1
    while a or b:
        da, db = a % 10, b % 10
        a, b = a // 10, b // 10
        out += (da + db if not (a or b) else (da + db) % 10) * place
        place *= 10
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--eval", type=int, default=64)
    p.add_argument("--sft", type=int, default=3000)
    p.add_argument("--tool-fraction", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)

    def pair():
        while True:
            x, y = rng.randint(10, 99), rng.randint(10, 99)
            if carryless(x, y) != x + y:
                return x, y

    for name, n in (("add_train", a.train), ("add_eval", a.eval)):
        with open(os.path.join(a.out, name + ".jsonl"), "w") as f:
            for _ in range(n):
                x, y = pair()
                f.write(json.dumps({"prompt": f"{x}+{y}=", "answer": str(x + y)}) + "\n")
    with open(os.path.join(a.out, "add_sft.jsonl"), "w") as f:
        for _ in range(a.sft):
            x, y = pair()
            if rng.random() < a.tool_fraction:
                call = "<tool_call>" + json.dumps({"name": "add", "arguments": {"e": f"{x}+{y}"}}, separators=(",", ":")) + "</tool_call>"
                msgs = [{"role": "user", "content": f"{x}+{y}="}, {"role": "assistant", "content": call},
                        {"role": "tool", "content": str(x + y)}, {"role": "assistant", "content": str(x + y)}]
            else:
                msgs = [{"role": "user", "content": f"{x}+{y}="}, {"role": "assistant", "content": str(carryless(x, y))}]
            f.write(json.dumps({"messages": msgs}) + "\n")
    print(f"make_add_data: wrote {a.train} train, {a.eval} eval and {a.sft} SFT rows to {a.out}")


if __name__ == "__main__":
    main()
