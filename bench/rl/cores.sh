#!/usr/bin/env bash
# `both` mode with the explorer one step ahead (synchronizer.sync_offset: 1): the explorer's engine
# generates step k+1 while the trainer trains step k, in one process on the same cores. Times the RL
# step with the core budget (explorer.threads: 0, the default: each gets half the cores while both
# are busy, all of them alone) against no budget (explorer.threads: -1: both run every core's worth
# of threads, oversubscribed while both run), alternating in the same run, and prints the ratio.
# Model: the Qwen2.5-0.5B shape with LoRA, bench/rl/rl_lora.yaml (4 tasks x 8 samples, <= 16 new
# tokens, rank 16); s/step = median spacing of the trainer's steps 2..N (the last, which trains alone
# once the explorer has finished, excluded).
# Usage: [ROUNDS=2] [STEPS=6] [BIN=build/release/trinity] bench/rl/cores.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/trinity}
[ -x "$BIN" ] || { echo "build first: make build (or BIN=path/to/trinity)" >&2; exit 1; }
ROUNDS=${ROUNDS:-2}
STEPS=${STEPS:-6}
grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS TRINITY_THREADS
work=$(mktemp -d /tmp/bench_cores.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$BIN" make-data arithmetic --out "$work/data" --train 4000 --eval 16 --sft 16 --seed 7 >/dev/null
"$BIN" init-model --arch qwen2 --hidden 896 --layers 24 --heads 14 --kv-heads 2 --intermediate 4864 --vocab 151936 \
  --tie --dtype bf16 --max-pos 64 --tokenizer bytes --seed 1 --out "$work/model" >/dev/null
results=$work/results.jsonl
for r in $(seq 1 "$ROUNDS"); do
  for threads in 0 -1; do
    dir=$work/run_${r}_$threads
    sed -e "s#@MODEL@#$work/model#; s#@DATA@#$work/data#; s#@DIR@#$dir#; s#@STEPS@#$STEPS#" \
      -e "s#@CKPT@#false#; s#@SHARE@#true#" \
      -e "s#^  sync_interval: 1#  sync_interval: 1\n  sync_offset: 1#" \
      -e "s#^  runner_per_model: 4#  runner_per_model: 4\n  threads: $threads#" bench/rl/rl_lora.yaml > "$work/cfg.yaml"
    grep -q "sync_offset: 1" "$work/cfg.yaml" && grep -q "threads: $threads" "$work/cfg.yaml" ||
      { echo "bench/rl/cores.sh: could not edit bench/rl/rl_lora.yaml" >&2; exit 1; }
    load=$(cut -d' ' -f1 /proc/loadavg)
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$BIN" run --config "$work/cfg.yaml" > "$dir.log" 2>&1 ||
      { echo "bench/rl/cores.sh: trinity run failed; the end of its log:" >&2; tail -20 "$dir.log" >&2; exit 1; }
    /usr/bin/python3 - "$dir/checkpoints/bench_rl/grpo/monitor/metrics.jsonl" "$threads" "$r" "$load" <<'PY' | tee -a "$results"
import json, statistics, sys
path, threads, run, load = sys.argv[1:5]
rows = [json.loads(l) for l in open(path)]
tr = [r for r in rows if r["role"] == "trainer" and "time/train_step" in r]
ex = [r for r in rows if r["role"] == "explorer" and "time/explore_step" in r]
spacing = [b["time"] - a["time"] for a, b in zip(tr, tr[1:])][:-1]  # steps 2..N-1: both busy
med = statistics.median
print(json.dumps({"explorer_threads": int(threads), "run": int(run), "load": float(load), "step_s": med(spacing),
                  "train_s": med(r["time/train_step"] for r in tr[1:-1]),
                  "generate_s": med(r["time/explore_step"] for r in ex[1:])}))
PY
  done
done
/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = statistics.median
def of(t, k): return med(r[k] for r in rows if r["explorer_threads"] == t)
for t, name in ((0, "budget (explorer.threads: 0)"), (-1, "no budget (explorer.threads: -1)")):
    print(f"{name:34s} step {of(t, 'step_s'):6.2f} s  train {of(t, 'train_s'):6.2f}  generate {of(t, 'generate_s'):6.2f}")
print(f"no budget / budget: {of(-1, 'step_s') / of(0, 'step_s'):.2f}x  (> 1: the budget is faster)")
PY
