"""A deployable calibrator: P(relevant) from per-query signals, with thresholds measured or guaranteed.

**Map.** A logistic regression on the standardised signals (scikit-learn ``LogisticRegression``, C = 1)
is calibrated by ``CalibratedClassifierCV(method="isotonic" | "sigmoid", ensemble=False)`` with a seeded
5-fold split: the regression is refitted on all fitting queries and the isotonic (or Platt sigmoid) map
is fitted on its out-of-fold decision values. The fitted numbers (scaler, coefficients, isotonic
thresholds or Platt ``a, b``) are stored as plain JSON and applied by :meth:`Calibrator.predict_proba`
in numpy: the file holds no pickle, and its probabilities equal scikit-learn's ``predict_proba``
(tests/test_retrieval_calibrator.py).

**Guarantee** ("precision >= 1 - alpha with probability >= 1 - delta"). Learn-then-Test (Angelopoulos,
Bates, Candes, Jordan & Lei, 2021) through MAPIE's ``BinaryClassificationController`` (risk
``precision``, Hoeffding-Bentkus p-values, Bonferroni-Holm over a fixed grid of thresholds on
P(relevant)), on **calibration queries that the map was not fitted on**. Its assumption: the
calibration queries and the future queries are exchangeable (i.i.d. from one distribution, with the
same model, corpus and run); the guarantee is on the precision over the population of future
queries that the threshold answers, and holds with probability 1 - delta over the draw of the
calibration queries. It says nothing once queries shift (docs/retrieval.md, "Shift"). Why MAPIE and
not crepes: crepes builds conformal classifiers and predictive systems (prediction sets, p-values
for labels), with no risk control of a selective precision; MAPIE implements Learn-then-Test for
exactly this binary precision risk with a documented FWER procedure.

**Document thresholds** ("keep documents whose score >= t"): the smallest cosine ``t`` on a fixed
grid whose micro precision over the calibration queries' top-k documents reaches the target;
measured, with **no** distribution-free guarantee: the documents of one query are not exchangeable
units (they share the query), so a per-document binomial argument does not hold.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._io import OutsideFolder, read_inside, write_json
from normscope.errors import InputError
from normscope.requests.retrieval import DEFAULT_CALIBRATE_SIGNALS
from normscope.retrieval.qpp import QPP_SIGNALS, QPP_SPECS, qpp_signals
from normscope.table import ModelFingerprint

__all__ = [
    "FORMAT",
    "VERSION",
    "DEFAULT_SIGNALS",
    "METHODS",
    "LAMBDA_GRID",
    "SCORE_GRID",
    "Calibrator",
    "fit_calibrator",
    "target_labels",
    "ltt_threshold",
    "answer_stats",
    "score_threshold",
    "keep_stats",
    "load_calibrator",
    "check_calibrator_dict",
    "check_fingerprint",
    "apply_to_run",
]

FORMAT = "normscope-calibrator"
VERSION = 1
#: Signals of the default calibrator: the run's top-1 score and margin and the query's raw norm (defined with the
#: command's request; ``run_calibrate`` leaves the norm out, with a note, where the input has no raw norms).
DEFAULT_SIGNALS: tuple[str, ...] = DEFAULT_CALIBRATE_SIGNALS
#: ``--method`` -> scikit-learn's ``CalibratedClassifierCV(method=)``.
METHODS = {"isotonic": "isotonic", "platt": "sigmoid"}
#: Thresholds on P(relevant) tested by Learn-then-Test (fixed before any data; Bonferroni-Holm over all 10).
LAMBDA_GRID: tuple[float, ...] = tuple(float(round(x, 2)) for x in np.arange(0.5, 0.96, 0.05))
#: Cosine thresholds of "keep documents whose score >= t".
SCORE_GRID: tuple[float, ...] = tuple(float(round(x, 3)) for x in np.arange(-1.0, 1.0001, 0.005))


def _f(x) -> list[float]:
    return [float(v) for v in np.asarray(x, dtype=np.float64).ravel()]


@dataclasses.dataclass
class Calibrator:
    """P(relevant) of a query's result from its signals: scaler -> logistic regression -> isotonic / Platt map.

    Attributes
    ----------
    signals : list of str
        Feature columns, names of :data:`normscope.retrieval.qpp.QPP_SIGNALS`.
    method : {'isotonic', 'platt'}
    target : str
        ``"top1_relevant"`` or ``"any_relevant_at_K"`` (some document of the top K relevant).
    scaler_mean, scaler_scale, coef : list of float (one per signal)
    intercept : float
    map : dict
        ``{"x": [...], "y": [...]}`` (isotonic thresholds on the decision value, linear between them,
        clipped outside) or ``{"a": float, "b": float}`` (Platt: ``1 / (1 + exp(a d + b))``).
    model : dict
        The :class:`~normscope.table.ModelFingerprint` of the embeddings (``to_dict()``), with ``key``.
    scorer : str
        The run the signals come from (``"cosine"``).
    depth : int
        Results per query the signals need (the largest k of their predictors).
    fitted_on : dict
        Dataset, split, queries and seed of the fit.
    thresholds : dict
        Learn-then-Test and document thresholds (see :func:`ltt_threshold`, :func:`score_threshold`).
    """

    signals: list
    method: str
    target: str
    scaler_mean: list
    scaler_scale: list
    coef: list
    intercept: float
    map: dict
    model: dict
    scorer: str = "cosine"
    depth: int = 2
    fitted_on: dict = dataclasses.field(default_factory=dict)
    thresholds: dict = dataclasses.field(default_factory=dict)

    def decision(self, X) -> np.ndarray:
        """Logistic-regression decision value ``coef . (x - mean) / scale + intercept``, shape (n,)."""
        X = self._matrix(X)
        return ((X - np.asarray(self.scaler_mean)) / np.asarray(self.scaler_scale)) @ np.asarray(self.coef) + self.intercept

    def predict_proba(self, X) -> np.ndarray:
        """Calibrated P(relevant), float64 in [0, 1], shape (n,).

        Parameters
        ----------
        X : array-like of shape (n, len(signals)), or a pandas.DataFrame holding the signal columns

        Raises
        ------
        InputError
            Missing columns, wrong width, non-finite values.
        """
        d = self.decision(X)
        if "x" in self.map:
            return np.clip(np.interp(d, self.map["x"], self.map["y"]), 0.0, 1.0)
        return 1.0 / (1.0 + np.exp(self.map["a"] * d + self.map["b"]))

    def _matrix(self, X) -> np.ndarray:
        if hasattr(X, "columns"):
            missing = [s for s in self.signals if s not in X.columns]
            if missing:
                raise InputError(f"the calibrator needs signal(s) {', '.join(missing)}")
            X = X[self.signals].to_numpy(np.float64)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.signals):
            raise InputError(f"expected {len(self.signals)} signal columns ({', '.join(self.signals)}), got shape {X.shape}")
        if not np.isfinite(X).all():
            raise InputError("non-finite signal values")
        return X

    def to_dict(self) -> dict:
        """The calibrator file's content (strict JSON)."""
        return {"format": FORMAT, "version": VERSION, **dataclasses.asdict(self)}

    def save(self, path) -> Path:
        """Write the JSON file atomically (:func:`normscope._io.write_json`)."""
        return write_json(self.to_dict(), path)

    @classmethod
    def from_dict(cls, d: dict, *, source: str = "calibrator") -> "Calibrator":
        """Validate against the calibrator schema and build.

        Every field is checked with its range (:func:`check_calibrator_dict`): known signals, method,
        target (``top1_relevant`` or ``any_relevant_at_K``, K >= 1) and scorer; finite scaler, coefficients and
        intercept (scales > 0); an isotonic map with increasing ``x`` and non-decreasing ``y`` in [0, 1], or
        a finite Platt ``a, b``; a model fingerprint with a known precision; thresholds finite, P thresholds in
        [0, 1], the cosine document threshold in [-1, 1], ``k`` and ``depth`` integers >= 1.

        Raises
        ------
        InputError
            One line naming ``source`` and the field: another format or version, a missing field, a value
            of the wrong type or out of its range.
        """
        check_calibrator_dict(d, source)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def _bad(source: str, field: str, what: str) -> InputError:
    return InputError(f"{source}: calibrator field '{field}' {what}")


