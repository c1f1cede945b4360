"""normscope similarity: symmetric pair scorers, the STS-B and word-list formats, fitting only on fit pairs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from normscope.encoders.base import Encoder
from normscope.errors import InputError
from normscope.similarity import (
    cosine_pairs,
    dot_pairs,
    inverse_norm_pairs,
    pair_scores,
    power_pairs,
    read_pairs,
    run_similarity,
)
from normscope.similarity.fit import fit_pair_param, pair_grid
from normscope.table import ModelFingerprint


def _req(dataset, *, fit=None, n_boot=2000, seed=0, batch_size=64):
    """A similarity request as the tests use it (the library's defaults otherwise)."""
    from normscope.requests import Embedding, Resampling
    from normscope.similarity import SimilarityRequest

    return SimilarityRequest(dataset=str(dataset), fit=None if fit is None else str(fit),
                             embedding=Embedding(batch_size=batch_size), resampling=Resampling(n_boot=n_boot, seed=seed))


def _strict(obj):
    def bad(x):
        raise ValueError(f"non-strict JSON constant {x}")

    return json.loads(json.dumps(obj, allow_nan=False), parse_constant=bad)


class LookupEncoder(Encoder):
    """Planted vectors by text (a stand-in model with known norms and directions)."""

    cacheable = False

    def __init__(self, table: dict[str, np.ndarray], name: str = "lookup"):
        self.table = table
        self.fingerprint = ModelFingerprint(name=name, revision="planted", pooling="none", backend="test")

    @property
    def dim(self) -> int:
        return len(next(iter(self.table.values())))

    def encode(self, texts, *, batch_size=64, progress=False):
        return np.array([self.table[t] for t in texts], dtype=np.float32)


# ------------------------------------------------------------------ scorers


def test_scorers_by_hand_symmetric_and_neutral_at_zero():
    a = np.array([[3.0, 4.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 2.0]])
    b = np.array([[0.0, 4.0, 3.0], [2.0, 2.0, 0.0], [0.0, -1.0, 0.0]])
    # by hand: row 0: <a,b> = 16, ||a|| = 5, ||b|| = 5 -> cos 0.64
    cos = np.array([16 / 25, 2 / (1 * np.sqrt(8)), -2 / (np.sqrt(8) * 1)])
    na, nb = np.array([5.0, 1.0, np.sqrt(8)]), np.array([5.0, np.sqrt(8), 1.0])
    np.testing.assert_allclose(cosine_pairs(a, b), cos, rtol=1e-14)
    np.testing.assert_allclose(dot_pairs(a, b), [16.0, 2.0, -2.0], rtol=1e-14)
    np.testing.assert_allclose(inverse_norm_pairs(a, b, 0.1), cos / ((1 + 0.1 * na) * (1 + 0.1 * nb)), rtol=1e-14)
    np.testing.assert_allclose(power_pairs(a, b, -0.5), cos * (na * nb) ** -0.5, rtol=1e-14)
    for name, p in (("cosine", None), ("dot", None), ("inverse_norm", 0.3), ("power", 1.7), ("power", -2.0)):
        np.testing.assert_array_equal(pair_scores(a, b, name, p), pair_scores(b, a, name, p))  # exactly symmetric
    np.testing.assert_array_equal(pair_scores(a, b, "inverse_norm", 0.0), cosine_pairs(a, b))
    np.testing.assert_array_equal(pair_scores(a, b, "power", 0.0), cosine_pairs(a, b))
    np.testing.assert_allclose(pair_scores(a, b, "power", 1.0), dot_pairs(a, b), rtol=1e-14)


def test_asymmetric_forms_keep_their_names_and_are_asymmetric():
    from normscope.extensions.integrations import (
        asymmetric_norm_similarity_pairwise,
        norm_aware_similarity_pairwise,
    )

    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 8)) * 3
    b = rng.normal(size=(5, 8))
    asym = asymmetric_norm_similarity_pairwise("inverse_norm", 0.2)
    ab, ba = asym(a, b).numpy(), asym(b, a).numpy()
    assert not np.allclose(ab, ba)  # the score depends on which text comes second
    np.testing.assert_allclose(ab, cosine_pairs(a, b) / (1 + 0.2 * np.linalg.norm(b, axis=1)), rtol=1e-5)
    assert norm_aware_similarity_pairwise is asymmetric_norm_similarity_pairwise
    sym = pair_scores(a, b, "inverse_norm", 0.2)
    np.testing.assert_array_equal(sym, pair_scores(b, a, "inverse_norm", 0.2))


