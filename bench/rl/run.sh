#!/usr/bin/env bash
# The whole RL loop (GRPO step = generate + reward + train), trinity vs PyTorch (Debian python3-torch),
# same checkpoint, same task, same machine, same run. Ours: `trinity run`; baseline: bench/rl/torch_rl.py,
# the same loop in PyTorch. Each paired run does every size and thread setting back to back; the summary
# gives medians over runs. The per-run rows are kept in $RESULTS (default /tmp/bench_rl_results.jsonl);
# bench/rl/summary.py re-prints the summary from one or more such files.
#
# Sizes tiny (the quickstart model, h64 L2) and h256 (h256 L4), full fine-tuning, fp32, vocab 259:
# bench/rl/rl.yaml (the quickstart's GRPO stage: 16 tasks x 8 samples, <= 8 new tokens, eval off, jsonl
# monitor). Seconds per RL step = median over steps 3..N (ours: the spacing of trainer steps in
# metrics.jsonl; explore/train from time/explore_step and time/train_step). trinity runs with its
# default threads (`auto`: 1 per kernel below 5M params) and with TRINITY_THREADS=2; PyTorch with 1
# and 2 threads (OMP_WAIT_POLICY=PASSIVE), and the ratio quotes the faster PyTorch against trinity's
# default.
#
# Sizes qwen05 (the Qwen2.5-0.5B shape: hidden 896, 24 layers, 14/2 heads, intermediate 4864, vocab
# 151936, tied embeddings, 494M params) and qwen15 (Qwen2.5-1.5B: 1536, 28 layers, 12/2 heads, 8960,
# vocab 151936, tied, 1.54B), random init stored in bf16 as real checkpoints are, byte tokenizer (ids
# above 258 are padding and decode to no text): GRPO with LoRA, bench/rl/rl_lora.yaml (rank 16, alpha
# 32, all seven linears, base frozen; 4 tasks x 8 samples = 32 rollouts, <= 16 new tokens). PyTorch:
# torch_rl.py --lora-rank 16 --lora-alpha 32 with the same batch (merged weights for generation,
# unmerged adapters for training, each prompt prefilled once for its 8 samples as trinity's engine
# does: --share-prefill). Activation checkpointing, the same on both sides: CKPT=1|0 (default 0 for
# qwen05, PyTorch's faster setting there; 1 for qwen15, where PyTorch would not fit in 24 GiB without
# it; TRINITY_CKPT / TORCH_CKPT set one side). Both sides run with glibc malloc's transparent huge
# pages (MALLOC_HUGETLB=1; see tunables() below). At 2 cores trinity's default threads are 2 at these
# sizes, so trinity runs once and PyTorch once at 2 threads. STEPS defaults to 4 for these sizes;
# s/step, generate and train = medians over steps 2..N (step 1 is start-up: first allocations). Rows
# also carry where the time goes: ours update_actor_s (time/update_actor), sync_weight_s (the trainer's
# snapshot, time/sync_weight), engine_update_s (time/wait_sync - train - snapshot: the explorer's merge
# and repack of the rollout weights, estimated); PyTorch's sync_s (re-merging W + scale B A); and peak
# RSS. One qwen05 pair takes ~4 minutes at STEPS=4 on 2 cores, one qwen15 pair ~10 (estimates).
# trinity runs with its default trainer.share_prompt_prefix: true (each task's 8 rows compute their
# shared prompt once in the train step; PyTorch's loop computes it per row, as verl / TRL do);
# NOSHARE=1 adds a trinity run with it off in each pair (impl trinity-noshare), to show both.
# TORCH=0 skips the PyTorch side (trinity-only timings; no ratio then).
# Usage: [RUNS=3] [STEPS=20|4] [CKPT=0|1] [TRINITY_CKPT=] [TORCH_CKPT=] [MALLOC_HUGETLB=1|0] [NOSHARE=0|1] [TORCH=1|0]
#        [TORCH_MMAP_THRESHOLD=bytes] [BIN=build/release/trinity] [RESULTS=file]
#        bench/rl/run.sh [tiny] [h256] [qwen05] [qwen15]      (no size: tiny h256)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
BIN=${BIN:-build/release/trinity}
[ -x "$BIN" ] || { echo "build first: make build (or BIN=path/to/trinity)" >&2; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
RUNS=${RUNS:-3}
# SkylakeX kernels only where the CPU has AVX-512 (OpenBLAS 0.3.21 misdetects such CPUs; elsewhere they trap).
grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS TRINITY_THREADS
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(tiny h256)
lora() { case $1 in qwen05|qwen15) return 0 ;; *) return 1 ;; esac; }
steps_of() { if lora "$1"; then echo "${STEPS:-4}"; else echo "${STEPS:-20}"; fi; }
ckpt_of() {  # size side-variable -> 1 when that side checkpoints activations (LoRA sizes)
  local d=${CKPT:-$([ "$1" = qwen15 ] && echo 1 || echo 0)}
  echo "${!2:-$d}"
}
work=$(mktemp -d /tmp/bench_rl.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$BIN" make-data arithmetic --out "$work/data" --train 4000 --eval 16 --sft 16 --seed 7 >/dev/null
for s in "${sizes[@]}"; do
  case $s in
    tiny) shape=(--hidden 64 --layers 2 --heads 4 --intermediate 256 --max-pos 64) ;;   # the quickstart model
    h256) shape=(--hidden 256 --layers 4 --heads 8 --intermediate 1024 --max-pos 64) ;;
    qwen05) shape=(--hidden 896 --layers 24 --heads 14 --kv-heads 2 --intermediate 4864 --vocab 151936 --tie
                   --dtype bf16 --max-pos 64) ;;
    qwen15) shape=(--hidden 1536 --layers 28 --heads 12 --kv-heads 2 --intermediate 8960 --vocab 151936 --tie
                   --dtype bf16 --max-pos 64) ;;
    *) echo "unknown size '$s' (tiny, h256, qwen05, qwen15)" >&2; exit 1 ;;
  esac
  "$BIN" init-model --arch qwen2 "${shape[@]}" --tokenizer bytes --seed 1 --out "$work/$s" >/dev/null