def _finite(v) -> bool:
    import math

    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _numbers(source: str, field: str, v, n: int | None = None, *, positive: bool = False) -> list:
    if not isinstance(v, list) or (n is not None and len(v) != n) or not v:
        want = f"a list of {n} numbers" if n is not None else "a non-empty list of numbers"
        got = f"{len(v)} entries" if isinstance(v, list) else type(v).__name__
        raise _bad(source, field, f"should be {want}, is {got}")
    bad = next((i for i, x in enumerate(v) if not _finite(x) or (positive and x <= 0)), None)
    if bad is not None:
        raise _bad(source, f"{field}[{bad}]", f"is {json.dumps(v[bad])}, not a {'positive ' if positive else ''}"
                                               "finite number")
    return v


def _target_k(target) -> int | None:
    """K of a target name (1 for ``top1_relevant``), None when the name is not a known target."""
    if target == "top1_relevant":
        return 1
    prefix = "any_relevant_at_"
    if isinstance(target, str) and target.startswith(prefix) and target[len(prefix):].isascii() \
            and target[len(prefix):].isdigit() and not target[len(prefix):].startswith("0"):
        return int(target[len(prefix):])
    return None


def check_calibrator_dict(d, source: str = "calibrator") -> None:
    """Check a calibrator file's JSON against the schema of :class:`Calibrator` (see :meth:`Calibrator.from_dict`).

    Raises
    ------
    InputError
        ``<source>: calibrator field '<field>' <what is wrong>`` (one line).
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise InputError(f"{source} is not a normscope calibrator file (no \"format\": \"{FORMAT}\")")
    if d.get("version") != VERSION:
        raise InputError(f"{source} has calibrator version {d.get('version')}; this normscope reads version {VERSION}")
    for f in ("signals", "method", "target", "scaler_mean", "scaler_scale", "coef", "intercept", "map", "model"):
        if f not in d:
            raise _bad(source, f, "is missing")
    k = _check_signals(d, source)
    _check_map(d, source)
    _check_model(d["model"], source)
    if d.get("scorer", "cosine") != "cosine":
        raise _bad(source, "scorer", f"is {json.dumps(d.get('scorer'))[:30]}, not cosine")
    depth = d.get("depth", 2)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < max(k, 1):
        raise _bad(source, "depth", f"is {json.dumps(depth)[:30]}, not an integer >= {max(k, 1)} (the target's K)")
    if not isinstance(d.get("fitted_on", {}), dict):
        raise _bad(source, "fitted_on", "should be an object")
    _check_thresholds(d.get("thresholds", {}), source)


def _check_signals(d: dict, source: str) -> int:
    """Signals, method, target, scaler, coefficients and intercept; returns the target's K."""
    signals = d["signals"]
    if not isinstance(signals, list) or not signals or not all(isinstance(x, str) for x in signals):
        raise _bad(source, "signals", "should be a non-empty list of signal names")
    unknown = [x for x in signals if x not in QPP_SPECS]
    if unknown:
        raise _bad(source, "signals", f"names unknown signal '{unknown[0]}' (known: {', '.join(QPP_SIGNALS)})")
    if len(set(signals)) != len(signals):
        raise _bad(source, "signals", "names a signal twice")
    if d["method"] not in METHODS:
        raise _bad(source, "method", f"is {json.dumps(d['method'])}, not one of {', '.join(METHODS)}")
    k = _target_k(d["target"])
    if k is None:
        raise _bad(source, "target", f"is {json.dumps(d['target'])[:40]}, not top1_relevant or any_relevant_at_K "
                                     "with an integer K >= 1")
    p = len(signals)
    _numbers(source, "scaler_mean", d["scaler_mean"], p)
    _numbers(source, "scaler_scale", d["scaler_scale"], p, positive=True)
    _numbers(source, "coef", d["coef"], p)
    if not _finite(d["intercept"]):
        raise _bad(source, "intercept", f"is {json.dumps(d['intercept'])[:40]}, not a finite number")
    return k


