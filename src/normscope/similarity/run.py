"""``normscope similarity`` as Python: norm-aware pair scorers against human similarity ratings.

The parameter of each norm-aware scorer is fitted on fit pairs only -- the STS-B train split, a
``--fit`` file, or a seeded random half of the dataset -- and the scorers are evaluated on the other
pairs: Spearman and Pearson with the human scores, and the difference to cosine with a paired
bootstrap CI (the same resampled pairs for both scorers).
"""

from __future__ import annotations

import hashlib

from pathlib import Path

import numpy as np
import pandas as pd

from normscope.data import dataset_path
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import InputError
from normscope.inputs import collapse_duplicates
from normscope.similarity.claims import similarity_claim
from normscope.similarity.fit import fit_pair_param, pair_grid
from normscope.similarity.formats import PairSet, read_pairs, read_sts, sts_train_split
from normscope.requests.similarity import SimilarityRequest
from normscope.similarity.result import SimilarityResult
from normscope.similarity.scorers import PAIR_PARAM_NAMES, check_pair_scorer, pair_scores
from normscope.similarity.whitening import fit_whitening, reference_vocabulary
from normscope.stats import correlation
from normscope.stats_designs import correlation_difference
from normscope.table import require_raw_norms

__all__ = ["run_similarity", "MIN_PAIRS"]

#: Fewest fit pairs and fewest evaluated pairs.
MIN_PAIRS = 10
_CI_METHOD = ("percentile bootstrap over the evaluated pairs (resampled with replacement), the fitted parameter "
              "held fixed")


def _fit_set(eval_set: PairSet, fit, fit_format: str, seed: int) -> tuple[PairSet, PairSet, dict]:
    """(fit pairs, evaluated pairs, fit description): never the same pair in both."""
    if fit is not None:
        if Path(fit).resolve() == eval_set.path.resolve():
            raise InputError(f"--fit {fit} is the evaluated file: the parameters would be fitted on the evaluated pairs")
        return read_pairs(fit, fit_format), eval_set, {"source": "file", "path": str(fit)}
    train = sts_train_split(eval_set.path)
    if train is not None:
        return read_sts(train), eval_set, {"source": "sts-train split", "path": str(train)}
    if len(eval_set) < 2 * MIN_PAIRS:
        raise InputError(f"{eval_set.path} has {len(eval_set)} pairs: too few to fit on one half and evaluate on "
                         f"the other (need {2 * MIN_PAIRS}); give --fit FILE")
    # the half is drawn from the pairs' texts (a seeded hash), not from their line positions or scores, so
    # a shuffled file gets the same halves (permutation equivariance)
    perm = np.argsort(np.array([hashlib.sha256(f"{seed}\x1f{a}\x1f{b}".encode()).hexdigest()
                                for a, b in zip(eval_set.text1, eval_set.text2)]), kind="stable")
    half = len(eval_set) // 2
    return (eval_set.subset(np.sort(perm[:half])), eval_set.subset(np.sort(perm[half:])),
            {"source": "random half", "path": str(eval_set.path), "seed": seed,
             "drawn_by": "sha256 of the seed and the pair's two texts (the order of the file does not matter)"})


def _content(s: PairSet) -> list[str]:
    """One string per pair from its texts and score: the order-free identity of a pair."""
    return [f"{a}\x1f{b}\x1f{float(x)!r}" for a, b, x in zip(s.text1, s.text2, s.score)]


def _keys(s: PairSet) -> list[tuple[str, str]]:
    return [tuple(sorted((a, b))) for a, b in zip(s.text1, s.text2)]


