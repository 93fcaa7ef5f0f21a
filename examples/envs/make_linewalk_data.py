#!/usr/bin/env python3
"""Data for the environment quickstart (standard library): python3 make_linewalk_data.py --out DIR

DIR/linewalk_train.jsonl, DIR/linewalk_eval.jsonl: tasks {"prompt": "walk", "seed": n, "size": S, "goal": G,
"start": P, "max_steps": |G-P|}; env_workflow passes them to the linewalk server's reset
(workflow_args.reset_keys). The goal is at one end of the line (0 or S-1) and the start anywhere else,
so the right move depends on the goal; max_steps = the distance: one wrong move fails the episode.
DIR/linewalk_sft.jsonl: conversations for the SFT warm-up (messages format) in the same words the
workflow uses ("at P goal G" observations, "left"/"right" answers). The moves are right when the goal
is at 0 (--p-correct-left 1.0) and mostly wrong when it is at S-1 (--p-correct-right 0.3): the warmed
model walks left, succeeding only when the goal is on the left; GRPO has to teach it the other half.
"""

import argparse
import json
import os
import random


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, default=5)
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--eval", type=int, default=32)
    p.add_argument("--sft", type=int, default=1500)
    p.add_argument("--p-correct-left", type=float, default=1.0, help="P(correct move) when the goal is at 0")
    p.add_argument("--p-correct-right", type=float, default=0.3, help="P(correct move) when the goal is at S-1")
    p.add_argument("--seed", type=int, default=11)
    a = p.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    for name, n, base in (("linewalk_train", a.train, 0), ("linewalk_eval", a.eval, 10 ** 6)):
        with open(os.path.join(a.out, name + ".jsonl"), "w") as f:
            for i in range(n):
                goal = rng.choice([0, a.size - 1])
                start = rng.choice([p for p in range(a.size) if p != goal])
                f.write(json.dumps({"prompt": "walk", "seed": base + i, "size": a.size, "goal": goal, "start": start,
                                    "max_steps": abs(goal - start)}) + "\n")
    with open(os.path.join(a.out, "linewalk_sft.jsonl"), "w") as f:
        for _ in range(a.sft):
            goal = rng.choice([0, a.size - 1])
            pos = rng.choice([p for p in range(a.size) if p != goal])
            msgs = []
            for _ in range(abs(goal - pos)):
                msgs.append({"role": "user", "content": f"at {pos} goal {goal}"})
                right = goal > pos
                if rng.random() >= (a.p_correct_right if right else a.p_correct_left):
                    right = not right
                msgs.append({"role": "assistant", "content": "right" if right else "left"})
                pos = max(0, min(a.size - 1, pos + (1 if right else -1)))
                if pos == goal:
                    break
            f.write(json.dumps({"messages": msgs}) + "\n")
    print(f"make_linewalk_data: wrote {a.train} train, {a.eval} eval and {a.sft} SFT rows to {a.out}")


if __name__ == "__main__":
    main()
