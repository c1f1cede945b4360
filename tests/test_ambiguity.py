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
    # the row: claimed positive, judged from that partial rho and its CI
    row = ambiguity_claim(res.to_dict())
    assert row["measured"] == part.rho and row["ci"] == list(part.ci) and row["kind"] == "paper"
    expected_verdict = ("reproduced" if part.ci[0] > 0 else "refuted" if part.ci[1] < 0 else "inconclusive")
    assert row["verdict"] == expected_verdict and "-0.19" in row["why"]