def _check_map(d: dict, source: str) -> None:
    mp = d["map"]
    if d["method"] == "isotonic":
        if not isinstance(mp, dict) or "x" not in mp or "y" not in mp:
            raise _bad(source, "map", "of an isotonic calibrator should hold 'x' and 'y'")
        x = _numbers(source, "map.x", mp["x"])
        y = _numbers(source, "map.y", mp["y"], len(x))
        if any(b <= a for a, b in zip(x, x[1:])):
            raise _bad(source, "map.x", "is not increasing (an isotonic map's thresholds are sorted)")
        if any(b < a for a, b in zip(y, y[1:])):
            raise _bad(source, "map.y", "is not non-decreasing (an isotonic map is monotone)")
        if min(y) < 0 or max(y) > 1:
            raise _bad(source, "map.y", "holds values outside [0, 1] (probabilities)")
    else:
        if not isinstance(mp, dict) or not _finite(mp.get("a")) or not _finite(mp.get("b")):
            raise _bad(source, "map", "of a Platt calibrator should hold finite numbers 'a' and 'b'")


def _check_model(model, source: str) -> None:
    from normscope.table import PRECISIONS

    if not isinstance(model, dict) or not all(isinstance(model.get(f), str) and model.get(f)
                                              for f in ("name", "revision", "pooling")):
        raise _bad(source, "model", "should be a model fingerprint (name, revision, pooling)")
    if model.get("precision", "fp32") not in PRECISIONS:
        raise _bad(source, "model.precision", f"is {json.dumps(model.get('precision'))[:30]}, not one of "
                                              f"{', '.join(PRECISIONS)}")
    for f in ("backend", "config"):
        if f in model and not isinstance(model[f], str):
            raise _bad(source, f"model.{f}", "should be a string")
    if "key" in model:
        from normscope.table import ModelFingerprint

        if model["key"] != ModelFingerprint.from_dict(model).key:
            raise _bad(source, "model.key", "does not match the fingerprint's fields (edited by hand?)")