done
results=$work/results.jsonl

# Runs a command with its output to a log file; prints its peak RSS in KiB (ru_maxrss of the children).
rss_of() {  # log cmd...
  /usr/bin/python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as f:
    rc = subprocess.call(sys.argv[2:], stdout=f, stderr=subprocess.STDOUT)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$@"
}

# The LoRA sizes run both sides with glibc malloc's transparent huge pages (GLIBC_TUNABLES=
# glibc.malloc.hugetlb=1, unless MALLOC_HUGETLB=0). PyTorch mallocs and frees its large tensors per op,
# and on this VM their 4 KiB page faults cost it about half its train step (qwen05, one probe: 25.1 s
# -> 12.6 s); trinity madvises its large buffers itself (the tunable took ~1.5 s off its weight update).
# PyTorch on qwen15 also gets a fixed mmap threshold (TORCH_MMAP_THRESHOLD, bytes; default 8 MiB there,
# none on qwen05): glibc's sliding threshold otherwise keeps freed activations in the heap, and its
# peak RSS grows step after step (qwen05 without checkpointing: 10.1, 15.0, 17.4 GiB after steps 1-3;
# with the threshold one probe went 10.7 -> 7.3 GiB at some cost in speed), which 1.5B cannot afford.
tunables() {  # size side(trinity|pytorch) -> the GLIBC_TUNABLES value for it
  if ! lora "$1" || [ "${MALLOC_HUGETLB:-1}" != 1 ]; then echo "${GLIBC_TUNABLES:-}"; return; fi
  local thr=${TORCH_MMAP_THRESHOLD:-$([ "$1" = qwen15 ] && echo 8388608)}
  if [ "$2" = pytorch ] && [ -n "$thr" ]; then echo "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=$thr"
  else echo glibc.malloc.hugetlb=1; fi
}

