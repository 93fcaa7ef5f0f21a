#!/usr/bin/env bash
# The whole RL loop (GRPO step = generate + reward + train), trinity vs PyTorch (Debian python3-torch),
# same checkpoint, same task, same machine, same run. Ours: `trinity run` on bench/rl/rl.yaml (the
# quickstart's GRPO stage: 16 tasks x 8 samples, <= 8 new tokens, eval off, jsonl monitor); baseline:
# bench/rl/torch_rl.py, the same loop in PyTorch. Seconds per RL step = median over steps 3..N
# (ours: the spacing of trainer steps in metrics.jsonl; explore/train from time/explore_step and
# time/train_step). Each paired run does every size and thread setting back to back; the summary
# gives medians over runs. trinity runs with its default threads (`auto`: 1 per kernel below 5M
# params) and with TRINITY_THREADS=2; PyTorch with 1 and 2 threads (OMP_WAIT_POLICY=PASSIVE), and
# the ratio quotes the faster PyTorch against trinity's default.
# The per-run rows are kept in $RESULTS (default /tmp/bench_rl_results.jsonl); bench/rl/summary.py
# re-prints the summary from one or more such files.
# Usage: [RUNS=3] [STEPS=20] [BIN=build/release/trinity] [RESULTS=file] bench/rl/run.sh [tiny] [h256]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
BIN=${BIN:-build/release/trinity}
[ -x "$BIN" ] || { echo "build first: make build (or BIN=path/to/trinity)" >&2; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
RUNS=${RUNS:-3} STEPS=${STEPS:-20}
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS TRINITY_THREADS
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(tiny h256)
work=$(mktemp -d /tmp/bench_rl.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$BIN" make-data arithmetic --out "$work/data" --train 4000 --eval 16 --sft 16 --seed 7 >/dev/null
for s in "${sizes[@]}"; do
  case $s in
    tiny) shape=(--hidden 64 --layers 2 --heads 4 --intermediate 256) ;;   # the quickstart model
    h256) shape=(--hidden 256 --layers 4 --heads 8 --intermediate 1024) ;;
    *) echo "unknown size '$s' (tiny, h256)" >&2; exit 1 ;;
  esac
  "$BIN" init-model --arch qwen2 "${shape[@]}" --max-pos 64 --tokenizer bytes --seed 1 --out "$work/$s" >/dev/null
done
results=$work/results.jsonl

ours() {  # size threads(auto|N) run
  local dir=$work/run_$1_$2_$3
  sed -e "s#@MODEL@#$work/$1#; s#@DATA@#$work/data#; s#@DIR@#$dir#; s#@STEPS@#$STEPS#" \
    -e "/@TOKLEN@/d" bench/rl/rl.yaml > "$work/cfg.yaml"
  local t0 t1
  t0=$(date +%s.%N)
  if [ "$2" = auto ]; then "$BIN" run --config "$work/cfg.yaml" > "$dir.log" 2>&1
  else TRINITY_THREADS=$2 "$BIN" run --config "$work/cfg.yaml" > "$dir.log" 2>&1; fi
  t1=$(date +%s.%N)
  /usr/bin/python3 - "$dir/checkpoints/bench_rl/grpo/monitor/metrics.jsonl" "$1" "$2" "$3" "$t0" "$t1" \
    "$(grep -o 'model has [0-9]* parameters: [0-9]* thread' "$dir.log" | head -1)" <<'PY'
import json, statistics, sys
path, size, threads, run, t0, t1, note = sys.argv[1:8]
rows = [json.loads(l) for l in open(path)]
tr = [r for r in rows if r["role"] == "trainer" and "time/train_step" in r]
ex = [r for r in rows if r["role"] == "explorer" and "time/explore_step" in r]
skip = 2 if len(tr) > 4 else 0
step = [b["time"] - a["time"] for a, b in zip(tr[skip:], tr[skip + 1:])]
used = threads if threads != "auto" else ("1" if "1 thread" in note else "default")
print(json.dumps({"impl": "trinity", "size": size, "threads": threads, "used": used, "run": int(run),
                  "step_s": statistics.median(step),
                  "generate_s": statistics.median(r["time/explore_step"] for r in ex[skip:]),
                  "train_s": statistics.median(r["time/train_step"] for r in tr[skip:]),
                  "wall_s": float(t1) - float(t0),
                  "reward_mean": statistics.mean(r.get("critic/score/mean", 0.0) for r in tr)}))
PY
}

torch_side() {  # size threads run
  local t0 t1 out
  t0=$(date +%s.%N)
  out=$(OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/rl/torch_rl.py "$work/$1" "$work/data/train.jsonl" "$STEPS" "$2")
  t1=$(date +%s.%N)
  /usr/bin/python3 -c 'import json,sys; o=json.loads(sys.argv[1]); o.update(size=sys.argv[2], threads=sys.argv[3], used=sys.argv[3], run=int(sys.argv[4]), wall_s=float(sys.argv[6])-float(sys.argv[5])); print(json.dumps(o))' \
    "$out" "$1" "$2" "$3" "$t0" "$t1"
}

for r in $(seq 1 "$RUNS"); do
  for s in "${sizes[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    { ours "$s" auto "$r"; ours "$s" 2 "$r"; torch_side "$s" 1 "$r"; torch_side "$s" 2 "$r"; } |
      /usr/bin/python3 -c 'import json,sys; [print(json.dumps(dict(json.loads(l), load=float(sys.argv[1])))) for l in sys.stdin]' "$load" |
      tee -a "$results" |
      /usr/bin/python3 -c 'import json,sys
for l in sys.stdin:
    o = json.loads(l)
    print("run {run} {size:5s} {impl:8s} threads {threads:4s} step {step_s:.3f} s  generate {generate_s:.3f}  "
          "train {train_s:.3f}  wall {wall_s:.1f} s  (load {load})".format(**o))'
  done
done

cp "$results" "${RESULTS:-/tmp/bench_rl_results.jsonl}"
/usr/bin/python3 bench/rl/summary.py "$results" "$STEPS"
