"""Logprobs/entropy of token sequences with the PyTorch reference model, for a checkpoint written
by trinity (the other direction of the golden tests: our files, their math).
Usage: /usr/bin/python3 torch_logprobs.py MODEL_DIR IN.jsonl OUT.jsonl"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import Model, load_dir  # noqa

cfg, sd = load_dir(sys.argv[1])
model = Model(cfg, sd)
with open(sys.argv[2]) as fin, open(sys.argv[3], "w") as fout, torch.no_grad():
    for line in fin:
        ids = torch.tensor(json.loads(line)["tokens"], dtype=torch.int64)
        lp, ent = model.logprobs(ids)
        fout.write(json.dumps({"logprobs": lp.tolist(), "entropy": ent.tolist()}) + "\n")
