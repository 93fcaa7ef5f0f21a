#!/usr/bin/python3
"""Layer check (DESIGN.md section 2), two rules:

1. the layer graph: the trinity_* targets a layer links (src/<layer>/CMakeLists.txt) must be among
   the layers INTENDED below lets it use (transitively: a layer may use what its allowed layers use);
2. every `#include "<layer>/..."` in src/<A>/ names A itself or a layer A links (transitively).
`cli` and `studio` build on everything. Exit 1 with one line per violation.
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent / "src"
layers = sorted(p.name for p in root.iterdir() if (p / "CMakeLists.txt").exists())

direct = {}
for layer in layers:
    text = (root / layer / "CMakeLists.txt").read_text()
    deps = set(re.findall(r"\btrinity_([a-z_]+)\b", text))
    deps.discard(layer)
    deps.discard("library")
    deps.discard("cli_lib")
    direct[layer] = {d for d in deps if d in layers}


# Who may link whom (direct), from DESIGN.md: core <- tensor <- model <- {engine, trainer}; algorithm
# only core; hub (Hugging Face Hub ids) only core; buffer core and hub; workflow sees the engine only
# through ModelClient; the explorer feeds the buffer and never links the trainer (shared logic lives in pipeline).
INTENDED = {
    "core": set(),
    "hub": {"core"},
    "dist": {"core"},
    "tensor": {"core"},
    "model": {"tensor"},
    "tokenizer": {"core"},
    "env": {"core"},
    "engine": {"model", "tokenizer"},
    "server": {"engine", "tokenizer"},
    "algorithm": {"core"},
    "buffer": {"core", "hub"},
    "pipeline": {"algorithm", "buffer"},
    "workflow": {"buffer", "tokenizer", "env"},
    "monitor": {"core"},
    "sync": {"model"},
    "trainer": {"model", "algorithm", "buffer", "tokenizer", "pipeline", "dist"},
    "explorer": {"workflow", "engine", "server", "tokenizer", "buffer", "algorithm", "pipeline", "monitor", "sync"},
    "config": {"algorithm", "buffer"},
    "launcher": {"config", "explorer", "trainer", "monitor", "sync", "buffer", "pipeline", "dist"},
}


def intended_closure(layer, seen=None):
    seen = set() if seen is None else seen
    for d in INTENDED.get(layer, ()):
        if d not in seen:
            seen.add(d)
            intended_closure(d, seen)
    return seen


def closure(layer, seen=None):
    seen = set() if seen is None else seen
    for d in direct.get(layer, ()):
        if d not in seen:
            seen.add(d)
            closure(d, seen)
    return seen


bad = []
for layer in layers:
    if layer in ("cli", "studio"):
        continue
    if layer not in INTENDED:
        bad.append(f"src/{layer}/CMakeLists.txt: layer '{layer}' is not in scripts/check_layers.py INTENDED; add it")
        continue
    ok = intended_closure(layer) | {"core"}
    for d in sorted(direct[layer] - ok):
        bad.append(f"src/{layer}/CMakeLists.txt: layer '{layer}' links trinity_{d}, which DESIGN.md's layer graph "
                   f"does not allow (allowed: {', '.join(sorted(ok))})")

include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
for layer in layers:
    allowed = set(layers) if layer == "cli" else closure(layer) | {layer}
    for f in sorted((root / layer).rglob("*")):
        if f.suffix not in (".h", ".cpp", ".inc"):
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = include.match(line)
            if m and m.group(1) in layers and m.group(1) not in allowed:
                bad.append(f"{f.relative_to(root.parent)}:{n}: layer '{layer}' includes '{m.group(1)}/' "
                           f"but does not link trinity_{m.group(1)} (allowed: {', '.join(sorted(allowed))})")
for b in bad:
    print(b)
if bad:
    print(f"check_layers: {len(bad)} layer violation(s); see DESIGN.md section 2", file=sys.stderr)
    sys.exit(1)
print(f"check_layers: {len(layers)} layers, no layer violations")
