#!/usr/bin/env bash
# BOTS on CPU in a few minutes: a tiny model learns 2-digit addition with GRPO from a taskset where
# half the rows are far too hard (3-digit) and a quarter already solved. The same run with the
# shuffle selector is the baseline; both print their greedy eval accuracy every 10 steps.
#   examples/bots/run.sh [DIR] [SEED]      (TRINITY_BIN overrides the binary; BOTS_STEPS (150) and
#                                          BOTS_EVAL_INTERVAL (10) the GRPO steps and eval interval)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${TRINITY_BIN:-$root/build/release/trinity}"
dir="${1:-/tmp/trinity-bots}"
seed="${2:-1}"
mkdir -p "$dir"
export BOTS_DIR="$(cd "$dir" && pwd)"
ex="$root/examples/bots"
if [ ! -f "$BOTS_DIR/model/config.json" ]; then
  "$bin" init-model --arch qwen2 --hidden 64 --layers 2 --heads 4 --intermediate 256 --max-pos 64 \
    --tokenizer bytes --seed 1 --out "$BOTS_DIR/model"
fi
[ -f "$BOTS_DIR/data2/sft.jsonl" ] || "$bin" make-data arithmetic --out "$BOTS_DIR/data2" --train 4000 --eval 128 \
  --sft 4000 --sft-correct 0.3 --seed 7
[ -f "$BOTS_DIR/data3/train.jsonl" ] || "$bin" make-data arithmetic --out "$BOTS_DIR/data3" --train 2000 --eval 16 \
  --sft 16 --digits 3 --seed 9
[ -f "$BOTS_DIR/checkpoints/bots/sft/global_step_1000/huggingface/config.json" ] || "$bin" run --config "$ex/sft.yaml"
"$bin" data process --config "$ex/score_2digit.yaml"
[ -f "$BOTS_DIR/mix.jsonl" ] || /usr/bin/python3 "$ex/make_mix.py" "$BOTS_DIR/scored_2digit/output.jsonl" \
  "$BOTS_DIR/data3/train.jsonl" "$BOTS_DIR/mix.jsonl"
for sel in difficulty_based shuffle; do
  BOTS_RUN="${sel}_seed$seed" "$bin" run --config "$ex/bots.yaml" \
    --set buffer.explorer_input.taskset.data_selector.selector_type=$sel \
    --set buffer.explorer_input.taskset.data_selector.seed=$seed --set explorer.rollout_model.seed=$seed \
    --set buffer.total_steps="${BOTS_STEPS:-150}" --set explorer.eval_interval="${BOTS_EVAL_INTERVAL:-10}"
done
for sel in difficulty_based shuffle; do
  /usr/bin/python3 - "$BOTS_DIR/checkpoints/bots/${sel}_seed$seed/monitor/metrics.jsonl" "$sel" <<'PY'
import json, sys
acc, valid = {}, []
for line in open(sys.argv[1]):
    j = json.loads(line)
    if "eval/arithmetic_eval/accuracy/mean@1" in j:
        acc[j["step"]] = j["eval/arithmetic_eval/accuracy/mean@1"]
    if "experience_pipeline/selection/valid_ratio" in j:
        valid.append(j["experience_pipeline/selection/valid_ratio"])
print(f"{sys.argv[2]:>16}: valid_ratio {sum(valid) / len(valid):.2f}; eval accuracy by step: " +
      " ".join(f"{s}:{a:.2f}" for s, a in sorted(acc.items())))
PY
done