def _collapse(s: PairSet, keep: bool, notes: list[str], where: str) -> tuple[PairSet, dict]:
    """``s`` with exact duplicate pairs (same two texts in either order, same score) counted once, and the report."""
    keys = [(k, float(x)) for k, x in zip(_keys(s), s.score)]
    pos, info = collapse_duplicates(keys, s.ids)
    info["kept"] = bool(keep)
    same_texts = len(s) - len(set(_keys(s))) - info["count"]  # same texts, another score: not exact copies
    if same_texts:
        notes.append(f"{where}: {same_texts} pair(s) repeat the texts of another pair with another score: kept")
    if not info["count"]:
        return s, info
    if keep:
        notes.append(f"{where}: {info['count']} pair(s) repeat another pair (same texts and score) and were kept "
                     "(--keep-duplicates): the CIs count each copy as an independent pair")
        return s, info
    notes.append(f"{where}: {info['count']} exact duplicate pair(s) left out ({info['groups']} pair(s) had copies; "
                 "each is counted once, the copy with the smallest id kept; --keep-duplicates keeps them all)")
    return s.subset(pos), info


def run_similarity(request: SimilarityRequest | None = None, *, encoder=None, progress: bool = False) -> SimilarityResult:
    """Fit norm-aware pair scorers on fit pairs and compare them with cosine on the evaluated pairs.

    Parameters
    ----------
    request : SimilarityRequest, optional
        What to run (:class:`~normscope.similarity.request.SimilarityRequest`: the evaluated and fit pairs,
        their formats, the scorers, ``keep_duplicates`` (exact duplicate pairs counted once unless set),
        ``whiten`` / ``whiten_vocab`` (whitened-cosine scorers, fitted on a word vocabulary), the model and its forward passes, the bootstrap); default: SimLex-999
        with the bundled model. ``cosine`` (the baseline of the differences) is always included. Its
        ``resampling.seed`` seeds the random half and the bootstrap; ``resampling.n_boot`` resamples the
        evaluated pairs (CIs of each Spearman / Pearson and of each difference; the same resamples for every
        scorer). Junk texts (:func:`normscope.inputs.find_junk`) are left out with their pairs, or an error
        (``embedding.junk``).
    encoder : Encoder, optional, keyword-only
        Default ``load_encoder(request.embedding.model, device=..., precision=...)``; a given encoder keeps
        its own precision. The result reports it and, for bf16, the norm error measured on a sample against
        fp32.
    progress : bool, keyword-only
        Progress on stderr.

    Returns
    -------
    SimilarityResult

    Raises
    ------
    InputError
        Unreadable files, ``fit`` equal to ``dataset``, fewer than 10 fit or evaluated pairs, vectors that
        were already normalised.
    DataError
        ``dataset`` names a registry dataset that is absent and cannot be fetched.
    """
    r = request if request is not None else SimilarityRequest()
    dataset, fit, scorers, fmt, fit_format = dataset_path(r.dataset), r.fit, r.scorers, r.fmt, r.fit_format
    e = r.embedding
    model, device, precision, batch_size, junk = e.model or DEFAULT_MODEL, e.device, e.precision, e.batch_size, e.junk
    seed, n_boot = r.resampling.seed, r.resampling.n_boot
    keep_duplicates, whiten, whiten_vocab = r.keep_duplicates, list(dict.fromkeys(r.whiten)), r.whiten_vocab

    names = ["cosine"] + [check_pair_scorer(s) for s in dict.fromkeys(scorers) if s != "cosine"]
    notes: list[str] = []
    eval_all, duplicates = _collapse(read_pairs(dataset, fmt), keep_duplicates, notes, "evaluated file")
    fit_set, eval_set, fit_info = _fit_set(eval_all, fit, fit_format, seed)
    if fit_info["source"] == "file":
        fit_set, fit_dups = _collapse(fit_set, keep_duplicates, notes, "fit file")
        fit_info["duplicates"] = fit_dups
    ev_keys = set(_keys(eval_set))
    overlap = [i for i, k in enumerate(_keys(fit_set)) if k in ev_keys]
    fit_set = fit_set.subset([i for i in range(len(fit_set)) if i not in set(overlap)])
    if encoder is None:
        encoder = load_encoder(model, device=device, precision=precision)
    texts = sorted(set(fit_set.text1 + fit_set.text2 + eval_set.text1 + eval_set.text2))
    table = embed_texts(texts, texts, encoder=encoder, batch_size=batch_size, progress=progress, junk=junk,
                        what="texts")
    norms = table.norms.astype(np.float64)
    require_raw_norms(norms, "similarity")
    row = {t: i for i, t in enumerate(table.ids)}
    vec = table.vectors.astype(np.float64)

    def usable(s: PairSet) -> tuple[PairSet, int]:
        ok = [i for i in range(len(s)) if s.text1[i] in row and s.text2[i] in row]
        return s.subset(ok), len(s) - len(ok)

    fit_set, fit_junk = usable(fit_set)
    eval_set, eval_junk = usable(eval_set)
    for what, s in (("fit", fit_set), ("evaluated", eval_set)):
        if len(s) < MIN_PAIRS:
            raise InputError(f"only {len(s)} {what} pairs (need {MIN_PAIRS})")
    pick = lambda s, side: vec[[row[t] for t in (s.text1 if side == 1 else s.text2)]]  # noqa: E731
    af, bf, ae, be = pick(fit_set, 1), pick(fit_set, 2), pick(eval_set, 1), pick(eval_set, 2)
    cos_eval = pair_scores(ae, be, "cosine")
    canon = np.argsort(np.array(_content(eval_set)), kind="stable")  # bootstraps resample pairs in content order
    out: dict[str, dict] = {}
    items = pd.DataFrame({"split": ["fit"] * len(fit_set) + ["eval"] * len(eval_set),
                          "id": fit_set.ids + eval_set.ids, "text1": fit_set.text1 + eval_set.text1,
                          "text2": fit_set.text2 + eval_set.text2,
                          "human": np.concatenate([fit_set.score, eval_set.score]),
                          "norm1": np.linalg.norm(np.vstack([af, ae]), axis=1),
                          "norm2": np.linalg.norm(np.vstack([bf, be]), axis=1)})
    for name in names:
        param, curve = fit_pair_param(name, af, bf, fit_set.score, grid=pair_grid(name, norms))
        s_eval = pair_scores(ae, be, name, param)
        items[f"score_{name}"] = np.concatenate([pair_scores(af, bf, name, param), s_eval])
        r = correlation(s_eval[canon], eval_set.score[canon], n_boot=n_boot, n_perm=0, seed=seed,
                        min_n=MIN_PAIRS).to_dict()
        d = (None if name == "cosine" else
             correlation_difference(eval_set.score[canon], s_eval[canon], cos_eval[canon], method="spearman",
                                    n_boot=n_boot, seed=seed, min_n=MIN_PAIRS))
        out[name] = {"param_name": PAIR_PARAM_NAMES[name], "param": param, "spearman": r["spearman"],
                     "spearman_ci": r["spearman_ci"], "pearson": r["pearson"], "pearson_ci": r["pearson_ci"],
                     "delta_spearman": 0.0 if d is None else d.delta, "delta_ci": None if d is None else list(d.ci),
                     "relative": 0.0 if d is None else d.to_dict()["relative"],
                     "relative_ci": None if d is None else d.to_dict()["relative_ci"],
                     "fit_spearman": max(c["spearman"] for c in curve if np.isfinite(c["spearman"])),
                     "curve": curve}
    whitening: dict = {}
    if whiten:
        words, wvec, freq = reference_vocabulary(encoder, whiten_vocab, batch_size=batch_size, progress=progress)
        whitening = {"vocabulary": f"the top {len(words)} alphabetic English words of wordfreq embedded by the model "
                                   f"(of {whiten_vocab} asked; the others were junk for this model)",
                     "n_vocab": len(words), "weights": "zipf: wordfreq word_frequency(w, 'en') renormalised over the "
                     "vocabulary; uniform: 1/|V|", "method": "Yokoi et al. 2024 (NeurIPS), Zipfian Whitening, "
                     "Algorithm 1: centre by the p-weighted mean, rescale by V Sigma^-1 of the SVD of the "
                     "sqrt(p)-weighted centred vectors; pairs scored by the cosine of whitened vectors"}
        for kind in whiten:
            w = fit_whitening(wvec, freq, kind=kind)
            name = f"{kind}_whitened"
            s_fit = pair_scores(w(af), w(bf), "cosine")
            s_eval = pair_scores(w(ae), w(be), "cosine")
            items[f"score_{name}"] = np.concatenate([s_fit, s_eval])
            r = correlation(s_eval[canon], eval_set.score[canon], n_boot=n_boot, n_perm=0, seed=seed,
                            min_n=MIN_PAIRS).to_dict()
            d = correlation_difference(eval_set.score[canon], s_eval[canon], cos_eval[canon], method="spearman",
                                       n_boot=n_boot, seed=seed, min_n=MIN_PAIRS)
            fit_rho = correlation(s_fit, fit_set.score, n_boot=0, n_perm=0, min_n=MIN_PAIRS).to_dict()["spearman"]
            out[name] = {"param_name": None, "param": None, "spearman": r["spearman"],
                         "spearman_ci": r["spearman_ci"], "pearson": r["pearson"], "pearson_ci": r["pearson_ci"],
                         "delta_spearman": d.delta, "delta_ci": list(d.ci), "relative": d.to_dict()["relative"],
                         "relative_ci": d.to_dict()["relative_ci"], "fit_spearman": fit_rho, "curve": [],
                         "whitening": {"kind": kind, "rank": w.rank, "n_vocab": w.n_vocab}}
    shared = len(set(fit_set.text1 + fit_set.text2) & set(eval_set.text1 + eval_set.text2))
    fit_info.update(n_pairs=len(fit_set), n_overlap_removed=len(overlap), n_shared_texts=shared,
                    n_pairs_junk=fit_junk, format=fit_set.format, norm_max=float(norms.max()),
                    criterion="largest Spearman rho with the human scores of the fit pairs, grid search "
                              "(ties: the value closest to cosine)")
    notes = [f"evaluated file: {n}" for n in eval_set.notes] + [f"fit file: {n}" for n in fit_set.notes
                                                                 if fit_info["source"] != "random half"] + notes
    if overlap:
        notes.append(f"{len(overlap)} fit pair(s) are also evaluated pairs and were dropped from the fit set")
    if fit_info["source"] == "random half":
        notes.append(f"parameters fitted on a random half ({len(fit_set)} pairs, seed {seed}) and evaluated on the "
                     f"other {len(eval_set)} pairs; the halves share {shared} texts")
    if whitening:
        notes.append(f"whitened scorers: fitted on {whitening['n_vocab']} wordfreq words embedded by the model, not on "
                     "any pair; their CIs hold the whitening fixed")
    notes.append("CIs resample the evaluated pairs with the fitted parameters held fixed: they leave out the "
                 "uncertainty of the fit, and treat pairs as independent although some share a text")
    res = SimilarityResult(
        dataset=str(eval_set.path), format=eval_set.format, model=table.fingerprint.name, n_pairs=len(eval_set),
        fit=fit_info, scorers=out, n_texts=len(table), n_truncated=table.n_truncated, junk=table.junk.to_dict(),
        precision=encoder.fingerprint.precision, norm_rel_error_vs_fp32=table.norm_rel_error_vs_fp32,
        n_pairs_junk=eval_junk, duplicates=duplicates, ci_method=_CI_METHOD,
        delta_ci_method=("paired percentile bootstrap: the same resampled evaluated pairs for the scorer and for "
                         "cosine, the fitted parameter held fixed"),
        n_boot=n_boot, seed=seed, whitening=whitening, norm_mean=float(norms.mean()), norm_sd=float(norms.std(ddof=1)) if len(norms) > 1 else None,
        notes=notes, items=items,
    )
    res.claims = [similarity_claim(res.to_dict())]
    return res

