#!/usr/bin/env bash
# Theorem 1 on a real transformer, full size, on a GPU: SGD, heavy-ball momentum and AdamW on the
# bundled all-MiniLM-L6-v2 with WordNet noun (term, gloss) pairs, the same held-out probe set and seed.
# Each run is resumable (rerun the script after a kill); outputs go to $OUT (default out/lab_transformer_gpu).
#
#   scripts/lab_transformer_gpu.sh [STEPS] [DEVICE]      # defaults: 3000 steps, cuda
#   EXTRA="--probe-items 64" scripts/lab_transformer_gpu.sh   # extra options override the ones below
#
# 3000 steps = about 7 relaxation times 1/(2 eta lambda_rad) at the defaults (eta lambda = 1e-3).
set -euo pipefail
STEPS="${1:-3000}"
DEVICE="${2:-cuda}"
OUT="${OUT:-out/lab_transformer_gpu}"
PY="${PY:-python}"
EXTRA="${EXTRA:-}"
mkdir -p "$OUT"
for OPT in sgd momentum adamw; do
  "$PY" -m normscope lab --encoder transformer --optimizer "$OPT" --steps "$STEPS" --device "$DEVICE" \
    --pairs wordnet --probe-items 256 --probe-batches 64 --seed 0 \
    --checkpoint "$OUT/$OPT.ckpt" --json "$OUT/$OPT.json" -o "$OUT/$OPT.parquet" --fig-dir "$OUT" $EXTRA \
    2>&1 | tee "$OUT/$OPT.log"
done
echo "results: $OUT/{sgd,momentum,adamw}.json"
