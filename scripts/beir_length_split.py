"""Split a BEIR folder by query length into two folders that share its corpus: a within-dataset shift.

    python scripts/beir_length_split.py ../shared/data/scifact /tmp/scifact-short /tmp/scifact-long

The cut is the median number of words (whitespace split) of the *train* split's judged queries, fixed
before anything is fitted: queries with at most that many words go to SHORT, longer ones to LONG; each
output keeps the train and test qrels of its queries, and links the source corpus (so the embedding
cache serves both). Used for the shift figure of docs/retrieval.md when no second BEIR dataset is
reachable:

    normscope calibrate --dataset /tmp/scifact-short --calibrator cal.json     # fit on short train queries
    normscope calibrate --dataset /tmp/scifact-long --apply cal.json           # evaluate on long test queries
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("short", type=Path)
    ap.add_argument("long", type=Path)
    a = ap.parse_args()
    queries = {}
    for line in (a.src / "queries.jsonl").read_text(encoding="utf-8-sig").splitlines():
        if line.strip():
            q = json.loads(line)
            queries[str(q["_id"])] = q
    qrels = {}
    for split_file in sorted((a.src / "qrels").glob("*.tsv")):
        rows = [r.split("\t") for r in split_file.read_text(encoding="utf-8-sig").splitlines() if r.strip()]
        qrels[split_file.stem] = [r for r in rows if r[0] != "query-id"]
    train_ids = {r[0] for r in qrels["train"] if r[0] in queries}
    cut = statistics.median(len(queries[q]["text"].split()) for q in train_ids)
    corpus = next(p for p in (a.src / "corpus.jsonl.gz", a.src / "corpus.jsonl") if p.exists())
    for out, keep in ((a.short, lambda n: n <= cut), (a.long, lambda n: n > cut)):
        (out / "qrels").mkdir(parents=True, exist_ok=False)
        (out / corpus.name).symlink_to(corpus.resolve())
        ids = {q for q, v in queries.items() if keep(len(v["text"].split()))}
        (out / "queries.jsonl").write_text("".join(json.dumps(queries[q]) + "\n" for q in sorted(ids)), encoding="utf-8")
        counts = {}
        for split, rows in qrels.items():
            kept = [r for r in rows if r[0] in ids]
            counts[split] = len({r[0] for r in kept})
            (out / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in kept),
                                                        encoding="utf-8")
        print(f"{out}: queries with {'<=' if out == a.short else '>'} {cut:g} words; judged queries per split {counts}")


if __name__ == "__main__":
    main()
