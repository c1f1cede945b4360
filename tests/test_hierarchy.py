"""Specificity on hierarchies at fixed length (issue 39, item 2): ``correlate --signal specificity --pairs FILE|wordnet``.
The CSV reader's refusals, WordNet hypernym chains against NLTK, and the three figures of a real run recomputed
independently (scipy, the stratum-indicator partial Spearman)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from normscope.cli import run
from normscope.errors import InputError
from normscope.requests import Resampling
from normscope.signals.hierarchy import read_hierarchies, run_hierarchy, wordnet_chains
from normscope.stats_designs import stratified_partial_spearman

CHAINS = [("thing", "animal", "dog"), ("thing", "plant", "tree"), ("object", "vehicle", "car"),
          ("food", "fruit", "apple"), ("person", "worker", "teacher"), ("object", "tool", "hammer"),
          ("thing", "animal", "cat"), ("food", "vegetable", "carrot"), ("person", "artist", "painter"),
          ("object", "furniture", "chair"), ("place", "building", "house"), ("place", "water", "river")]


def _csv(tmp_path, rows=None):
    rows = rows if rows is not None else [(f"h{i}", lv + 1, t) for i, c in enumerate(CHAINS) for lv, t in enumerate(c)]
    p = tmp_path / "h.csv"
    pd.DataFrame(rows, columns=["hierarchy", "level", "text"]).to_csv(p, index=False)
    return p


def test_reader_refuses_bad_files(tmp_path):
    assert len(read_hierarchies(_csv(tmp_path))) == 36
    bad = tmp_path / "bad.csv"
    for text, msg in (("hierarchy,text\nh,a\n", "missing column"), ("hierarchy,level,text\nh,x,a\nh,2,b\n", "integer"),
                      ("hierarchy,level,text\nh,1,a\nh,1,b\ng,1,c\ng,2,d\n", "level 1 twice"),
                      ("hierarchy,level,text\nh,1,a\nh,2,b\n", "two hierarchies")):
        bad.write_text(text)
        with pytest.raises(InputError, match=msg):
            read_hierarchies(bad)
    with pytest.raises(InputError, match="no such file"):
        read_hierarchies(tmp_path / "none.csv")


def test_wordnet_chains_follow_nltk(shared_data):
    from normscope.signals import load_wordnet

    wn = load_wordnet()
    df = wordnet_chains(["dog", "idea", "qzxv"], wordnet=wn)
    assert set(df["hierarchy"]) == {"dog", "idea"}
    for w in ("dog", "idea"):
        path = wn.synsets(w, pos="n")[0].hypernym_paths()[0]
        sub = df[df["hierarchy"] == w]
        assert sub["level"].tolist() == list(range(len(path)))
        assert sub["text"].tolist() == [s.lemma_names()[0].replace("_", " ") for s in path]
        assert sub["text"].iloc[0] == "entity"


def test_three_figures_recomputed(bundled_encoder, tmp_path):
    df = read_hierarchies(_csv(tmp_path))
    res = run_hierarchy(df, dataset="test chains", encoder=bundled_encoder,
                        resampling=Resampling(n_boot=200, n_perm=200, seed=1))
    it = res.items
    assert len(it) == 36 and res.n_hierarchies == 12
    norm = np.linalg.norm(bundled_encoder.encode(it["text"].tolist()).astype(np.float64), axis=1)
    np.testing.assert_allclose(it["norm"], norm, rtol=1e-4)
    lv = it["level"].to_numpy(float)
    assert res.pooled["spearman"] == pytest.approx(stats.spearmanr(lv, norm).statistic, abs=1e-4)
    lab = (it["hierarchy"] + ":" + it["tokens"].astype(str)).to_numpy()
    counts = pd.Series(lab).value_counts()
    keep = np.array([counts[x] >= 2 for x in lab])
    lm = res.length_matched
    assert lm["n"] == keep.sum() and lm["n_unmatched"] == (~keep).sum() and lm["n"] >= 10
    ref = stratified_partial_spearman(lv[keep], norm[keep], None, lab[keep], n_boot=0, n_perm=0)
    assert lm["rho"] == pytest.approx(ref.rho, abs=1e-4)
    row = res.claims[0]
    assert row["key"] == "specificity" and row["measured"] == pytest.approx(lm["rho"])
    assert "within equal token count and hierarchy" in row["label"] + row["what"] and "pooled Spearman" in row["beside"]


def test_cli(tmp_path, capsys):
    j = tmp_path / "h.json"
    assert run(["correlate", "--signal", "specificity", "--pairs", str(_csv(tmp_path)), "--n-boot", "50", "--n-perm",
                "50", "--json", str(j)]) == 0
    d = json.loads(j.read_text())
    assert d["n_texts"] == 36 and d["claims"][0]["key"] == "specificity" and "length_matched" in d
    assert run(["correlate", "--signal", "frequency", "--pairs", str(_csv(tmp_path))]) == 2
    assert "--pairs goes with --signal specificity" in capsys.readouterr().err
    bad = tmp_path / "b.csv"
    bad.write_text("a,b\n1,2\n")
    assert run(["correlate", "--signal", "specificity", "--pairs", str(bad)]) == 2
