"""Small BEIR folders with known geometry for the retrieval tests, and a stand-in encoder that looks vectors up by text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from normscope.encoders.base import Encoder
from normscope.table import ModelFingerprint

#: Small grids so the planted tests fit fast.
GRIDS = {"inverse_norm": [-0.02, 0.0, 0.05, 0.2, 1.0], "power": [-2.0, -1.0, 0.0, 1.0]}


class LookupEncoder(Encoder):
    """Returns planted vectors by text (a stand-in model with known geometry); unknown texts raise KeyError."""

    cacheable = False

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table
        self.fingerprint = ModelFingerprint(name="test/lookup", revision="planted", pooling="none", backend="test")

    @property
    def dim(self) -> int:
        return len(next(iter(self.table.values())))

    def encode(self, texts, *, batch_size=64, progress=False):
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def write_beir(root: Path, corpus: list[dict], queries: list[dict], qrels: dict[str, list[tuple[str, str, int]]],
               *, crlf: bool = False) -> Path:
    """Write a BEIR folder (corpus.jsonl, queries.jsonl, qrels/{split}.tsv with header)."""
    nl = "\r\n" if crlf else "\n"
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(nl.join(json.dumps(c) for c in corpus) + nl, encoding="utf-8")
    (root / "queries.jsonl").write_text(nl.join(json.dumps(q) for q in queries) + nl, encoding="utf-8")
    for split, rows in qrels.items():
        body = "query-id\tcorpus-id\tscore" + nl + "".join(f"{q}\t{d}\t{s}{nl}" for q, d, s in rows)
        (root / "qrels" / f"{split}.tsv").write_text(body, encoding="utf-8")
    return root


def planted(root: Path, rng, *, with_train=True, n_train=60, n_test=40, d=12, junk_query=False, dup_docs=0):
    """Each query has a relevant low-norm document and a high-norm near-duplicate distractor, plus noise documents.

    ``dup_docs``: each test query's relevant document also appears that many more times under other ids
    with identical text (exact score ties); ``junk_query``: one extra judged test query whose text is a
    zero-width space.
    """
    table, corpus, queries = {}, [], []
    qrels: dict[str, list] = {"train": [], "test": []}
    for split, n in (("train", n_train), ("test", n_test)):
        for i in range(n):
            q = rng.normal(size=d)
            u = q / np.linalg.norm(q)
            qn = f"{split}-q{i}"
            table[qn] = q * rng.uniform(0.5, 2.0)
            good = (u + rng.normal(size=d) * 0.06) * rng.uniform(0.8, 1.2)
            bad = (u + rng.normal(size=d) * 0.04) * rng.uniform(4.0, 6.0)
            for name, v in ((f"{split}-g{i}", good), (f"{split}-b{i}", bad)):
                table[name] = v
                corpus.append({"_id": name, "title": "", "text": name})
            if split == "test":
                corpus += [{"_id": f"{split}-g{i}-copy{j}", "title": "", "text": f"{split}-g{i}"} for j in range(dup_docs)]
            queries.append({"_id": qn, "text": qn})
            qrels[split].append((qn, f"{split}-g{i}", 1))
    for j in range(150):
        name = f"noise{j}"
        table[name] = rng.normal(size=d) * 2
        corpus.append({"_id": name, "title": "", "text": name})
    if junk_query:
        queries.append({"_id": "test-junk", "text": "\u200b"})
        qrels["test"].append(("test-junk", "noise0", 1))
    if not with_train:
        del qrels["train"]
    write_beir(root, corpus, queries, qrels, crlf=True)
    return root, LookupEncoder(table)


def run_dict(frame, scorer: str) -> dict[str, dict[str, float]]:
    """The run of one scorer from a ``-o`` table, inner dicts in the table's rank order."""
    r = frame[frame.scorer == scorer].sort_values(["query_id", "rank"])
    return {q: dict(zip(g["doc_id"], g["score"].astype(float))) for q, g in r.groupby("query_id", sort=False)}


def _at_cosine(u, c, rng):
    """A unit vector with cosine exactly ``c`` to the unit vector ``u``."""
    w = rng.normal(size=u.size)
    w -= (w @ u) * u
    w /= np.linalg.norm(w)
    return c * u + np.sqrt(1 - c * c) * w


def calibration_beir(root: Path, rng, *, n_train=200, n_test=150, d=16, n_noise=200, easy=0.03, split_names=("train", "test"),
                     norm_effect=0.0):
    """Queries whose top-1 is right more often the larger the margin: P(right | margin m) = 0.3 + 0.65 (1 - exp(-m/easy)).

    Each query has one relevant document at cosine c in [0.8, 0.9] and one distractor at c -/+ m (m = |N(0, 0.05)|:
    below the relevant document when the top-1 is right, above it when wrong); noise documents are random
    directions; every vector gets a random norm, uniform on [1, 3]. ``norm_effect`` > 0 plants the paper's signal
    in the query norm: a query whose top-1 is wrong gets ``norm_effect`` added to its norm (no extra random draw,
    so the data are otherwise those of ``norm_effect=0``). Returns ``(root, LookupEncoder)``.
    """
    table, corpus, queries = {}, [], []
    qrels: dict[str, list] = {s: [] for s in split_names}
    for split, n in zip(split_names, (n_train, n_test)):
        for i in range(n):
            u = rng.normal(size=d)
            u /= np.linalg.norm(u)
            qn = f"{split}-q{i}"
            qnorm = rng.uniform(1.0, 3.0)
            c = rng.uniform(0.8, 0.9)
            m = abs(rng.normal(0, 0.05)) + 1e-4
            right = rng.uniform() < 0.3 + 0.65 * (1 - np.exp(-m / easy))
            table[qn] = u * (qnorm + (0.0 if right else norm_effect))
            for name, cos in ((f"{split}-g{i}", c), (f"{split}-b{i}", c - m if right else min(c + m, 0.999))):
                table[name] = _at_cosine(u, cos, rng) * rng.uniform(1.0, 3.0)
                corpus.append({"_id": name, "title": "", "text": name})
            queries.append({"_id": qn, "text": qn})
            qrels[split].append((qn, f"{split}-g{i}", 1))
    for j in range(n_noise):
        name = f"noise{j}"
        table[name] = rng.normal(size=d)
        corpus.append({"_id": name, "title": "", "text": name})
    write_beir(root, corpus, queries, qrels)
    return root, LookupEncoder(table)