def test_scorer_errors():
    a = np.ones((2, 3))
    with pytest.raises(InputError, match="unknown scorer"):
        pair_scores(a, a, "l2")
    with pytest.raises(InputError, match="takes no parameter"):
        pair_scores(a, a, "cosine", 0.5)
    with pytest.raises(InputError, match="alpha must be >"):
        inverse_norm_pairs(a, a, -1.0)
    with pytest.raises(InputError, match="same shape"):
        cosine_pairs(a, np.ones((3, 3)))
    with pytest.raises(InputError, match="zero norms"):
        power_pairs(np.zeros((1, 3)), a[:1], -1.0)


# ------------------------------------------------------------------ formats

STS_LINES = [
    'main-captions\tMSRvid\t2012test\t0001\t5.000\tA man is playing a flute.\tA man plays a flute.',
    'main-news\theadlines\t2013\t0042\t1.600\t"Obama says "no" to\tthe "quote\' never closes',
    'main-forums\tdeft-forum\t2014\t0007\t3.250\tIt is fine.\tIt\'s fine.\t2014test\textra-field',
]


def test_sts_quirks(tmp_path):
    p = tmp_path / "sts-test.csv"
    p.write_bytes(("\ufeff" + "\r\n".join(STS_LINES) + "\r\n").encode("utf-8"))
    s = read_pairs(p)
    assert s.format == "sts" and len(s) == 3 and s.ids == ["1", "2", "3"]
    # unbalanced quotes stay inside their field: no line is joined to the next
    assert s.text1[1] == '"Obama says "no" to' and s.text2[1] == "the \"quote' never closes"
    assert s.text2[2] == "It's fine." and s.score.tolist() == [5.0, 1.6, 3.25]
    assert any("1 line has extra tab-separated fields" in n for n in s.notes)
    bad = tmp_path / "sts-dev.csv"
    bad.write_text(STS_LINES[0] + "\nmain-news\theadlines\t2013\t0042\t1.6\tonly one sentence\n")
    with pytest.raises(InputError, match="line 2 has 6 tab-separated"):
        read_pairs(bad)
    bad.write_text(STS_LINES[0].replace("5.000", "7.5"))
    with pytest.raises(InputError, match="line 1: score '7.5' is not a number in"):
        read_pairs(bad)


