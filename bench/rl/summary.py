"""Summary of bench/rl/run.sh: medians over paired runs of seconds per RL step, generation and train
phases and whole-run wall time per side, and the ratios PyTorch / trinity (trinity with its default
threads against the faster PyTorch thread setting present): the ratio of the medians and the median of
the per-run (paired) ratios. Sizes run with one setting per side (the LoRA sizes qwen05 / qwen15:
trinity default threads, PyTorch 2 threads) simply have fewer rows. For the LoRA sizes it also says
where the time goes: trinity's generate / train (update_actor) / snapshot / engine update (merge +
repack, estimated) / rest, PyTorch's generate / train / re-merge / rest, and peak RSS.
Usage: summary.py RESULTS.jsonl [more.jsonl ...] (an old trailing STEPS argument is ignored)."""
import json
import statistics
import sys

rows = []
for path in sys.argv[1:]:
    if path.isdigit():  # the old `summary.py RESULTS STEPS` form
        continue
    rows += [json.loads(l) for l in open(path) if l.strip()]
med = statistics.median
runs = sorted(set(r["run"] for r in rows))
print(f"\nmedians over {len(runs)} paired runs; "
      f"load (1-min average at each pair's start) {min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}")
SIDES = (("trinity", "auto"), ("trinity-noshare", "auto"), ("trinity", "2"), ("pytorch", "1"), ("pytorch", "2"))
for size in dict.fromkeys(r["size"] for r in rows):
    rs_size = [r for r in rows if r["size"] == size]
    tp = [r for r in rs_size if r["impl"] == "pytorch"]
    lora = any(r.get("lora_rank", 0) > 0 for r in tp)
    tasks, repeat = (tp[0].get("tasks", 16), tp[0].get("repeat", 8)) if tp else (16, 8)
    steps = tp[0].get("steps") if tp else None
    skip = tp[0].get("skip", 2 if (steps or 20) > 4 else 0) if tp else 2
    tr = [r for r in rs_size if r["impl"].startswith("trinity")]
    onoff = lambda rs: "/".join(sorted(set(("on" if r["ckpt"] else "off") if "ckpt" in r else "?" for r in rs))) or "-"  # noqa: E731
    what = (f"LoRA rank {tp[0]['lora_rank']}, activation checkpointing trinity {onoff(tr)}, PyTorch {onoff(tp)}"
            if lora else "full fine-tuning")
    tun = sorted(set(r.get("glibc_tunables") or "" for r in rs_size) - {""})
    print(f"\n{size}: {what}, {tasks} tasks x {repeat} samples/step"
          + (f", {steps} RL steps per run" if steps else "") + f"; s/step = median over steps {skip + 1}..N"
          + (f"; GLIBC_TUNABLES={' / '.join(tun)}" if tun else ""))
    print(f"{'size':6s} {'side':25s} {'s/step':>7s} {'generate':>9s} {'train':>7s} {'wall s':>7s}"
          + ("  peak RSS" if lora else ""))
    cell, first = {}, {}
    for impl, th in SIDES:
        rs = [r for r in rs_size if r["impl"] == impl and r["threads"] == th]
        if not rs:
            continue
        first[(impl, th)] = rs
        keys = [k for k in ("step_s", "generate_s", "train_s", "wall_s", "peak_rss_gib", "update_actor_s",
                            "sync_weight_s", "engine_update_s", "sync_s", "reward_s") if all(k in r for r in rs)]
        cell[(impl, th)] = {k: med([r[k] for r in rs]) for k in keys}
        c = cell[(impl, th)]
        label = f"{impl} t={th}" + (f" (={rs[0]['used']})" if th == "auto" else "")
        print(f"{size:6s} {label:25s} {c['step_s']:7.3f} {c['generate_s']:9.3f} {c['train_s']:7.3f} {c['wall_s']:7.1f}"
              + (f"  {c['peak_rss_gib']:.2f} GiB" if "peak_rss_gib" in c and lora else ""))
    if lora:  # where the time goes (medians of the per-run medians)
        for side in (("trinity", "auto"), ("trinity-noshare", "auto")):
            if side not in cell:
                continue
            c = cell[side]
            parts = [("generate", c["generate_s"]), ("train", c["train_s"])]
            if "update_actor_s" in c:
                parts.append(("of which update_actor", c["update_actor_s"]))
            parts += [(k, c[k + "_s"]) for k in ("sync_weight", "engine_update") if k + "_s" in c]
            rest = (c["step_s"] - c["generate_s"] - c["train_s"] - c.get("sync_weight_s", 0)
                    - c.get("engine_update_s", 0))
            parts.append(("rest", rest))
            print(f"{size:6s} {side[0]} per step: "
                  + ", ".join(f"{k} {v:.2f} s ({100 * v / c['step_s']:.0f} %)" for k, v in parts))
        for th in ("2", "1"):
            if ("pytorch", th) in cell:
                c = cell[("pytorch", th)]
                parts = [("generate", c["generate_s"]), ("train", c["train_s"]), ("re-merge", c.get("sync_s", 0))]
                parts.append(("rest", c["step_s"] - sum(v for _, v in parts)))
                print(f"{size:6s} PyTorch t={th} per step: "
                      + ", ".join(f"{k} {v:.2f} s ({100 * v / c['step_s']:.0f} %)" for k, v in parts))
    pts = [k[1] for k in cell if k[0] == "pytorch"]
    if not pts or ("trinity", "auto") not in cell:
        continue
    bt = min(pts, key=lambda t: cell[("pytorch", t)]["step_s"])
    base = cell[("pytorch", bt)]
    for side, label in ((("trinity", "auto"), "trinity default"),
                        (("trinity-noshare", "auto"), "trinity, prompts not shared")):
        if side not in cell:
            continue
        ours, paired = cell[side], []
        for run in runs:
            o = [r for r in first[side] if r["run"] == run]
            b = [r for r in first[("pytorch", bt)] if r["run"] == run]
            if o and b:
                paired.append(b[0]["step_s"] / o[0]["step_s"])
        print(f"{size:6s} PyTorch t={bt} / {label}: s/step {base['step_s'] / ours['step_s']:.2f}x "
              + (f"(paired median {med(paired):.2f}x, range {min(paired):.2f}-{max(paired):.2f}), " if paired else "")
              + f"generate {base['generate_s'] / ours['generate_s']:.2f}x, train {base['train_s'] / ours['train_s']:.2f}x, "
              f"wall {base['wall_s'] / ours['wall_s']:.2f}x")
