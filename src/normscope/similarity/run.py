"""``normscope similarity`` as Python: norm-aware pair scorers against human similarity ratings.

The parameter of each norm-aware scorer is fitted on fit pairs only -- the STS-B train split, a
``--fit`` file, or a seeded random half of the dataset -- and the scorers are evaluated on the other
pairs: Spearman and Pearson with the human scores, and the difference to cosine with a paired
bootstrap CI (the same resampled pairs for both scorers).
"""

from __future__ import annotations

import dataclasses
import hashlib

from pathlib import Path

import numpy as np
import pandas as pd

from normscope._format import noun, plural
from normscope.data import dataset_path
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import InputError
from normscope.inputs import collapse_duplicates
from normscope.similarity.claims import similarity_claim
from normscope.similarity.fit import fit_pair_param, pair_grid
from normscope.similarity.refit import refit_pair_cis
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
_CI_METHOD = ("percentile bootstrap over the evaluated pairs (resampled with replacement); a fitted scorer's CIs "
              "resample the fit pairs jointly and refit its parameter on each draw (each scorer's ci_resamples; "
              "*_ci_fixed_param: the parameter held fixed)")


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
        notes.append(f"{where}: {plural(same_texts, 'pair')} {noun(same_texts, 'repeats', 'repeat')} the texts of another pair "
                     "with another score: kept")
    if not info["count"]:
        return s, info
    if keep:
        notes.append(f"{where}: {plural(info['count'], 'pair')} {noun(info['count'], 'repeats', 'repeat')} another pair (same "
                     f"texts and score) and {noun(info['count'], 'was', 'were')} kept "
                     "(--keep-duplicates): the CIs count each copy as an independent pair")
        return s, info
    notes.append(f"{where}: {plural(info['count'], 'exact duplicate pair')} left out ({plural(info['groups'], 'pair')} had "
                 "copies; "
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
    dataset, e = dataset_path(r.dataset), r.embedding
    seed, n_boot = r.resampling.seed, r.resampling.n_boot
    whiten = list(dict.fromkeys(r.whiten))
    names = ["cosine"] + [check_pair_scorer(s) for s in dict.fromkeys(r.scorers) if s != "cosine"]
    notes: list[str] = []
    eval_set, fit_set, fit_info, duplicates, overlap = _pair_sets(r, dataset, notes)
    if encoder is None:
        encoder = load_encoder(e.model or DEFAULT_MODEL, device=e.device, precision=e.precision, runtime=e.runtime)
    texts = sorted(set(fit_set.text1 + fit_set.text2 + eval_set.text1 + eval_set.text2))
    table = embed_texts(texts, texts, encoder=encoder, batch_size=e.batch_size, progress=progress, junk=e.junk,
                        what="texts")
    norms = table.norms.astype(np.float64)
    require_raw_norms(norms, "similarity")
    fit_set, fit_junk, eval_set, eval_junk, (af, bf, ae, be) = _pair_vectors(table, fit_set, eval_set)
    canon = np.argsort(np.array(_content(eval_set)), kind="stable")  # bootstraps resample pairs in content order
    items = pd.DataFrame({"split": ["fit"] * len(fit_set) + ["eval"] * len(eval_set),
                          "id": fit_set.ids + eval_set.ids, "text1": fit_set.text1 + eval_set.text1,
                          "text2": fit_set.text2 + eval_set.text2,
                          "human": np.concatenate([fit_set.score, eval_set.score]),
                          "norm1": np.linalg.norm(np.vstack([af, ae]), axis=1),
                          "norm2": np.linalg.norm(np.vstack([bf, be]), axis=1)})
    pairs = _Pairs(fit_set, eval_set, af, bf, ae, be, canon, pair_scores(ae, be, "cosine"))
    out = _fitted_scorers(names, pairs, norms, items, n_boot=n_boot, seed=seed)
    whitening: dict = {}
    if whiten:
        whitening = _whitened_scorers(whiten, r.whiten_vocab, encoder, pairs, out, items, batch_size=e.batch_size,
                                      progress=progress, n_boot=n_boot, seed=seed)
    shared = len(set(fit_set.text1 + fit_set.text2) & set(eval_set.text1 + eval_set.text2))
    fit_info.update(n_pairs=len(fit_set), n_overlap_removed=len(overlap), n_shared_texts=shared,
                    n_pairs_junk=fit_junk, format=fit_set.format, norm_max=float(norms.max()),
                    criterion="largest Spearman rho with the human scores of the fit pairs, grid search "
                              "(ties: the value closest to cosine)")
    notes = _notes(notes, fit_set, eval_set, fit_info, overlap, whitening, shared=shared, seed=seed)
    res = SimilarityResult(
        dataset=str(eval_set.path), format=eval_set.format, model=table.fingerprint.name, n_pairs=len(eval_set),
        fit=fit_info, scorers=out, n_texts=len(table), n_truncated=table.n_truncated, junk=table.junk.to_dict(),
        precision=encoder.fingerprint.precision, norm_rel_error_vs_fp32=table.norm_rel_error_vs_fp32,
        n_pairs_junk=eval_junk, duplicates=duplicates, ci_method=_CI_METHOD,
        delta_ci_method=("paired percentile bootstrap: the same resampled evaluated pairs for the scorer and for "
                         "cosine; a fitted scorer's parameter refitted on a joint draw of the fit pairs each time"),
        n_boot=n_boot, seed=seed, whitening=whitening, norm_mean=float(norms.mean()), norm_sd=float(norms.std(ddof=1)) if len(norms) > 1 else None,
        notes=notes, items=items,
    )
    res.claims = [similarity_claim(res)]
    return res


def _pair_sets(r: SimilarityRequest, dataset, notes: list[str]) -> tuple[PairSet, PairSet, dict, dict, list[int]]:
    """(evaluated pairs, fit pairs, fit description, duplicates of the evaluated file, fit positions dropped
    because they are evaluated pairs too): duplicates collapsed unless kept, never the same pair in both."""
    eval_all, duplicates = _collapse(read_pairs(dataset, r.fmt), r.keep_duplicates, notes, "evaluated file")
    fit_set, eval_set, fit_info = _fit_set(eval_all, r.fit, r.fit_format, r.resampling.seed)
    if fit_info["source"] == "file":
        fit_set, fit_dups = _collapse(fit_set, r.keep_duplicates, notes, "fit file")
        fit_info["duplicates"] = fit_dups
    ev_keys = set(_keys(eval_set))
    overlap = [i for i, k in enumerate(_keys(fit_set)) if k in ev_keys]
    fit_set = fit_set.subset([i for i in range(len(fit_set)) if i not in set(overlap)])
    return eval_set, fit_set, fit_info, duplicates, overlap


def _pair_vectors(table, fit_set: PairSet, eval_set: PairSet):
    """The pairs whose two texts were embedded (junk texts drop their pairs; at least :data:`MIN_PAIRS` of
    each kind) and their float64 vectors: (fit pairs, fit pairs dropped, evaluated pairs, evaluated pairs
    dropped, (fit side 1, fit side 2, evaluated side 1, evaluated side 2))."""
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
    return fit_set, fit_junk, eval_set, eval_junk, (pick(fit_set, 1), pick(fit_set, 2), pick(eval_set, 1),
                                                    pick(eval_set, 2))


@dataclasses.dataclass(frozen=True)
class _Pairs:
    """Fit and evaluated pairs with their vectors (float64, one row per pair and side), the content order
    the bootstraps resample in, and cosine's scores of the evaluated pairs (the baseline of every difference)."""

    fit: PairSet
    eval: PairSet
    af: np.ndarray
    bf: np.ndarray
    ae: np.ndarray
    be: np.ndarray
    canon: np.ndarray
    cos_eval: np.ndarray

    def evaluate(self, s_eval: np.ndarray, *, n_boot: int, seed: int, baseline: bool = False):
        """(Spearman / Pearson with CIs of ``s_eval`` and the human scores, the paired difference to cosine or
        None for cosine itself), resampling the evaluated pairs in content order."""
        c = self.canon
        r = correlation(s_eval[c], self.eval.score[c], n_boot=n_boot, n_perm=0, seed=seed, min_n=MIN_PAIRS).to_dict()
        d = (None if baseline else
             correlation_difference(self.eval.score[c], s_eval[c], self.cos_eval[c], method="spearman",
                                    n_boot=n_boot, seed=seed, min_n=MIN_PAIRS))
        return r, d


def _fitted_scorers(names: list[str], p: _Pairs, norms: np.ndarray, items: pd.DataFrame, *, n_boot: int,
                    seed: int) -> dict:
    """Each scorer's parameter fitted on the fit pairs (grid search on Spearman rho) and its evaluation; the
    scores go into ``items`` (``score_<name>``)."""
    out: dict[str, dict] = {}
    for name in names:
        param, curve = fit_pair_param(name, p.af, p.bf, p.fit.score, grid=pair_grid(name, norms))
        s_eval = pair_scores(p.ae, p.be, name, param)
        items[f"score_{name}"] = np.concatenate([pair_scores(p.af, p.bf, name, param), s_eval])
        r, d = p.evaluate(s_eval, n_boot=n_boot, seed=seed, baseline=name == "cosine")
        out[name] = {"param_name": PAIR_PARAM_NAMES[name], "param": param, "spearman": r["spearman"],
                     "spearman_ci": r["spearman_ci"], "pearson": r["pearson"], "pearson_ci": r["pearson_ci"],
                     "delta_spearman": 0.0 if d is None else d.delta, "delta_ci": None if d is None else list(d.ci),
                     "relative": 0.0 if d is None else d.to_dict()["relative"],
                     "relative_ci": None if d is None else d.to_dict()["relative_ci"],
                     "fit_spearman": max(c["spearman"] for c in curve if np.isfinite(c["spearman"])),
                     "curve": curve, "ci_resamples": "evaluated pairs (nothing fitted)"}
        if PAIR_PARAM_NAMES[name] is not None and n_boot:
            o = out[name]
            o.update({f"{k}_fixed_param": o[k] for k in ("spearman_ci", "pearson_ci", "delta_ci", "relative_ci")},
                     **_refit(name, [c["param"] for c in curve], p, n_boot=n_boot, seed=seed))
    return out


def _refit(name: str, params: list[float], p: _Pairs, *, n_boot: int, seed: int) -> dict:
    """A fitted scorer's CIs with its parameter refitted on every draw of the fit pairs (evaluated pairs resampled
    jointly, :func:`~normscope.similarity.refit.refit_pair_cis`); the fixed-parameter CIs kept as ``*_fixed_param``."""
    fc = np.argsort(np.array(_content(p.fit)), kind="stable")  # fit pairs resampled in content order too
    c = p.canon
    fit = np.column_stack([pair_scores(p.af, p.bf, name, x) for x in params])
    ev = np.column_stack([pair_scores(p.ae, p.be, name, x) for x in params])
    ci = refit_pair_cis(params, fit[fc], p.fit.score[fc], ev[c], p.eval.score[c], p.cos_eval[c], n_boot=n_boot,
                        seed=seed)
    return {**ci, "ci_resamples": ci.pop("resamples")}


def _whitened_scorers(whiten: list[str], whiten_vocab: int, encoder, p: _Pairs, out: dict, items: pd.DataFrame, *,
                      batch_size: int, progress: bool, n_boot: int, seed: int) -> dict:
    """Cosine of Zipfian- (or uniformly) whitened vectors (Yokoi et al. 2024), the whitening fitted on a
    wordfreq vocabulary embedded by the model; each kind's evaluation into ``out`` and scores into ``items``.
    Returns the whitening description."""
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
        s_fit = pair_scores(w(p.af), w(p.bf), "cosine")
        s_eval = pair_scores(w(p.ae), w(p.be), "cosine")
        items[f"score_{name}"] = np.concatenate([s_fit, s_eval])
        r, d = p.evaluate(s_eval, n_boot=n_boot, seed=seed)
        fit_rho = correlation(s_fit, p.fit.score, n_boot=0, n_perm=0, min_n=MIN_PAIRS).to_dict()["spearman"]
        out[name] = {"param_name": None, "param": None, "spearman": r["spearman"],
                     "spearman_ci": r["spearman_ci"], "pearson": r["pearson"], "pearson_ci": r["pearson_ci"],
                     "delta_spearman": d.delta, "delta_ci": list(d.ci), "relative": d.to_dict()["relative"],
                     "relative_ci": d.to_dict()["relative_ci"], "fit_spearman": fit_rho, "curve": [],
                     "whitening": {"kind": kind, "rank": w.rank, "n_vocab": w.n_vocab}}
    return whitening


def _notes(notes: list[str], fit_set: PairSet, eval_set: PairSet, fit_info: dict, overlap: list, whitening: dict, *,
           shared: int, seed: int) -> list[str]:
    """The files' notes (the fit file's unless it is a random half), then the run's: duplicates, dropped
    overlap, the random half, the whitening and what the CIs leave out."""
    notes = [f"evaluated file: {n}" for n in eval_set.notes] + [f"fit file: {n}" for n in fit_set.notes
                                                                 if fit_info["source"] != "random half"] + notes
    if overlap:
        n_both = len(overlap)
        notes.append(f"{plural(n_both, 'fit pair')} {noun(n_both, 'is', 'are')} also "
                     f"{noun(n_both, 'an evaluated pair', 'evaluated pairs')} and {noun(n_both, 'was', 'were')} dropped "
                     "from the fit set")
    if fit_info["source"] == "random half":
        notes.append(f"parameters fitted on a random half ({len(fit_set)} pairs, seed {seed}) and evaluated on the "
                     f"other {len(eval_set)} pairs; the halves share {shared} texts")
    if whitening:
        notes.append(f"whitened scorers: fitted on {whitening['n_vocab']} wordfreq words embedded by the model, not on "
                     "any pair; their CIs hold the whitening fixed")
    notes.append("CIs resample the evaluated pairs and, for a fitted scorer, the fit pairs (its parameter refitted on "
                 "each draw); they treat pairs as independent although some share a text, and a random half is "
                 "drawn once (its split is not redrawn)")
    return notes