def test_word_list_variants(tmp_path):
    cases = {
        # SimLex-999 layout: header, POS before the score, more columns after it
        "simlex.txt": ("word1\tword2\tPOS\tSimLex999\tconc(w1)\nold\tnew\tA\t1.58\t2.72\nsmart\tintelligent\tA\t9.2\t1.75\n",
                       [("old", "new", 1.58), ("smart", "intelligent", 9.2)]),
        # WordSim-353 combined.tab: header with spaces inside its fields
        "combined.tab": ("Word 1\tWord 2\tHuman (mean)\nlove\tsex\t6.77\ntiger\tcat\t7.35\n",
                         [("love", "sex", 6.77), ("tiger", "cat", 7.35)]),
        # MEN lemma form: space-separated, part-of-speech suffixes
        "MEN_dataset_lemma_form_full": ("sun-n sunlight-n 50.000000\nautomobile-n car-n 50.000000\nfast-j slow-j 12.0\n",
                                        [("sun", "sunlight", 50.0), ("automobile", "car", 50.0), ("fast", "slow", 12.0)]),
        # Stanford RW: ten individual ratings after the mean; a comment line
        "rw.txt": ("# rare words\nsquishing\tsquirt\t5.88\t7\t7\t6\t1\t3\t6\t6\t10\t7\t6\n",
                   [("squishing", "squirt", 5.88)]),
        # SimVerb-3500 layout: POS column, score, relation, no header
        "simverb.txt": ("take\tremove\tV\t6.81\tSYNONYMS\nwalk\trun\tV\t4.5\tCOHYPONYMS\n",
                        [("take", "remove", 6.81), ("walk", "run", 4.5)]),
        "ws.csv": ("Word 1,Word 2,Human (mean)\nlove,sex,6.77\n", [("love", "sex", 6.77)]),
    }
    for name, (text, want) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        s = read_pairs(p)
        assert s.format == "words", name
        assert list(zip(s.text1, s.text2, s.score.tolist())) == want, name
    assert any("suffixes" in n for n in read_pairs(tmp_path / "MEN_dataset_lemma_form_full").notes)
    (tmp_path / "bad.txt").write_text("a b c\nd e f\n")
    with pytest.raises(InputError, match="numeric"):
        read_pairs(tmp_path / "bad.txt")
    (tmp_path / "short.txt").write_text("a\tb\t1\nc\td\n")
    with pytest.raises(InputError, match="line 2 has fewer than 3"):
        read_pairs(tmp_path / "short.txt")


def test_real_simlex_file(shared_data):
    s = read_pairs(shared_data / "simlex999" / "SimLex-999.txt")
    assert len(s) == 999 and s.format == "words"
    assert (s.text1[0], s.text2[0], s.score[0]) == ("old", "new", 1.58)
    assert s.ids[0] == "2"  # line 1 is the header
    assert s.score.min() >= 0 and s.score.max() <= 10


# ------------------------------------------------------------------ fitting


def _planted_lists(tmp_path, rng, n=40):
    """Words with planted vectors; the fit list's scores follow cos/(||a|| ||b||), the evaluated list's cos*(||a|| ||b||)."""
    table = {}
    files = {}
    for split, beta in (("fit", -1.0), ("eval", 1.0)):
        lines = []
        for i in range(n):
            a, b = f"{split}a{i}", f"{split}b{i}"
            table[a] = rng.normal(size=6) * rng.uniform(0.5, 4.0)
            table[b] = rng.normal(size=6) * rng.uniform(0.5, 4.0)
            va, vb = table[a].astype(np.float32).astype(float), table[b].astype(np.float32).astype(float)
            score = cosine_pairs(va, vb)[0] * (np.linalg.norm(va) * np.linalg.norm(vb)) ** beta
            lines.append(f"{a}\t{b}\t{score:.6f}")
        files[split] = tmp_path / f"{split}.txt"
        files[split].write_text("\n".join(lines) + "\n")
    return table, files


