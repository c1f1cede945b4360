"""normscope correlate: per-source strata, --by, truncation-aware length, input-order equivariance, normalised input."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from normscope.cli import run
from normscope.encoders.base import Encoder
from normscope.errors import InputError
from _correlate import correlate as run_correlate
from normscope.table import ModelFingerprint

WORDS = ["dog", "cat", "house", "car", "tree", "idea", "truth", "justice", "water", "music", "table",
         "freedom", "apple", "river", "mountain", "theory", "chair", "hope", "window", "science"]


def _strict(obj):
    def bad(x):
        raise ValueError(f"non-strict JSON constant {x}")

    return json.loads(json.dumps(obj, allow_nan=False), parse_constant=bad)


def _partial_ref(x, y, z, strata=None):
    """Independent partial Spearman: ranks, stratum dummies, numpy lstsq residuals, scipy Pearson."""
    cols = [np.ones(len(x))] + [stats.rankdata(c) for c in z]
    if strata is not None:
        cols += [(np.asarray(strata) == s).astype(float) for s in sorted(set(strata))[1:]]
    a = np.column_stack(cols)
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    ex = rx - a @ np.linalg.lstsq(a, rx, rcond=None)[0]
    ey = ry - a @ np.linalg.lstsq(a, ry, rcond=None)[0]
    return stats.pearsonr(ex, ey).statistic


def test_chaosnli_per_source_and_source_control(bundled_encoder, shared_data):
    res = run_correlate("uncertainty", encoder=bundled_encoder, n=300, seed=0, n_boot=100, n_perm=100)
    it = res.items
    assert res.by == "source" and res.controls == ["frequency", "length", "source"]
    assert set(it["stratum"]) == {"snli", "mnli_m"} and res.n == 300
    # per source: against scipy and an independent partial within the source
    for row in res.strata:
        m = it[it["stratum"] == row["name"]]
        assert row["n"] == len(m)
        assert abs(row["spearman"] - stats.spearmanr(m["norm"], m["covariate"]).statistic) < 1e-12
        ref = _partial_ref(m["covariate"], m["norm"], [m["control_frequency"], m["control_length"]])
        assert abs(row["partial_spearman"]["rho"] - ref) < 1e-10
        assert row["partial_spearman"]["controls"] == ["frequency", "length"]
        assert abs(row["mean_length"] - m["tokens"].mean()) < 1e-9
    # pooled: the source is a control, and the CI and p resample and permute within sources
    ref = _partial_ref(it["covariate"], it["norm"], [it["control_frequency"], it["control_length"]], it["stratum"])
    assert abs(res.partial_spearman["rho"] - ref) < 1e-10
    assert "within each source" in res.partial_spearman["p_method"]
    assert "within each source" in res.partial_spearman["ci_method"]
    assert abs(res.norm_length["spearman"] - stats.spearmanr(it["norm"], it["tokens"]).statistic) < 1e-12
    d = _strict(res.to_dict())
    assert {"name", "n", "spearman", "spearman_ci", "partial_spearman"} <= set(d["strata"][0])
    assert d["controls"][-1] == "source" and d["n_truncated"] == 0


def test_by_column_of_the_items_file(bundled_encoder, tmp_path, capsys):
    rng = np.random.default_rng(0)
    items = tmp_path / "items.csv"
    src = ["news"] * 10 + ["forum"] * 10
    pd.DataFrame({"id": [f"w{i}" for i in range(20)], "text": WORDS, "source": src}).to_csv(items, index=False)
    cov = tmp_path / "cov.csv"
    vals = rng.normal(size=20) + np.repeat([0.0, 3.0], 10)
    pd.DataFrame({"item": WORDS, "value": vals, "genre": src}).to_csv(cov, index=False)
    js = tmp_path / "s.json"
    assert run(["correlate", "--signal", "concreteness", "--items", str(items), "--covariate-file", str(cov),
                "--by", "source", "--n-boot", "50", "--n-perm", "50", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "source news" in out and "source forum" in out and "ρ(norm, length)" in out
    d = _strict(json.loads(js.read_text()))
    assert [s["name"] for s in d["strata"]] == ["forum", "news"] and d["controls"][-1] == "source"
    assert d["strata"][1]["n"] == 10
    # the same strata from a column of the covariate file, through the Python API
    from normscope.signals.items import read_covariate_file

    res = run_correlate("concreteness", encoder=bundled_encoder, covariates=read_covariate_file(cov, "concreteness"),
                        by="genre", n_boot=50, n_perm=50)
    assert [s["name"] for s in res.strata] == ["forum", "news"] and res.controls[-1] == "genre"
    assert abs(res.strata[1]["spearman"] - d["strata"][1]["spearman"]) < 1e-12
    assert run(["correlate", "--signal", "concreteness", "--items", str(items), "--covariate-file", str(cov),
                "--by", "nope"]) == 2
    assert "--by nope: no such column" in capsys.readouterr().err


def _scifact_texts(shared_data, k_long=8):
    with gzip.open(shared_data / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(400), f)]
    texts = sorted(((d.get("title", "") + " " + d["text"]).strip() for d in docs), key=len)
    return texts[-k_long:]


def test_length_counts_tokens_after_truncation(bundled_encoder, shared_data):
    long = _scifact_texts(shared_data)
    texts = long + ["A short sentence.", "Two words", "A somewhat longer sentence about norms and lengths."] + WORDS[:6]
    cov = pd.DataFrame({"item": texts, "value": np.random.default_rng(1).normal(size=len(texts))})
    res = run_correlate("concreteness", encoder=bundled_encoder, covariates=cov, controls=("length",),
                        n_boot=50, n_perm=50)
    tok = bundled_encoder.hf_tokenizer
    raw = np.array([len(tok(t, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]) for t in texts])
    cap = bundled_encoder.max_seq_length
    assert cap == 256 and (raw > cap).sum() >= 5  # the long abstracts are really cut
    seen = res.items.set_index("item").loc[texts, "control_length"].to_numpy()
    np.testing.assert_array_equal(seen, np.minimum(raw, cap))
    assert res.n_truncated == int((raw > cap).sum())
    assert res.norm_length["length"].startswith("tokens the model saw")


def test_shuffled_input_gives_the_same_values_by_id(bundled_encoder, shared_data):
    """Mixed lengths, small batches (several chunks): a permuted input changes only the row order."""
    texts = WORDS + ["The cat sat on the mat.", "Embedding norms of longer sentences differ."] + _scifact_texts(shared_data, 3)
    ids = [f"id{k:02d}" for k in range(len(texts))]
    vals = np.random.default_rng(2).normal(size=len(texts))
    cov = pd.DataFrame({"item": texts, "value": vals})
    a = run_correlate("concreteness", encoder=bundled_encoder, covariates=cov, items=texts, ids=ids,
                      controls=("length", "words"), batch_size=4, n_boot=100, n_perm=100, seed=3)
    perm = np.random.default_rng(4).permutation(len(texts))
    b = run_correlate("concreteness", encoder=bundled_encoder, covariates=cov.iloc[perm], items=[texts[i] for i in perm],
                      ids=[ids[i] for i in perm], controls=("length", "words"), batch_size=4, n_boot=100, n_perm=100,
                      seed=3)
    assert b.items["id"].tolist() == [ids[i] for i in perm]
    ia = a.items.set_index("id")
    ib = b.items.set_index("id").loc[ia.index]
    np.testing.assert_allclose(ib["norm"], ia["norm"], rtol=1e-6)
    for col in ("item", "covariate", "tokens", "control_length", "control_words"):
        assert ib[col].tolist() == ia[col].tolist(), col
    da, db = a.to_dict(), b.to_dict()
    for key in ("spearman", "spearman_ci", "p_value", "partial_spearman", "norm_length"):
        assert json.dumps(da[key]) == json.dumps(db[key]), key


class _UnitEncoder(Encoder):
    """The bundled model's vectors divided by their norm (as a vector store returns them)."""

    cacheable = False

    def __init__(self, base):
        self.base = base
        self.fingerprint = ModelFingerprint(name="unit-test", revision="x", pooling="mean", backend="test")

    @property
    def dim(self):
        return self.base.dim

    def encode(self, texts, *, batch_size=64, progress=False):
        v = self.base.encode(texts, batch_size=batch_size)
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_normalised_vectors_are_refused_and_embed_warns(bundled_encoder, tmp_path):
    with pytest.raises(InputError, match="normalised"):
        run_correlate("frequency", encoder=_UnitEncoder(bundled_encoder), items=WORDS, n_boot=0, n_perm=0)
    from normscope.encoders.embed import embed_input

    unit = _UnitEncoder(bundled_encoder).encode(WORDS)
    np.save(tmp_path / "unit.npy", unit)
    summary, _ = embed_input(tmp_path / "unit.npy", out=tmp_path / "u.parquet")
    assert summary["normalised"] is True and "normalised" in summary["warnings"][0]
    np.save(tmp_path / "raw.npy", bundled_encoder.encode(WORDS))
    raw, _ = embed_input(tmp_path / "raw.npy", out=tmp_path / "r.parquet")
    assert raw["normalised"] is False and raw["warnings"] == []


def test_read_item_column_aligns_with_read_items(tmp_path):
    from normscope.inputs import read_items
    from normscope.signals.items import read_item_column

    csv = tmp_path / "i.csv"
    csv.write_text("text,source\ndog,a\n,,\ncat,b\n")  # a fully blank row is skipped by both readers
    ids, texts = read_items(csv)
    assert read_item_column(csv, "source", len(texts)).tolist() == ["a", "b"]
    jl = tmp_path / "i.jsonl"
    jl.write_text('{"text": "dog", "source": "a"}\n\n{"text": "cat", "source": "b"}\n')
    assert read_item_column(jl, "source", len(read_items(jl)[1])).tolist() == ["a", "b"]
    with pytest.raises(InputError, match="no such column"):
        read_item_column(jl, "genre", 2)
    with pytest.raises(InputError, match="has no columns"):
        read_item_column(tmp_path / "i.txt", "source", 2)
    with pytest.raises(InputError, match="2 rows but 3 items"):
        read_item_column(csv, "source", 3)
    jl.write_text('{"text": "dog", "source": "a"}\n{"text": "cat", "source": ""}\n')
    with pytest.raises(InputError, match="--by source: 1 item has no source"):
        read_item_column(jl, "source", 2)
