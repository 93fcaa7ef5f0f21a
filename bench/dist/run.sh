#!/usr/bin/env bash
# Data-parallel scaling on one machine: trinity's train step (bench_dist, the same code path as
# `mpirun trinity run`) as 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x 1 thread (mpirun),
# and PyTorch DistributedDataParallel (gloo, Debian python3-torch) as 2 ranks x 1 thread, all on the
# same shape and batch in the same run. Prints tokens/s, scaling efficiency (2 ranks vs 2 x 1 rank),
# the share of a step spent in collectives, and trinity / PyTorch at 2 ranks.
# Usage: bench/dist/run.sh [shape] [steps]   (default: small 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/bench/dist/bench_dist}
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }
shape=${1:-small}
steps=${2:-3}
# SkylakeX kernels only where the CPU has AVX-512 (OpenBLAS 0.3.21 misdetects such CPUs; elsewhere they trap).
grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
one1=$(TRINITY_THREADS=1 OMP_NUM_THREADS=1 "$BIN" "$shape" "$steps")
one2=$(TRINITY_THREADS=2 OMP_NUM_THREADS=2 "$BIN" "$shape" "$steps")
two1=$(mpirun -np 2 --bind-to none -x TRINITY_THREADS=1 -x OMP_NUM_THREADS=1 -x OPENBLAS_CORETYPE "$BIN" "$shape" "$steps")
ddp=$(OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/dist/torch_ddp_train.py "$shape" "$steps" 2 1)
/usr/bin/python3 - "$one1" "$one2" "$two1" "$ddp" <<'PY'
import json, sys
a, b, c, d = (json.loads(x) for x in sys.argv[1:])
for r in (a, b, c, d):
    extra = f'  collectives {1000 * r["comm_s"]:.0f} ms/step ({100 * r["comm_s"] / r["step_s"]:.1f}%)' if r.get("comm_s") else ""
    print(f'{r["impl"]:12s} {r["shape"]:6s} {r["ranks"]} rank(s) x {r["threads"]} thread(s): '
          f'{r["tokens_per_s"]:8.1f} tok/s  {r["step_s"]:.3f} s/step{extra}')
print(f'scaling efficiency, 2 ranks x 1 thread vs 2 x (1 rank x 1 thread): {100 * c["tokens_per_s"] / (2 * a["tokens_per_s"]):.0f}%')
print(f'2 ranks x 1 thread vs 1 rank x 2 threads: {c["tokens_per_s"] / b["tokens_per_s"]:.2f}x')
print(f'trinity / pytorch-ddp at 2 ranks x 1 thread: {c["tokens_per_s"] / d["tokens_per_s"]:.2f}x')
PY
