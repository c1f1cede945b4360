"""Mean pooling against CLS pooling: does the norm show the same trend under both?

The paper reports that mean pooling shows "similar trends" to CLS pooling: a direction-only claim. Where
the model allows it (a transformer whose weights load as ``hf:<dir or hub id>`` with either pooling,
:func:`normscope.encoders.load_encoder`), :func:`pooling_trends` embeds the same words with the model's
CLS token and with the mean of its token vectors and computes, for each, the Spearman rho between the raw
norm ||z|| and the word's Zipf frequency (wordfreq: the strongest of the semantic signals and the one that
needs no dataset), with a percentile bootstrap CI over words (each pooling resampled on its own).

"Similar trends" is read as: both CIs exclude 0 on the same side (``reproduced``); they exclude 0 on
opposite sides (``refuted``); otherwise ``inconclusive``. The sizes are shown, not judged: the paper gives
none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from normscope.signals.result import PoolingTrends

__all__ = ["pooling_trends", "pooling_direction", "weights_name"]


def weights_name(model: str) -> str:
    """The ``hf:`` name of ``model``'s weights: the extracted folder of a bundled model, else ``model`` itself
    (a folder or a hub id read from the local Hugging Face cache)."""
    from normscope.encoders.bundled import bundled_model_path, is_bundled_name  # deferred: start-up stays light

    if model.startswith("hf:"):
        return model
    return f"hf:{bundled_model_path(model) if is_bundled_name(model) else model}"


def pooling_trends(model: str, words: Sequence[str], *, n_boot: int = 2000, seed: int = 0, device: str = "cpu",
                   batch_size: int = 64) -> dict:
    """Spearman rho(norm, Zipf frequency) of ``words`` under CLS and under mean pooling of ``model``.

    Parameters
    ----------
    model : str
        A model name :func:`weights_name` resolves (bundled, a folder, a hub id in the local cache).
    words : sequence of str, length n
        The items (e.g. the frequency signal's wordfreq words); words unknown to wordfreq are left out.
    n_boot, seed : int, keyword-only
        Bootstrap resamples of words and their seed.
    device : str, keyword-only
    batch_size : int, keyword-only

    Returns
    -------
    dict
        ``{"model", "weights", "n", "cls": {"spearman", "spearman_ci", "n"}, "mean": {...}}``.

    Raises
    ------
    ModelError, InputError
        The weights cannot be loaded with a chosen pooling (the caller reports the row as not testable).
    """
    from normscope.encoders import load_encoder  # deferred: loads torch
    from normscope.lexicons.frequency import zipf_frequency
    from normscope.stats import correlation  # deferred: normscope.stats imports scipy

    words = list(words)
    zipf = zipf_frequency(words)
    name = weights_name(model)
    out: dict = {"model": model, "weights": name}
    for pooling in ("cls", "mean"):
        enc = load_encoder(name, pooling=pooling, device=device)
        norm = np.linalg.norm(np.asarray(enc.encode(words, batch_size=batch_size), dtype=np.float64), axis=1)
        ok = np.isfinite(zipf) & np.isfinite(norm)
        r = correlation(norm[ok], zipf[ok], n_boot=n_boot, n_perm=0, seed=seed)
        out[pooling] = {"spearman": r.spearman, "spearman_ci": [float(c) for c in r.spearman_ci], "n": int(r.n)}
    out["n"] = out["cls"]["n"]
    return out


def pooling_direction(trends) -> tuple[str, str]:
    """``(verdict, why)`` on "similar trends": the sides of 0 of the two CIs (see the module docstring)."""
    def side(ci) -> int:
        if not ci or None in ci:
            return 0
        return 1 if ci[0] > 0 else -1 if ci[1] < 0 else 0

    t = PoolingTrends.from_json(trends)
    c, m = t.cls, t.mean
    sc, sm = side(c.spearman_ci), side(m.spearman_ci)
    txt = (f"Spearman \u03c1(norm, Zipf) with CLS pooling {c.spearman:+.3g} [{c.spearman_ci[0]:+.3g}, "
           f"{c.spearman_ci[1]:+.3g}], with mean pooling {m.spearman:+.3g} [{m.spearman_ci[0]:+.3g}, "
           f"{m.spearman_ci[1]:+.3g}]")
    if sc and sm:
        return ("reproduced", f"{txt}: both CIs exclude 0 on the same side") if sc == sm else (
            "refuted", f"{txt}: the CIs exclude 0 on opposite sides")
    return "inconclusive", f"{txt}: at least one CI includes 0"
