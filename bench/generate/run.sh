#!/usr/bin/env bash
# Generation throughput, trinity's engine vs PyTorch with a KV cache (Debian python3-torch), same
# shapes, same machine, same run, 2 threads each: batch 1, 16 and 64 (prompt 64, 128 new tokens,
# sampling). Prints aggregate tokens/s, the ratio, time to first token and KV memory per sequence.
# Usage: [WEIGHTS=f32|bf16|master] [BATCHES="1 16 64"] bench/generate/run.sh [shape ...]
#   (default: tiny small qwen05; WEIGHTS picks the engine's weight format, PyTorch stays fp32)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/bench/generate/bench_generate}
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }
# SkylakeX kernels only where the CPU has AVX-512 (OpenBLAS 0.3.21 misdetects such CPUs; elsewhere they trap).
grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 TRINITY_THREADS=2
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(tiny small qwen05)
for s in "${shapes[@]}"; do
  for b in ${BATCHES:-1 16 64}; do
    new=128
    [ "$s" = qwen05 ] && [ "$b" = 1 ] && new=32
    [ "$s" = qwen15 ] && new=32
    ours=$("$BIN" "$s" "$b" "$new" "${WEIGHTS:-f32}")
    base=$(OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/generate/torch_generate.py "$s" "$b" "$new")
    /usr/bin/python3 - "$ours" "$base" <<'PY'
import json, sys
o, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f'{o["shape"]:7s} {o["weights"]:4s} batch {o["batch"]:3d}  trinity {o["tokens_per_s"]:8.1f} tok/s (ttft {o["ttft_s"]:.3f} s, '
      f'KV {o["kv_mib_per_seq"]:.1f} MiB/seq)  pytorch {b["tokens_per_s"]:8.1f} tok/s (ttft {b["ttft_s"]:.3f} s)  '
      f'ratio {o["tokens_per_s"] / b["tokens_per_s"]:.2f}x')
PY
  done
done
