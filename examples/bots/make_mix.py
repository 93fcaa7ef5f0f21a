#!/usr/bin/python3
"""Builds the BOTS example's mixed taskset from the 2-digit rows scored by the SFT model
(`trinity data process` over data2/train.jsonl) and 3-digit rows: 150 rows the model already solves
(pass rate 1 at temperature 0.5), 150 other 2-digit rows (learnable: the carries), and 300 3-digit
additions with a carry (far too hard for this model). Usage: make_mix.py SCORED_2DIGIT_JSONL
THREE_DIGIT_JSONL OUT_JSONL."""
import json
import random
import sys


def main():
    scored = [json.loads(line) for line in open(sys.argv[1])]
    three = [json.loads(line) for line in open(sys.argv[2])]
    easy = [r for r in scored if r["strong_pass_rate"] == 1.0][:150]
    rest = [r for r in scored if r["strong_pass_rate"] < 1.0][:150]

    def carry(r):
        a, b = r["prompt"].rstrip("=").split("+")
        return int(a) % 10 + int(b) % 10 >= 10

    hard = [r for r in three if carry(r)][:300]
    rows = [{"prompt": r["prompt"], "answer": r["answer"]} for r in easy + rest + hard]
    random.Random(1).shuffle(rows)
    with open(sys.argv[3], "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"mix: {len(easy)} solved, {len(rest)} learnable, {len(hard)} too hard -> {sys.argv[3]}")


if __name__ == "__main__":
    main()