def test_fitting_never_sees_the_evaluated_pairs(tmp_path):
    rng = np.random.default_rng(0)
    table, files = _planted_lists(tmp_path, rng)
    enc = LookupEncoder(table)
    res = run_similarity(_req(files["eval"], fit=files["fit"], n_boot=100, seed=1), encoder=enc)
    # brute force on the fit list alone: the best beta of the grid is -1 (its scores follow beta = -1)
    fit = read_pairs(files["fit"])
    va = np.array([table[t] for t in fit.text1], dtype=np.float32)
    vb = np.array([table[t] for t in fit.text2], dtype=np.float32)
    rhos = {b: stats.spearmanr(pair_scores(va, vb, "power", b), fit.score).statistic for b in pair_grid("power", [])}
    assert res.scorers["power"]["param"] == max(rhos, key=rhos.get) == -1.0
    assert res.fit["source"] == "file" and res.fit["n_pairs"] == 40 and res.n_pairs == 40
    # changing the evaluated scores changes no fitted parameter
    ev = read_pairs(files["eval"])
    files["eval"].write_text("".join(f"{a}\t{b}\t{s:.6f}\n" for a, b, s in zip(ev.text1, ev.text2,
                                                                                  rng.permutation(ev.score))))
    res2 = run_similarity(_req(files["eval"], fit=files["fit"], n_boot=0), encoder=enc)
    assert {k: v["param"] for k, v in res2.scorers.items()} == {k: v["param"] for k, v in res.scorers.items()}
    with pytest.raises(InputError, match="is the evaluated file"):
        run_similarity(_req(files["eval"], fit=files["eval"]), encoder=enc)
    # a fit pair that is also evaluated (in either order) is dropped from the fit set
    with open(files["fit"], "a") as f:
        f.write(f"{ev.text2[0]}\t{ev.text1[0]}\t0.5\n")
    res3 = run_similarity(_req(files["eval"], fit=files["fit"], n_boot=0), encoder=enc)
    assert res3.fit["n_overlap_removed"] == 1 and res3.fit["n_pairs"] == 40


def test_random_half_is_disjoint_and_statistics_match_scipy(tmp_path):
    rng = np.random.default_rng(2)
    table, files = _planted_lists(tmp_path, rng, n=60)
    enc = LookupEncoder(table)
    res = run_similarity(_req(files["eval"], n_boot=200, seed=5), encoder=enc)
    it = res.items
    fit_ids, eval_ids = set(it.loc[it.split == "fit", "id"]), set(it.loc[it.split == "eval", "id"])
    assert not fit_ids & eval_ids and len(fit_ids | eval_ids) == 60 and res.fit["source"] == "random half"
    # the fit is a function of the fit half only: scrambling the evaluated half's scores leaves it unchanged
    src = read_pairs(files["eval"])
    scores = src.score.copy()
    ev_pos = [src.ids.index(i) for i in eval_ids]
    scores[ev_pos] = rng.permutation(scores[ev_pos])
    files["eval"].write_text("".join(f"{a}\t{b}\t{s:.6f}\n" for a, b, s in zip(src.text1, src.text2, scores)))
    res_b = run_similarity(_req(files["eval"], n_boot=0, seed=5), encoder=enc)
    assert {k: v["param"] for k, v in res_b.scorers.items()} == {k: v["param"] for k, v in res.scorers.items()}
    # statistics on the evaluated pairs, against scipy on the per-pair table
    ev = it[it.split == "eval"]
    for name, s in res.scorers.items():
        assert abs(s["spearman"] - stats.spearmanr(ev[f"score_{name}"], ev["human"]).statistic) < 1e-12
        assert abs(s["pearson"] - stats.pearsonr(ev[f"score_{name}"], ev["human"]).statistic) < 1e-12
        d = stats.spearmanr(ev[f"score_{name}"], ev["human"]).statistic - stats.spearmanr(ev["score_cosine"], ev["human"]).statistic
        assert abs(s["delta_spearman"] - d) < 1e-12
    d = _strict(res.to_dict())
    for key in ("dataset", "n_pairs", "fit", "scorers"):
        assert key in d
    for s in d["scorers"].values():
        assert {"param", "spearman", "pearson", "delta_spearman", "delta_ci"} <= set(s)
    assert d["scorers"]["power"]["delta_ci"][0] <= d["scorers"]["power"]["delta_spearman"] <= d["scorers"]["power"]["delta_ci"][1]


