"""Summary of bench/rl/run.sh: medians over paired runs of seconds per RL step, generation and train
phases and whole-run wall time per side, and the ratios PyTorch / trinity (trinity with its default
threads against the faster PyTorch thread setting): the ratio of the medians and the median of the
per-run (paired) ratios. Usage: summary.py RESULTS.jsonl [STEPS] (several files may be joined)."""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = statistics.median
runs = sorted(set(r["run"] for r in rows))
print(f"\nmedians over {len(runs)} paired runs" + (f", {sys.argv[2]} RL steps each" if len(sys.argv) > 2 else "")
      + " (16 tasks x 8 samples/step); s/step = median over steps 3..N; "
      f"load (1-min average at each pair's start) {min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}")
print(f"{'size':5s} {'side':18s} {'s/step':>7s} {'generate':>9s} {'train':>7s} {'wall s':>7s}")
SIDES = (("trinity", "auto"), ("trinity", "2"), ("pytorch", "1"), ("pytorch", "2"))
for size in dict.fromkeys(r["size"] for r in rows):
    cell = {}
    for impl, th in SIDES:
        rs = [r for r in rows if r["size"] == size and r["impl"] == impl and r["threads"] == th]
        if not rs:
            continue
        cell[(impl, th)] = {k: med([r[k] for r in rs]) for k in ("step_s", "generate_s", "train_s", "wall_s")}
        c = cell[(impl, th)]
        label = f"{impl} t={th}" + (f" (={rs[0]['used']})" if th == "auto" else "")
        print(f"{size:5s} {label:18s} {c['step_s']:7.3f} {c['generate_s']:9.3f} {c['train_s']:7.3f} {c['wall_s']:7.1f}")
    bt = min((k[1] for k in cell if k[0] == "pytorch"), key=lambda t: cell[("pytorch", t)]["step_s"])
    base, ours = cell[("pytorch", bt)], cell[("trinity", "auto")]
    paired = []
    for run in runs:
        o = [r for r in rows if r["size"] == size and r["run"] == run and r["impl"] == "trinity" and r["threads"] == "auto"]
        b = [r for r in rows if r["size"] == size and r["run"] == run and r["impl"] == "pytorch" and r["threads"] == bt]
        if o and b:
            paired.append(b[0]["step_s"] / o[0]["step_s"])
    print(f"{size:5s} PyTorch t={bt} / trinity default: s/step {base['step_s'] / ours['step_s']:.2f}x "
          f"(paired median {med(paired):.2f}x, range {min(paired):.2f}-{max(paired):.2f}), "
          f"generate {base['generate_s'] / ours['generate_s']:.2f}x, train {base['train_s'] / ours['train_s']:.2f}x, "
          f"wall {base['wall_s'] / ours['wall_s']:.2f}x")
