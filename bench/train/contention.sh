#!/usr/bin/env bash
# Training speed when other processes share the cores: trinity (bench_train) vs PyTorch
# (torch_train.py, Debian python3-torch) on the same shape, each with 0, 1 and 2 competing busy
# processes (shell busy loops) started just before it and stopped after it. Each side runs with 2
# threads and its own best wait policy: trinity with its defaults (GOMP_SPINCOUNT=3000, dynamic
# chunks and GEMM tiles), PyTorch with OMP_WAIT_POLICY=PASSIVE. REPS rounds, each doing every cell
# back to back; prints the per-cell medians of seconds per step and the ratio PyTorch / trinity.
# Usage: [REPS=3] [STEPS=3] bench/train/contention.sh [shape]   (default: small)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/bench/train/bench_train}
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }
# SkylakeX kernels only where the CPU has AVX-512 (OpenBLAS 0.3.21 misdetects such CPUs; elsewhere they trap).
grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 TRINITY_THREADS=2
shape=${1:-small}
REPS=${REPS:-3} STEPS=${STEPS:-3}
rows=$(mktemp /tmp/bench_contention.XXXXXX)
busy=()
stop_busy() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; busy=(); }
trap 'stop_busy; rm -f "$rows"' EXIT
with_busy() {  # n cmd... : run cmd while n busy loops compete for the cores
  local n=$1; shift
  for _ in $(seq 1 "$n"); do (while :; do :; done) & busy+=($!); done
  "$@"
  stop_busy
}
for r in $(seq 1 "$REPS"); do
  for n in 0 1 2; do
    o=$(with_busy "$n" "$BIN" "$shape" "$STEPS")
    b=$(with_busy "$n" env OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/train/torch_train.py "$shape" "$STEPS")
    /usr/bin/python3 - "$o" "$b" "$n" "$r" <<'PY' | tee -a "$rows"
import json, sys
o, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps({"busy": int(sys.argv[3]), "run": int(sys.argv[4]), "trinity_s": o["step_s"], "pytorch_s": b["step_s"]}))
PY
  done
done
/usr/bin/python3 - "$rows" "$shape" "$REPS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n{sys.argv[2]}: seconds per training step (fwd+bwd+AdamW), medians over {sys.argv[3]} rounds")
print(f"{'busy procs':>10s} {'trinity':>8s} {'pytorch':>8s} {'ratio':>6s} {'trinity vs idle':>16s}")
idle = None
for n in (0, 1, 2):
    rs = [r for r in rows if r["busy"] == n]
    t = statistics.median(r["trinity_s"] for r in rs)
    p = statistics.median(r["pytorch_s"] for r in rs)
    idle = idle or t
    print(f"{n:10d} {t:8.2f} {p:8.2f} {p / t:5.2f}x {t / idle:15.2f}x")
PY
