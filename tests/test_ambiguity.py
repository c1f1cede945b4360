"""The ambiguity statistic (issue 34): partial Spearman rho(norm, WordNet noun senses | Zipf frequency, length),
checked against an independent computation (NLTK's WordNet, wordfreq, the tokenizer, numpy norms and scipy) on real
WordNet data; skipped cleanly without ../shared/data (tests/_data.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from normscope.requests import Resampling
from normscope.requests.correlate import CorrelateRequest


def _partial_spearman_scipy(x, y, controls):
    """Pearson r of the residuals of rank(x) and rank(y) regressed on [1, rank(controls)] (scipy ranks, numpy OLS)."""
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    z = np.column_stack([np.ones(len(x))] + [stats.rankdata(c) for c in controls])
    res_x = rx - z @ np.linalg.lstsq(z, rx, rcond=None)[0]
    res_y = ry - z @ np.linalg.lstsq(z, ry, rcond=None)[0]
    return stats.pearsonr(res_x, res_y)[0]


def test_ambiguity_statistic_on_constructed_numbers():
    from normscope.signals.ambiguity import ambiguity_statistic

    rng = np.random.default_rng(4)
    n = 300
    zipf, length = rng.uniform(2, 7, n), rng.integers(3, 6, n).astype(float)
    senses = np.round(np.exp(0.3 * zipf + rng.normal(0, 0.5, n)))  # frequent words have more senses
    norm = 10 - 0.4 * zipf + 0.05 * senses + rng.normal(0, 0.2, n)
    out = ambiguity_statistic(norm, senses, zipf, length, n_boot=200, seed=0)
    assert out["rho"] == pytest.approx(_partial_spearman_scipy(senses, norm, [zipf, length]), abs=1e-12)
    assert out["controls"] == ["frequency", "length"] and out["n"] == n
    assert out["ci"][0] < out["rho"] < out["ci"][1]
    # the plain correlation is negative (both follow frequency), the controlled one is not
    assert stats.spearmanr(senses, norm)[0] < 0 < out["rho"]


def test_ambiguity_against_scipy_on_real_wordnet(shared_data, bundled_encoder):
    import wordfreq

    from normscope import signals as sg
    from normscope.signals.ambiguity import ambiguity_request, run_ambiguity
    from normscope.signals.claims import ambiguity_claim

    req = CorrelateRequest(signal="frequency", n=150, resampling=Resampling(n_boot=200, n_perm=0, seed=0))
    assert ambiguity_request(req).argv()[:4] == ["normscope", "correlate", "--signal", "specificity"]
    assert "--measure" in ambiguity_request(req).argv() and "n_senses" in ambiguity_request(req).argv()
    res = run_ambiguity(req, encoder=bundled_encoder)
    items = res.items
    words = items["item"].tolist()
    assert len(words) == 150 and res.covariate == "WordNet noun senses of the word (all of them: ambiguity)"
    # independent: NLTK's WordNet reader, wordfreq, the model's tokenizer and numpy norms
    wn = sg.load_wordnet()
    senses = np.array([len(wn.synsets(w, pos="n")) for w in words], dtype=float)
    assert senses.min() >= 1 and np.array_equal(senses, items["covariate"].to_numpy())
    zipf = np.array([wordfreq.zipf_frequency(w, "en") for w in words])
    tok = bundled_encoder.hf_tokenizer
    length = np.array([len(tok(w)["input_ids"]) for w in words], dtype=float)
    norm = np.linalg.norm(bundled_encoder.encode(words), axis=1)
    np.testing.assert_allclose(norm, items["norm"].to_numpy(), rtol=1e-4)
    part = res.partial_spearman
    # a control constant over the items (every word one token: length 3 with [CLS] and [SEP]) is not controlled
    varies = np.ptp(length) > 0
    assert part.controls == (["frequency", "length"] if varies else ["frequency"]) and part.n == 150
    assert (res.controls_dropped or []) == ([] if varies else ["length"])
    expected = _partial_spearman_scipy(senses, norm, [zipf, length] if varies else [zipf])
    assert part.rho == pytest.approx(expected, abs=5e-3)
    assert part.ci[0] <= part.rho <= part.ci[1]
    # the row: claimed positive, judged from the length-matched rho (within equal token count, frequency
    # partialled) and its CI; with every word one token long it is the partial rho on frequency
    lm = res.length_matched
    assert lm.controls == ["frequency"] and lm.n + lm.n_unmatched == 150
    if not varies:
        assert lm.rho == pytest.approx(part.rho, abs=1e-9)
    row = ambiguity_claim(res.to_dict())
    assert row["measured"] == pytest.approx(lm.rho) and list(row.ci) == pytest.approx(list(lm.ci)) and row["kind"] == "paper"
    expected_verdict = ("reproduced" if lm.ci[0] > 0 else "refuted" if lm.ci[1] < 0 else "inconclusive")
    assert row["verdict"] == expected_verdict and "-0.19" in row["why"]


def test_mean_vs_cls_pooling_against_transformers(bundled_encoder):
    """The pooling row's two statistics, recomputed with transformers' AutoModel (CLS vector; attention-masked mean of
    the token vectors), wordfreq and scipy; the row's verdict follows the two CIs' sides of 0."""
    import torch
    import wordfreq
    from transformers import AutoModel, AutoTokenizer

    from normscope.datasets import wordfreq_words
    from normscope.encoders.bundled import bundled_model_path
    from normscope.signals.claims import pooling_claim
    from normscope.signals.pooling import pooling_direction, pooling_trends

    words = wordfreq_words(120)
    out = pooling_trends("sentence-transformers/all-MiniLM-L6-v2", words, n_boot=200, seed=0)
    path = bundled_model_path("sentence-transformers/all-MiniLM-L6-v2")
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    with torch.no_grad():
        b = tok(words, padding=True, return_tensors="pt")
        h = model(**b).last_hidden_state
    mask = b["attention_mask"].unsqueeze(-1).float()
    norms = {"cls": h[:, 0].norm(dim=1).numpy(), "mean": ((h * mask).sum(1) / mask.sum(1)).norm(dim=1).numpy()}
    zipf = np.array([wordfreq.zipf_frequency(w, "en") for w in words])
    for pooling in ("cls", "mean"):
        assert out[pooling]["n"] == 120
        assert out[pooling]["spearman"] == pytest.approx(stats.spearmanr(norms[pooling], zipf)[0], abs=2e-3)
        lo, hi = out[pooling]["spearman_ci"]
        assert lo <= out[pooling]["spearman"] <= hi
    # the mean-pooled norms are the sentence-transformers model's own
    np.testing.assert_allclose(norms["mean"], np.linalg.norm(bundled_encoder.encode(words), axis=1), rtol=1e-4)
    row = pooling_claim(out)
    assert row["verdict"] == pooling_direction(out)[0] and row["measured"] == out["cls"]["spearman"]
    assert row["kind"] == "paper" and "mean pooling" in row["beside"]
    assert row["reason"] in ("both CIs exclude 0 on the same side", "the CIs exclude 0 on opposite sides",
                             "at least one CI includes 0") and "permutation" not in row["reason"]
    same = {"cls": {"spearman": 0.3, "spearman_ci": [0.2, 0.4]}, "mean": {"spearman": 0.2, "spearman_ci": [0.1, 0.3]}}
    assert pooling_direction(same)[0] == "reproduced"
    assert pooling_direction(dict(same, mean={"spearman": -0.2, "spearman_ci": [-0.3, -0.1]}))[0] == "refuted"
    assert pooling_direction(dict(same, mean={"spearman": 0.0, "spearman_ci": [-0.1, 0.1]}))[0] == "inconclusive"
    assert pooling_claim(None, "GloVe has no CLS token")["verdict"] == "not testable here"
