#!/usr/bin/env bash
# One GRPO train step with LoRA (rank 16, all linears, base frozen) on a bench shape: trinity
# (bench_lora, PolicyTrainer::train_step) and PyTorch (torch_lora_step.py, Debian python3-torch) on
# the same shape and batch, each with and without activation checkpointing, one after the other in
# the same run. Prints seconds per step (reference pass / update), peak RSS, and trinity / PyTorch.
# Usage: bench/lora/run.sh [shape] [batch] [seq]   (default: qwen05 8 256; qwen15 = Qwen2.5-1.5B)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/bench/lora/bench_lora}
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }
shape=${1:-qwen05}
batch=${2:-8}
seq=${3:-256}
# SkylakeX kernels only where the CPU has AVX-512 (OpenBLAS 0.3.21 misdetects such CPUs; elsewhere they trap).
grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
micro_seqs=$(( 1024 / seq > 0 ? 1024 / seq : 1 ))
out=()
for ckpt in 0 1; do
  out+=("$("$BIN" "$shape" lora "$ckpt" "$batch" "$seq" 1 16 1024)")
  out+=("$(/usr/bin/python3 bench/lora/torch_lora_step.py "$shape" "$ckpt" "$batch" "$seq" 1 16 "$micro_seqs")")
done
/usr/bin/python3 - "${out[@]}" <<'PY'
import json, sys
rs = [json.loads(x) for x in sys.argv[1:]]
for r in rs:
    print(f'{r["impl"]:8s} {r["shape"]:7s} lora ckpt={str(r["checkpointing"]).lower():5s} '
          f'{r["step_s"]:7.2f} s/step (ref {r["ref_s"]:.2f} + update {r["update_s"]:.2f})  '
          f'peak RSS {r["peak_rss_gib"]:.2f} GiB')
for i in (0, 2):
    t, p = rs[i], rs[i + 1]
    print(f'checkpointing={str(t["checkpointing"]).lower()}: trinity / pytorch step time {p["step_s"] / t["step_s"]:.2f}x, '
          f'peak RSS {t["peak_rss_gib"]:.2f} vs {p["peak_rss_gib"]:.2f} GiB')
PY