def _check_thresholds(th, source: str) -> None:
    if not isinstance(th, dict):
        raise _bad(source, "thresholds", "should be an object")
    ans = th.get("answer")
    if ans is not None:
        lam = ans.get("threshold") if isinstance(ans, dict) else ans
        if lam is not None and (not _finite(lam) or not 0 <= lam <= 1):
            raise _bad(source, "thresholds.answer.threshold", f"is {json.dumps(lam)[:30]}, not a finite number in "
                                                               "[0, 1] (a probability)")
        for f in ("precision", "delta"):
            v = ans.get(f) if isinstance(ans, dict) else None
            if v is not None and (not _finite(v) or not 0 <= v <= 1):
                raise _bad(source, f"thresholds.answer.{f}", f"is {json.dumps(v)[:30]}, not a number in [0, 1]")
    keep = th.get("keep_documents")
    if keep is not None:
        if not isinstance(keep, dict):
            raise _bad(source, "thresholds.keep_documents", "should be an object")
        t = keep.get("threshold")
        if t is not None and (not _finite(t) or not -1 <= t <= 1):
            raise _bad(source, "thresholds.keep_documents.threshold", f"is {json.dumps(t)[:30]}, not a finite cosine "
                                                                      "in [-1, 1]")
        kk = keep.get("k", 10)
        if isinstance(kk, bool) or not isinstance(kk, int) or kk < 1:
            raise _bad(source, "thresholds.keep_documents.k", f"is {json.dumps(kk)[:30]}, not an integer >= 1")


def load_calibrator(path) -> Calibrator:
    """Read a calibrator file; :class:`InputError` (one line) when absent, not JSON, a symbolic link out of its
    folder, or not a valid calibrator (:func:`check_calibrator_dict`: the field and what is wrong are named)."""
    p = Path(path)
    try:
        d = json.loads(read_inside(p, p.parent, text=True))  # never through a symbolic link out of its folder
    except FileNotFoundError:
        raise InputError(f"calibrator file {p} does not exist") from None
    except OutsideFolder:
        raise InputError(f"calibrator file {p} is a symbolic link out of its folder; normscope does not follow it "
                         "(give the file's own path)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{p} is not a readable JSON calibrator ({type(exc).__name__})") from None
    return Calibrator.from_dict(d, source=str(p))