ours() {  # size threads(auto|N) run [share prompts: 1 (default) | 0]
  local share=${4:-1}
  local dir=$work/run_$1_$2_$3_$share yaml=bench/rl/rl.yaml skip steps tun
  steps=$(steps_of "$1")
  tun=$(tunables "$1" trinity)
  if lora "$1"; then yaml=bench/rl/rl_lora.yaml skip=1; else skip=$([ "$steps" -gt 4 ] && echo 2 || echo 0); fi
  sed -e "s#@MODEL@#$work/$1#; s#@DATA@#$work/data#; s#@DIR@#$dir#; s#@STEPS@#$steps#" \
    -e "s#@CKPT@#$([ "$(ckpt_of "$1" TRINITY_CKPT)" = 1 ] && echo true || echo false)#" \
    -e "s#@SHARE@#$([ "$share" = 1 ] && echo true || echo false)#" -e "/@TOKLEN@/d" "$yaml" > "$work/cfg.yaml"
  local t0 t1 rss
  t0=$(date +%s.%N)
  local ok=1
  if [ "$2" = auto ]; then rss=$(GLIBC_TUNABLES=$tun rss_of "$dir.log" "$BIN" run --config "$work/cfg.yaml") || ok=0
  else rss=$(GLIBC_TUNABLES=$tun TRINITY_THREADS=$2 rss_of "$dir.log" "$BIN" run --config "$work/cfg.yaml") || ok=0; fi
  [ "$ok" = 1 ] || { echo "bench/rl: trinity run failed; the end of its log:" >&2; tail -20 "$dir.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  /usr/bin/python3 - "$dir/checkpoints/bench_rl/grpo/monitor/metrics.jsonl" "$1" "$2" "$3" "$t0" "$t1" \
    "$(grep -o 'model has [0-9]* parameters: [0-9]* thread' "$dir.log" | head -1)" "$skip" "$rss" \
    "$(lora "$1" && echo 1 || echo 0)" "$tun" "$(grep -c 'gradient_checkpointing: true' "$work/cfg.yaml" || true)" \
    "$share" <<'PY'
import json, statistics, sys
path, size, threads, run, t0, t1, note, skip, rss, lora, tun, ckpt, share = sys.argv[1:14]
skip, lora, ckpt, med = int(skip), lora == "1", ckpt == "1", statistics.median
rows = [json.loads(l) for l in open(path)]
tr = [r for r in rows if r["role"] == "trainer" and "time/train_step" in r]
ex = [r for r in rows if r["role"] == "explorer" and "time/explore_step" in r]
ws = {r["step"]: r["time/wait_sync"] for r in rows if r["role"] == "explorer" and "time/wait_sync" in r}
# tiny/h256 (skip 2): spacings from step 3's row on, as before; LoRA sizes (skip 1): the durations of
# steps 2..N, i.e. spacings from step 1's row on.
first = skip - 1 if lora else skip
step = [b["time"] - a["time"] for a, b in zip(tr[first:], tr[first + 1:])]
used = threads if threads != "auto" else ("1" if "1 thread" in note else "default")
o = {"impl": "trinity" if share == "1" else "trinity-noshare", "size": size, "threads": threads, "used": used, "run": int(run),
     "steps": len(tr), "skip": skip, "lora": lora,
     "step_s": med(step),
     "generate_s": med(r["time/explore_step"] for r in ex[skip:]),
     "train_s": med(r["time/train_step"] for r in tr[skip:]),
     "wall_s": float(t1) - float(t0),
     "reward_mean": statistics.mean(r.get("critic/score/mean", 0.0) for r in tr),
     "resp_len": statistics.mean(r.get("response_length/mean", 0.0) for r in tr),
     "tokens": med(r.get("perf/total_num_tokens", 0.0) for r in tr[skip:]),
     "peak_rss_gib": round(int(rss) / 1048576.0, 2), "glibc_tunables": tun, "ckpt": ckpt}
for k in ("update_actor", "sync_weight", "read_experience"):
    v = [r["time/" + k] for r in tr[skip:] if "time/" + k in r]
    if v:
        o[k + "_s"] = med(v)
# The explorer's wait for step k's weights = the trainer's step k (train + snapshot) + the engine's
# merge and repack of the new weights (+ reading the experiences): the last is estimated as the rest.
eu = [ws[r["step"]] - r["time/train_step"] - r.get("time/sync_weight", 0.0) for r in tr[skip:] if r["step"] in ws]
if eu:
    o["wait_sync_s"] = med(ws[r["step"]] for r in tr[skip:] if r["step"] in ws)
    o["engine_update_s"] = med(eu)
print(json.dumps(o))
PY
}

torch_side() {  # size threads run
  local t0 t1 out steps extra=()
  steps=$(steps_of "$1")
  if lora "$1"; then
    extra=(--batch 4 --repeat 8 --max-new 16 --lora-rank 16 --lora-alpha 32 --share-prefill --skip 1)
    if [ "$(ckpt_of "$1" TORCH_CKPT)" = 1 ]; then extra+=(--ckpt); fi
  fi
  local tun
  tun=$(tunables "$1" pytorch)
  t0=$(date +%s.%N)
  out=$(GLIBC_TUNABLES=$tun OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/rl/torch_rl.py "$work/$1" "$work/data/train.jsonl" \
    "$steps" "$2" "${extra[@]}")
  t1=$(date +%s.%N)
  /usr/bin/python3 -c 'import json,sys; o=json.loads(sys.argv[1]); o.update(size=sys.argv[2], threads=sys.argv[3], used=sys.argv[3], run=int(sys.argv[4]), wall_s=float(sys.argv[6])-float(sys.argv[5]), glibc_tunables=sys.argv[7]); print(json.dumps(o))' \
    "$out" "$1" "$2" "$3" "$t0" "$t1" "$tun"
}

for r in $(seq 1 "$RUNS"); do
  for s in "${sizes[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    if lora "$s"; then   # 2 cores: auto = 2 threads
      sides() { ours "$s" auto "$r"; if [ "${NOSHARE:-0}" = 1 ]; then ours "$s" auto "$r" 0; fi; if [ "${TORCH:-1}" = 1 ]; then torch_side "$s" 2 "$r"; fi; }
    else sides() { ours "$s" auto "$r"; ours "$s" 2 "$r"; torch_side "$s" 1 "$r"; torch_side "$s" 2 "$r"; }; fi
    sides |
      /usr/bin/python3 -c 'import json,sys; [print(json.dumps(dict(json.loads(l), load=float(sys.argv[1]))), flush=True) for l in sys.stdin]' "$load" |
      tee -a "$results" |
      /usr/bin/python3 -c 'import json,sys
for l in sys.stdin:
    o = json.loads(l)
    print("run {run} {size:6s} {impl:8s} threads {threads:4s} step {step_s:.3f} s  generate {generate_s:.3f}  "
          "train {train_s:.3f}  wall {wall_s:.1f} s  (load {load})".format(**o), flush=True)'
  done
done

cp "$results" "${RESULTS:-/tmp/bench_rl_results.jsonl}"
/usr/bin/python3 bench/rl/summary.py "$results"
