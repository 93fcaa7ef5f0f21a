#!/usr/bin/env bash
# Training throughput, trinity vs PyTorch (Debian python3-torch), same shapes, same machine, same
# run, 2 threads each, both with OpenBLAS's AVX-512 kernels, each with its faster OpenMP wait policy. Prints each ratio, the sgemm peak
# trinity's build gets, and MFU = 6 * params * tokens/s / sgemm peak.
# Usage: bench/train/run.sh [shapes...]   (default: tiny small qwen05)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/bench/train/bench_train}
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }
# SkylakeX kernels only where the CPU has AVX-512 (OpenBLAS 0.3.21 misdetects such CPUs; elsewhere they trap).
grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 TRINITY_THREADS=2
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(tiny small qwen05)
for s in "${shapes[@]}"; do
  case $s in qwen05) steps=3 ;; small) steps=4 ;; *) steps=8 ;; esac
  ours=$("$BIN" "$s" "$steps")
  # The baseline runs with OMP_WAIT_POLICY=PASSIVE, its faster setting here (libgomp's default
  # spinning made PyTorch's steps slower in our runs); trinity runs with the defaults a user gets.
  base=$(OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/train/torch_train.py "$s" "$steps")
  /usr/bin/python3 - "$ours" "$base" <<'PY'
import json, sys
o, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
mfu = 6 * o["params"] * o["tokens_per_s"] / (o["sgemm_gflops"] * 1e9)
print(f'{o["shape"]:7s} trinity {o["tokens_per_s"]:9.1f} tok/s ({o["step_s"]:.3f} s/step, '
      f'{o["peak_rss_gib"]:.2f} GiB)  pytorch {b["tokens_per_s"]:9.1f} tok/s ({b["step_s"]:.3f} s/step, '
      f'{b["peak_rss_gib"]:.2f} GiB)  ratio {o["tokens_per_s"] / b["tokens_per_s"]:.2f}x  '
      f'sgemm {o["sgemm_gflops"]:.0f} GFLOP/s ({o["blas_core"]})  MFU {100 * mfu:.0f}%')
PY
done