def check_fingerprint(cal: Calibrator, fingerprint) -> None:
    """Refuse a calibrator fitted for another model (name, weights, pooling, backend or precision; torch fp32 and
    OpenVINO f32 count as one: :attr:`~normscope.table.ModelFingerprint.model_key`).

    Parameters
    ----------
    cal : Calibrator
    fingerprint : ModelFingerprint, dict, or an object with ``.fingerprint`` (a normscope Encoder)

    Raises
    ------
    InputError
        One line naming both models and their fingerprint keys.
    """
    fp = getattr(fingerprint, "fingerprint", fingerprint)
    if isinstance(fp, dict):
        fp = ModelFingerprint.from_dict(fp)
    if not isinstance(fp, ModelFingerprint):
        raise InputError("give the model as a normscope Encoder, a ModelFingerprint or its dict")
    mine = ModelFingerprint.from_dict(cal.model)
    if mine.model_key != fp.model_key:  # torch fp32 and OpenVINO f32 vectors are equal to 1e-6: either serves
        raise InputError(f"this calibrator was fitted for model '{mine.name}' (fingerprint {mine.key[:12]}), not for "
                         f"'{fp.name}' (fingerprint {fp.key[:12]}): fit one for this model with `normscope calibrate`")


def target_labels(run, qrels, query_ids: Sequence[str], target_k: int = 1) -> np.ndarray:
    """1 where a relevant document (judgement >= 1) is among the first ``target_k`` results, else 0; shape (n,)."""
    out = []
    for q in query_ids:
        docs = list((run.get(q) or {}))[:target_k]
        rel = qrels.get(q) or {}
        out.append(int(any(rel.get(d, 0) >= 1 for d in docs)))
    return np.asarray(out, dtype=np.int64)


def target_name(target_k: int) -> str:
    """``top1_relevant`` or ``any_relevant_at_K``."""
    return "top1_relevant" if target_k == 1 else f"any_relevant_at_{target_k}"


def fit_calibrator(features, y, *, signals: Sequence[str] = DEFAULT_SIGNALS, method: str = "isotonic", seed: int = 0,
                   model: dict, target_k: int = 1, fitted_on: dict | None = None) -> Calibrator:
    """Fit the map on the fitting queries (see the module docstring).

    Parameters
    ----------
    features : pandas.DataFrame
        :func:`normscope.retrieval.qpp.qpp_signals` of the fitting queries.
    y : array-like of shape (n,), 0/1
        :func:`target_labels` of those queries.
    signals : sequence of str, keyword-only
    method : {'isotonic', 'platt'}, keyword-only
    seed : int, keyword-only
        Of the 5-fold split inside ``CalibratedClassifierCV``.
    model : dict, keyword-only
        ``ModelFingerprint.to_dict()`` of the embeddings.
    target_k : int, keyword-only
    fitted_on : dict, keyword-only, optional

    Returns
    -------
    Calibrator

    Raises
    ------
    InputError
        Unknown method or signal, fewer than 10 queries, labels of one class, fewer than 2 of a class per fold.
    """
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if method not in METHODS:
        raise InputError(f"unknown method '{method}' (choose from {', '.join(METHODS)})")
    signals = list(dict.fromkeys(signals))
    unknown = [s for s in signals if s not in QPP_SPECS]
    if not signals or unknown:
        raise InputError(f"unknown signal(s) {', '.join(unknown) or '(none given)'} (choose from {', '.join(QPP_SIGNALS)})")
    y = np.asarray(y).ravel().astype(np.int64)
    X = features[signals].to_numpy(np.float64)
    if len(y) != len(X) or len(y) < 10:
        raise InputError(f"fitting a calibrator needs at least 10 queries with labels, got {len(y)}")
    counts = np.bincount(y, minlength=2)
    if counts.min() < 5:
        raise InputError(f"the fitting queries have {counts[1]} relevant and {counts[0]} non-relevant results; "
                         "a 5-fold calibration needs at least 5 of each")
    if not np.isfinite(X).all():
        raise InputError("non-finite signal values among the fitting queries")
    cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    clf = CalibratedClassifierCV(make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000)),
                                 method=METHODS[method], cv=cv, ensemble=False).fit(X, y)
    cc = clf.calibrated_classifiers_[0]
    scaler, lr = cc.estimator[0], cc.estimator[-1]
    c = cc.calibrators[0]
    mp = ({"x": _f(c.X_thresholds_), "y": _f(c.y_thresholds_)} if method == "isotonic"
          else {"a": float(c.a_), "b": float(c.b_)})
    depth = max([QPP_SPECS[s].k or 1 for s in signals] + [target_k, 2])
    return Calibrator(signals=signals, method=method, target=target_name(target_k), scaler_mean=_f(scaler.mean_),
                      scaler_scale=_f(scaler.scale_), coef=_f(lr.coef_[0]), intercept=float(lr.intercept_[0]), map=mp,
                      model=dict(model), depth=int(depth), fitted_on=dict(fitted_on or {}))


