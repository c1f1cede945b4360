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
from normscope.stats import partial_spearman
from normscope.stats_designs import cluster_bootstrap_ci, cluster_resamples, stratified_partial_spearman, within_length_spearman

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
    for text, msg in (("hierarchy,level,text,cluster\nh,1,a,x\nh,2,b,y\ng,1,c,x\ng,2,d,x\n", "two cluster labels"),
                      ("hierarchy,level,text,cluster\nh,1,a,\nh,2,b,\ng,1,c,x\ng,2,d,x\n", "empty cluster")):
        bad.write_text(text)
        with pytest.raises(InputError, match=msg):
            read_hierarchies(bad)


def test_wordnet_chains_follow_nltk(shared_data):
    from normscope.signals import load_wordnet

    wn = load_wordnet()
    df = wordnet_chains(["dog", "idea", "qzxv"], wordnet=wn)
    assert set(df["hierarchy"]) == {"dog", "idea"}
    for w in ("dog", "idea"):
        path = sorted(wn.synsets(w, pos="n")[0].hypernym_paths(), key=lambda p: [s.name() for s in p])[0]
        sub = df[df["hierarchy"] == w]
        # from the depth-3 synset down: the levels keep their depth below entity.n.01
        assert sub["level"].tolist() == list(range(3, len(path)))
        assert sub["text"].tolist() == [s.lemma_names()[0].replace("_", " ") for s in path[3:]]
        assert set(sub["cluster"]) == {path[3].name()}  # the bootstrap cluster: the chain's depth-3 synset
    assert "entity" not in set(df["text"])  # the synsets above depth 3 are shared by every chain: left out
    # the whole paths on request (root_depth 0), one cluster for all of them
    full = wordnet_chains(["dog"], wordnet=wn, root_depth=0)
    assert full["text"].iloc[0] == "entity" and full["level"].iloc[0] == 0
    # chains that share their depth-3 synset are one cluster (dog, cat and car pass through whole.n.02)
    assert wordnet_chains(["dog", "cat", "car"], wordnet=wn)["cluster"].nunique() == 1
    with pytest.raises(InputError, match="root_depth"):
        wordnet_chains(["dog"], wordnet=wn, root_depth=-1)
    # no text is shared by two clusters except homonyms (one lemma, two synsets)
    from normscope.signals.hierarchy import wordnet_hierarchies

    chains, what = wordnet_hierarchies(300)
    assert "from their depth-3 synset down" in what
    synset_clusters = chains.groupby(["text", "level"])["cluster"].nunique()
    assert (synset_clusters == 1).mean() > 0.97
    # a synset with two hypernym paths gets the same one in every process (NLTK's order follows string hashing)
    import subprocess
    import sys

    code = ("from normscope.signals import load_wordnet; from normscope.signals.hierarchy import wordnet_chains; "
            "print(wordnet_chains(['london', 'cup', 'technology'], wordnet=load_wordnet()).to_csv())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**__import__("os").environ, "PYTHONHASHSEED": str(h)}).stdout for h in (1, 2)}
    assert len(outs) == 1 and "capital" in wordnet_chains(["london"], wordnet=wn)["text"].tolist()


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
    assert row["key"] == "specificity_hierarchy" and row["measured"] == pytest.approx(lm["rho"])
    assert "within equal token count and hierarchy" in row["label"] + row["what"] and "pooled Spearman" in row["beside"]
    assert "CI resamples whole hierarchies with all their texts" in row["what"]
    assert res.pooled["ci_unit"] == lm["ci_unit"] == "hierarchies" and res.n_clusters == 12
    assert res.partial.get("ci_unit", "hierarchies") == "hierarchies"  # no partial when every text has one length
    assert "cluster bootstrap" in lm["ci_method"]
    # the CIs' statistic is the reported partial rho's definition (ranks, least squares on [1, rank(tokens)])
    from normscope.signals.hierarchy import _rank_partial

    tk = np.random.default_rng(0).integers(2, 6, lv.size).astype(float)
    assert _rank_partial(lv, norm, tk) == pytest.approx(partial_spearman(lv, norm, tk, n_boot=0, n_perm=0).rho, abs=1e-9)
    assert _rank_partial(lv, norm) == pytest.approx(stats.spearmanr(lv, norm).statistic, abs=1e-9)
    for ci, est in ((res.pooled["spearman_ci"], res.pooled["spearman"]), (lm["ci"], lm["rho"])):
        assert ci[0] <= ci[1] and ci[0] - 0.05 <= est <= ci[1] + 0.05


def test_cli(tmp_path, capsys):
    j = tmp_path / "h.json"
    assert run(["correlate", "--signal", "specificity", "--pairs", str(_csv(tmp_path)), "--n-boot", "50", "--n-perm",
                "50", "--json", str(j)]) == 0
    d = json.loads(j.read_text())
    assert d["n_texts"] == 36 and d["claims"][0]["key"] == "specificity_hierarchy" and "length_matched" in d
    assert run(["correlate", "--signal", "frequency", "--pairs", str(_csv(tmp_path))]) == 2
    assert "--pairs goes with --signal specificity" in capsys.readouterr().err
    bad = tmp_path / "b.csv"
    bad.write_text("a,b\n1,2\n")
    assert run(["correlate", "--signal", "specificity", "--pairs", str(bad)]) == 2


def test_cluster_resamples_take_whole_clusters_and_ignore_row_order():
    codes = np.repeat(np.arange(7), [1, 2, 3, 4, 5, 2, 1])
    rng = np.random.default_rng(3)
    for ii in cluster_resamples(codes, 50, rng):
        drawn = np.bincount(codes[ii], minlength=7) / np.bincount(codes)
        assert np.all(drawn == np.round(drawn)) and drawn.sum() == 7  # 7 whole clusters, repeats allowed
    x = np.random.default_rng(0).normal(size=codes.size)
    labels = np.array([f"c{c}" for c in codes], dtype=object)
    perm = np.random.default_rng(1).permutation(codes.size)
    a = cluster_bootstrap_ci(lambda ii: float(np.mean(x[ii])), labels, n_boot=300, seed=4)
    b = cluster_bootstrap_ci(lambda ii: float(np.mean(x[perm][ii])), labels[perm], n_boot=300, seed=4)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def _planted_chains(rng, n_chains=40, depth=6):
    """Chains whose texts depend on each other: each chain has its own slope of norm on level (random effect),
    and every text has the same token count (as WordNet's one-lemma texts)."""
    level = np.tile(np.arange(depth, dtype=float), n_chains)
    chain = np.repeat(np.arange(n_chains), depth)
    slope = rng.normal(0.2, 1.0, n_chains)
    norm = slope[chain] * level + rng.normal(0, 0.5, level.size)
    return level, norm, np.full(level.size, 3.0), chain


def test_chain_bootstrap_covers_a_planted_dependence_the_text_bootstrap_misses():
    """Texts of one chain share its random slope: the estimator's spread across independent replicate data sets
    is the yardstick. The text bootstrap (items within strata) is far too narrow; the chain bootstrap is not."""
    rng = np.random.default_rng(2026)
    est, ci_text, ci_chain = [], [], []
    for _ in range(60):
        lv, nm, tk, ch = _planted_chains(rng)
        a = within_length_spearman(lv, nm, tk, strata=ch, n_boot=200, n_perm=0, seed=int(rng.integers(1 << 31)))
        b = within_length_spearman(lv, nm, tk, strata=ch, n_boot=200, n_perm=0, seed=int(rng.integers(1 << 31)),
                                   clusters=ch)
        assert a["rho"] == b["rho"] and b["ci_unit"] == "clusters" and "ci_unit" not in a
        est.append(a["rho"])
        ci_text.append(a["ci"])
        ci_chain.append(b["ci"])
    est, ci_text, ci_chain = np.array(est), np.array(ci_text), np.array(ci_chain)
    truth, spread = est.mean(), 2 * 1.96 * est.std(ddof=1)  # the replicates' normal-theory 95 % width
    cover_text = np.mean((ci_text[:, 0] <= truth) & (truth <= ci_text[:, 1]))
    cover_chain = np.mean((ci_chain[:, 0] <= truth) & (truth <= ci_chain[:, 1]))
    width_text = np.mean(ci_text[:, 1] - ci_text[:, 0]) / spread
    width_chain = np.mean(ci_chain[:, 1] - ci_chain[:, 0]) / spread
    assert cover_text < 0.6 and width_text < 0.5, (cover_text, width_text)
    assert cover_chain >= 0.85 and 0.75 < width_chain < 1.3, (cover_chain, width_chain)


def test_a_cluster_column_makes_the_cis_resample_clusters(bundled_encoder, tmp_path):
    """Hierarchies grouped by a ``cluster`` column: the estimates are those of the plain run (clusters change only
    what is resampled), the CIs are cluster_bootstrap_ci over the groups (recomputed here from the per-text table),
    and the row says what it resampled."""
    rows = [(f"h{i}", lv + 1, t, c[0]) for i, c in enumerate(CHAINS) for lv, t in enumerate(c)]
    p = tmp_path / "hc.csv"
    pd.DataFrame(rows, columns=["hierarchy", "level", "text", "cluster"]).to_csv(p, index=False)
    rs = Resampling(n_boot=200, n_perm=200, seed=1)
    grouped = run_hierarchy(read_hierarchies(p), dataset="grouped", encoder=bundled_encoder, resampling=rs)
    plain = run_hierarchy(read_hierarchies(_csv(tmp_path)), dataset="plain", encoder=bundled_encoder, resampling=rs)
    assert grouped.n_clusters == 5 and grouped.n_hierarchies == 12  # thing, object, food, person, place
    assert grouped.pooled["spearman"] == plain.pooled["spearman"]
    assert grouped.length_matched["rho"] == plain.length_matched["rho"]
    unit = "clusters of hierarchies (column cluster)"
    assert grouped.pooled["ci_unit"] == grouped.length_matched["ci_unit"] == unit
    assert f"CI resamples whole {unit} with all their texts" in grouped.claims[0]["what"]
    # 5 clusters are too few for a bootstrap to decide the row (one cluster would give a zero-width CI)
    assert grouped.claims[0]["verdict"] == "not decided at this size"
    assert grouped.claims[0]["reason"] == "the CIs resample 5 clusters of hierarchies: too few to resample"
    assert plain.n_clusters == 12 and "too few to resample" not in plain.claims[0]["reason"]  # 12 >= 10: judged
    from normscope.signals.hierarchy import _rank_partial

    it = grouped.items
    lv, nm = it["level"].to_numpy(float), it["norm"].to_numpy()
    ref = cluster_bootstrap_ci(lambda ii: _rank_partial(lv[ii], nm[ii]), it["cluster"].to_numpy(dtype=object),
                               n_boot=200, seed=1)
    assert grouped.pooled["spearman_ci"] == pytest.approx(ref, abs=1e-12)
    assert grouped.pooled["spearman_ci"] != plain.pooled["spearman_ci"]
