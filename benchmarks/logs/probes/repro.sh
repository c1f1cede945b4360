set -e
cd /work/wt/probes
export PYTHONPATH=$PWD/src
T0=$(date +%s)
/work/main/.venv/bin/python -m normscope probe OUT/claims.txt --pairs wordnet --batches 2 --batch-size 8 -o OUT/p.parquet --json OUT/p.json
T1=$(date +%s)
/work/main/.venv/bin/python -m normscope embed OUT/claims.txt -o OUT/e.parquet --json OUT/e.json
T2=$(date +%s)
echo "probe_s $((T1-T0)) embed_s $((T2-T1))"
/work/main/.venv/bin/python - <<'PY'
import pandas as pd, numpy as np
p = pd.read_parquet("OUT/p.parquet"); e = pd.read_parquet("OUT/e.parquet")
j = p.merge(e[["text", "norm"]], on="text", how="inner")
rel = np.abs(j["r"] - j["norm"]) / j["norm"]
print("rows probe", len(p), "embed", len(e), "joined", len(j), "max rel diff", rel.max(), "n > 1e-5:", int((rel > 1e-5).sum()))
PY