def ltt_threshold(p, y, *, precision: float = 0.8, delta: float = 0.1, grid: Sequence[float] = LAMBDA_GRID) -> dict:
    """Learn-then-Test threshold on P(relevant): "answer only when P >= lambda" with precision >= ``precision``.

    MAPIE ``BinaryClassificationController(risk="precision", target_level=precision, confidence_level=1 - delta,
    fwer_method="bonferroni_holm", list_predict_params=grid)``; the predicted positives are the answered
    queries (P >= lambda).

    Parameters
    ----------
    p : array-like of shape (n,)
        Calibrated P(relevant) of calibration queries the map was **not** fitted on.
    y : array-like of shape (n,), 0/1
    precision, delta : float, keyword-only
        Target precision 1 - alpha and error probability delta, each in (0, 1).
    grid : sequence of float, keyword-only
        Thresholds tested (fixed before the data).

    Returns
    -------
    dict
        ``threshold`` (the smallest valid lambda: most queries answered; None when none can be guaranteed),
        ``valid`` (every valid lambda), ``p_values`` (per grid value), ``precision``, ``delta``, ``n_calibration``,
        ``calibration_precision`` / ``calibration_coverage`` at the threshold, ``method``, ``assumption``.

    Raises
    ------
    InputError
        Levels outside (0, 1), lengths that differ.
    """
    import warnings

    from mapie.risk_control import BinaryClassificationController

    for name, v in (("precision", precision), ("delta", delta)):
        if not 0 < v < 1:
            raise InputError(f"{name} must lie in (0, 1), got {v}")
    p = np.asarray(p, dtype=np.float64).ravel()
    y = np.asarray(y).ravel().astype(np.int64)
    if p.shape != y.shape or p.size == 0:
        raise InputError(f"probabilities and labels differ in length or are empty: {p.size} vs {y.size}")
    grid = np.asarray(sorted(grid), dtype=np.float64)
    ctl = BinaryClassificationController(predict_function=lambda X: np.column_stack([1 - X[:, 0], X[:, 0]]),
                                         risk="precision", target_level=float(precision), confidence_level=1 - float(delta),
                                         list_predict_params=grid, fwer_method="bonferroni_holm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no threshold controls the risk": reported as threshold None
        ctl.calibrate(p[:, None], y)
    valid = sorted(float(v) for v in np.atleast_1d(ctl.valid_predict_params))
    lam = valid[0] if valid else None
    out = {"threshold": lam, "valid": valid, "grid": grid.tolist(),
           "p_values": [float(v) for v in np.asarray(ctl.p_values).ravel()],
           "precision": float(precision), "delta": float(delta), "n_calibration": int(p.size),
           "method": "Learn-then-Test (Angelopoulos et al. 2021) with MAPIE BinaryClassificationController: risk "
                     "precision, Hoeffding-Bentkus p-values, Bonferroni-Holm over the grid",
           "assumption": "calibration and future queries exchangeable (i.i.d. from one distribution; same model, corpus "
                         "and run); the map was fitted on other queries",
           "statement": (f"with probability >= {1 - delta:g} over the calibration queries, answering only when "
                         f"P(relevant) >= {lam:g} has precision >= {precision:g} on future exchangeable queries"
                         if lam is not None else
                         f"no threshold on the grid guarantees precision >= {precision:g} at 1 - delta = {1 - delta:g} "
                         f"with {p.size} calibration queries")}
    out.update(answer_stats(p, y, lam, prefix="calibration_") if lam is not None else
               {"calibration_precision": None, "calibration_coverage": None})
    return out


def answer_stats(p, y, threshold: float, *, prefix: str = "", n_boot: int = 0, seed: int = 0) -> dict:
    """Precision and coverage of "answer only when P(relevant) >= threshold".

    Returns
    -------
    dict
        ``{prefix}precision`` (relevant among answered queries; None when none is answered), ``{prefix}coverage``
        (answered / all), ``{prefix}n_answered``; with ``n_boot`` > 0 also ``{prefix}precision_ci`` and
        ``{prefix}coverage_ci`` (percentile bootstrap over queries).
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    y = np.asarray(y).ravel().astype(np.float64)
    a = p >= threshold
    out = {f"{prefix}precision": float(y[a].mean()) if a.any() else None, f"{prefix}coverage": float(a.mean()),
           f"{prefix}n_answered": int(a.sum())}
    if n_boot:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(p), size=(n_boot, len(p)))
        A, Y = a[idx], y[idx]
        na = A.sum(axis=1)
        prec = (A * Y).sum(axis=1)[na > 0] / na[na > 0]
        cov = A.mean(axis=1)
        out[f"{prefix}precision_ci"] = ([float(np.quantile(prec, 0.025)), float(np.quantile(prec, 0.975))]
                                        if len(prec) >= 0.9 * n_boot else None)
        out[f"{prefix}coverage_ci"] = [float(np.quantile(cov, 0.025)), float(np.quantile(cov, 0.975))]
    return out


def _doc_arrays(run, qrels, query_ids, k):
    S = np.full((len(query_ids), k), np.nan)
    R = np.zeros((len(query_ids), k))
    for i, q in enumerate(query_ids):
        rel = qrels.get(q) or {}
        for j, (d, s) in enumerate(list((run.get(q) or {}).items())[:k]):
            S[i, j] = s
            R[i, j] = float(rel.get(d, 0) >= 1)
    return S, R


def keep_stats(run, qrels, query_ids: Sequence[str], threshold: float, *, k: int = 10, n_boot: int = 0,
               seed: int = 0) -> dict:
    """Precision and coverage of "keep the top-k documents whose score >= threshold".

    Returns
    -------
    dict
        ``precision`` (relevant kept / kept over all queries, micro; None when nothing is kept), ``coverage``
        (queries keeping at least one document / all), ``recall`` (relevant kept / relevant in the top k),
        ``kept_per_query``; with ``n_boot`` the CIs of precision and coverage (bootstrap over queries).
    """
    S, R = _doc_arrays(run, qrels, query_ids, k)
    keep = np.nan_to_num(S, nan=-np.inf) >= threshold
    kq, rq = keep.sum(axis=1), (keep * R).sum(axis=1)
    out = {"threshold": float(threshold), "k": int(k), "precision": float(rq.sum() / kq.sum()) if kq.sum() else None,
           "coverage": float((kq > 0).mean()), "recall": float(rq.sum() / R.sum()) if R.sum() else None,
           "kept_per_query": float(kq.mean())}
    if n_boot:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(kq), size=(n_boot, len(kq)))
        K, Rr = kq[idx].sum(axis=1), rq[idx].sum(axis=1)
        prec = Rr[K > 0] / K[K > 0]
        cov = (kq[idx] > 0).mean(axis=1)
        out["precision_ci"] = [float(np.quantile(prec, 0.025)), float(np.quantile(prec, 0.975))] if len(prec) >= 0.9 * n_boot else None
        out["coverage_ci"] = [float(np.quantile(cov, 0.025)), float(np.quantile(cov, 0.975))]
    return out


def score_threshold(run, qrels, query_ids: Sequence[str], *, precision: float = 0.8, k: int = 10,
                    grid: Sequence[float] = SCORE_GRID) -> dict:
    """The smallest cosine threshold on ``grid`` whose micro precision over the top-k documents of these queries
    reaches ``precision`` (measured; no distribution-free guarantee, see the module docstring).

    Returns
    -------
    dict
        ``threshold`` (None when no grid value reaches the target), ``precision`` (target), ``k``,
        ``n_queries``, ``calibration`` (:func:`keep_stats` at the threshold), ``guarantee`` (None) and ``why``.
    """
    S, R = _doc_arrays(run, qrels, query_ids, k)
    chosen = None
    for t in sorted(grid):
        keep = np.nan_to_num(S, nan=-np.inf) >= t
        if keep.sum() and (keep * R).sum() / keep.sum() >= precision:
            chosen = float(t)
            break
    return {"threshold": chosen, "precision": float(precision), "k": int(k), "n_queries": len(query_ids),
            "calibration": keep_stats(run, qrels, query_ids, chosen, k=k) if chosen is not None else None,
            "guarantee": None,
            "why": "measured on the calibration queries only: documents of one query share it and are not exchangeable "
                   "units, so no per-document finite-sample guarantee is claimed"}


def apply_to_run(cal: Calibrator, run, *, fingerprint, query_ids: Sequence[str] | None = None, query_texts=None,
                 query_norms=None, doc_ids=None, doc_norms=None, corpus_score=None, n_docs: int | None = None):
    """P(relevant), the answer decision and the kept documents of every query of a ranked cosine run.

    Parameters
    ----------
    cal : Calibrator
    run : dict of {qid: {docid: score}}
        Cosine scores, inner dicts in rank order, at least ``cal.depth`` results per query (fewer only when
        the corpus has fewer documents, ``n_docs``).
    fingerprint : Encoder, ModelFingerprint or dict, keyword-only
        The model that embedded queries and documents; a calibrator fitted for another is refused.
    query_ids : sequence of str, keyword-only, optional
        Row order (default: the run's).
    query_texts, query_norms, doc_ids, doc_norms, corpus_score : keyword-only, optional
        What the calibrator's signals need (:data:`normscope.retrieval.qpp.QPP_SPECS` ``needs``).
    n_docs : int, keyword-only, optional
        Corpus size (a run shorter than ``cal.depth`` is accepted when it holds the whole corpus).

    Returns
    -------
    pandas.DataFrame
        One row per query: ``query_id``, the signals, ``p_relevant``, ``answer`` (P >= the Learn-then-Test
        threshold; False for every query when the calibrator has none: abstain), ``kept`` (the document ids whose cosine reaches the
        document threshold, among the top ``keep_documents.k``; None when it has none).

    Raises
    ------
    InputError
        Another model's calibrator, a signal whose input is missing, a run shorter than the signals need.
    """
    check_fingerprint(cal, fingerprint)
    qids = list(run) if query_ids is None else [str(q) for q in query_ids]
    need = cal.depth if n_docs is None else min(cal.depth, int(n_docs))
    short = next((q for q in qids if len(run.get(q) or {}) < need), None)
    if short is not None:
        raise InputError(f"query '{short}' has {len(run.get(short) or {})} results; this calibrator's signals "
                         f"({', '.join(cal.signals)}) use the top {cal.depth}: search with top_k >= {cal.depth}")
    feats = qpp_signals(run, query_ids=qids, query_texts=query_texts, query_norms=query_norms, doc_ids=doc_ids,
                        doc_norms=doc_norms, corpus_score=corpus_score, signals=cal.signals)
    p = cal.predict_proba(feats)
    lam = (cal.thresholds.get("answer") or {}).get("threshold")
    kd = cal.thresholds.get("keep_documents") or {}
    t, k = kd.get("threshold"), kd.get("k", 10)
    feats["p_relevant"] = p
    feats["answer"] = [lam is not None and bool(x >= lam) for x in p]
    feats["kept"] = ([[d for d, s in list(run[q].items())[:k] if s >= t] for q in qids] if t is not None else None)
    return feats