def test_fit_pair_param_ties_go_to_cosine():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(20, 5))
    b = rng.normal(size=(20, 5))
    a *= 2.0 / np.linalg.norm(a, axis=1, keepdims=True)  # every pair has ||a|| ||b|| = 6: the norm factor
    b *= 3.0 / np.linalg.norm(b, axis=1, keepdims=True)  # rescales all scores alike, so every beta ties
    human = rng.normal(size=20)
    best, curve = fit_pair_param("power", a, b, human)
    assert best == 0.0 and len(curve) == len(pair_grid("power", []))
    assert np.ptp([c["spearman"] for c in curve]) < 1e-12


def test_normalised_vectors_are_refused(tmp_path):
    rng = np.random.default_rng(3)
    table, files = _planted_lists(tmp_path, rng)
    unit = {k: v / np.linalg.norm(v) for k, v in table.items()}
    with pytest.raises(InputError, match="normalised"):
        run_similarity(_req(files["eval"], fit=files["fit"]), encoder=LookupEncoder(unit, "unit"))


def test_cli_on_simlex_slice(tmp_path, shared_data, capsys):
    from normscope.cli import run

    lines = (shared_data / "simlex999" / "SimLex-999.txt").read_text().splitlines()
    ds = tmp_path / "simlex-slice.txt"
    ds.write_text("\n".join(lines[:81]) + "\n")  # header + 80 pairs
    js, pq, fig = tmp_path / "s.json", tmp_path / "p.parquet", tmp_path / "f.png"
    assert run(["similarity", "--dataset", str(ds), "--n-boot", "100", "--json", str(js), "-o", str(pq),
                "--fig", str(fig)]) == 0
    d = _strict(json.loads(js.read_text()))
    assert d["n_pairs"] == 40 and d["fit"]["n_pairs"] == 40 and d["format"] == "words"
    assert set(d["scorers"]) == {"cosine", "dot", "inverse_norm", "power"}
    assert fig.read_bytes()[:4] == b"\x89PNG" and "Spearman" in capsys.readouterr().out
    assert run(["similarity", "--dataset", str(tmp_path / "none.txt")]) == 2
    assert "pair file not found" in capsys.readouterr().err
    assert run(["similarity", "--dataset", str(ds), "--scorer", "l2", "--json", str(tmp_path / "x.json")]) == 2
    assert "unknown scorer" in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def test_shuffled_pairs_give_the_same_results_by_pair(tmp_path, bundled_encoder):
    """Permutation equivariance with the real model: words and multi-word phrases (mixed lengths), several
    batches of 4 texts, the random half drawn by content: shuffling the file's lines changes no fitted
    parameter, no statistic or CI, and no per-pair value (joined on the pair's texts)."""
    from normscope.datasets import wordfreq_words

    rng = np.random.default_rng(4)
    words = wordfreq_words(400)[50:]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 6)))) for _ in range(96)]
    lines = [f"{texts[2 * i]}\t{texts[2 * i + 1]}\t{rng.uniform(0, 10):.2f}" for i in range(48)]
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(lines) + "\n")
    b.write_text("\n".join(lines[i] for i in rng.permutation(48)) + "\n")
    ra = run_similarity(_req(a, batch_size=4, n_boot=200, seed=3), encoder=bundled_encoder)
    rb = run_similarity(_req(b, batch_size=4, n_boot=200, seed=3), encoder=bundled_encoder)
    assert ra.scorers == rb.scorers  # parameters, rho, Pearson, deltas and every CI
    assert (ra.fit["n_pairs"], ra.n_pairs) == (rb.fit["n_pairs"], rb.n_pairs) == (24, 24)
    cols = ["split", "human", "norm1", "norm2"] + [c for c in ra.items if c.startswith("score_")]
    ia = ra.items.set_index(["text1", "text2"]).sort_index()[cols]
    ib = rb.items.set_index(["text1", "text2"]).sort_index()[cols]
    assert ia.index.equals(ib.index)
    assert (ia["split"] == ib["split"]).all()
    np.testing.assert_allclose(ia.drop(columns="split").to_numpy(float), ib.drop(columns="split").to_numpy(float),
                               rtol=0, atol=1e-9)
