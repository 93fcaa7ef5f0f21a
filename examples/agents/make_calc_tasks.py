#!/usr/bin/env python3
"""Makes the calculator tasks of examples/agents (standard library only).

    python3 make_calc_tasks.py --out DIR [--train 2000] [--eval 200] [--seed 42]

writes DIR/calc_train.jsonl and DIR/calc_eval.jsonl, one row per question:
    {"question": "What is (12 + 7) * 3 - 5?", "answer": "52"}
Each question has 2 or 3 operations (+ - * /) on integers 1..20; every intermediate result is a
non-zero integer within +-1000 (divisions are exact); the answer is a string. No eval question also
appears in the train set. The same --seed always gives the same files.
"""

import argparse
import json
import os
import random
import sys

PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
MAX_ABS_VALUE = 1000  # every intermediate and final value stays within this


class Node:
    def __init__(self, op=None, left=None, right=None, value=None):
        self.op, self.left, self.right, self.value = op, left, right, value


def random_tree(rng, n_ops):
    """A random expression tree with n_ops operators; None when a value breaks the rules."""
    if n_ops == 0:
        return Node(value=rng.randint(1, 20))
    n_left = rng.randint(0, n_ops - 1)
    n_right = n_ops - 1 - n_left
    op = rng.choice("+-*/")
    left = random_tree(rng, n_left)
    if left is None:
        return None
    if op == "/" and n_right == 0:  # pick a divisor, so divisions are not rarer than the other operators
        divisors = [d for d in range(2, 21) if left.value % d == 0]
        right = Node(value=rng.choice(divisors)) if divisors else None
    else:
        right = random_tree(rng, n_right)
    if right is None:
        return None
    a, b = left.value, right.value
    if op == "+":
        v = a + b
    elif op == "-":
        v = a - b
    elif op == "*":
        v = a * b
    else:
        if b in (0, 1) or a % b != 0:
            return None
        v = a // b
    if v == 0 or abs(v) > MAX_ABS_VALUE:  # no zero anywhere: (8 - 8) * x is no exercise
        return None
    return Node(op, left, right, v)


def render(node, parent_op=None, is_right=False):
    """The expression with only the parentheses it needs."""
    if node.op is None:
        return str(node.value)
    text = f"{render(node.left, node.op)} {node.op} {render(node.right, node.op, True)}"
    if parent_op is not None:
        p, q = PRECEDENCE[node.op], PRECEDENCE[parent_op]
        # a - (b + c), a / (b * c): the right operand of - and / needs them at equal precedence too
        if p < q or (p == q and is_right and parent_op in "-/"):
            text = f"({text})"
    return text


TEMPLATES = ["What is {}?", "What is {}?", "Compute {}.", "Calculate {}."]


def make_question(rng):
    n_ops = rng.choice((2, 3))
    while True:
        tree = random_tree(rng, n_ops)
        if tree is not None:
            expr = render(tree)
            return {"question": rng.choice(TEMPLATES).format(expr), "answer": str(tree.value)}, expr


def make_split(rng, n, exclude):
    rows, seen = [], set(exclude)
    attempts = 0
    while len(rows) < n:
        attempts += 1
        if attempts > 100 * n + 1000:
            sys.exit(f"make_calc_tasks: error: could not find {n} distinct questions")
        row, expr = make_question(rng)
        if expr in seen:
            continue
        seen.add(expr)
        rows.append(row)
    return rows, seen


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def main():
    ap = argparse.ArgumentParser(description="Makes calc_train.jsonl and calc_eval.jsonl for examples/agents.")
    ap.add_argument("--out", required=True, help="output directory (created if missing)")
    ap.add_argument("--train", type=int, default=2000, help="training questions (2000)")
    ap.add_argument("--eval", type=int, default=200, help="eval questions (200), none of them in the train set")
    ap.add_argument("--seed", type=int, default=42, help="random seed (42)")
    args = ap.parse_args()
    if args.train < 0 or args.eval < 0:
        ap.error("--train and --eval must be >= 0")
    rng = random.Random(args.seed)
    train, seen = make_split(rng, args.train, ())
    evals, _ = make_split(rng, args.eval, seen)
    os.makedirs(args.out, exist_ok=True)
    write_jsonl(os.path.join(args.out, "calc_train.jsonl"), train)
    write_jsonl(os.path.join(args.out, "calc_eval.jsonl"), evals)
    print(f"make_calc_tasks: wrote {len(train)} train and {len(evals)} eval questions to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
