"""The saved calibrator: :class:`Calibrator` (its numbers and :meth:`~Calibrator.predict_proba`), its JSON file
format (:data:`FORMAT`, :data:`VERSION`), the schema check of a file (:func:`check_calibrator_dict`),
:func:`load_calibrator` and the model check :func:`check_fingerprint`.

Fitted by :func:`normscope.extensions.calibrator.fit_calibrator` and applied by
:func:`normscope.extensions.calibrator.apply_to_run`; every name here is also importable from
:mod:`normscope.extensions.calibrator` (see its docstring for the map, the guarantee and the thresholds).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from normscope._format import noun
from normscope._io import OutsideFolder, read_inside, write_json
from normscope.errors import InputError
from normscope.retrieval.qpp import QPP_SIGNALS, QPP_SPECS
from normscope.table import ModelFingerprint

__all__ = ["FORMAT", "VERSION", "METHODS", "Calibrator", "load_calibrator", "check_calibrator_dict",
           "check_fingerprint"]

FORMAT = "normscope-calibrator"
VERSION = 1
#: ``--method`` -> scikit-learn's ``CalibratedClassifierCV(method=)``.
METHODS = {"isotonic": "isotonic", "platt": "sigmoid"}


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
        Learn-then-Test and document thresholds (see :func:`~normscope.extensions.calibrator.ltt_threshold`,
        :func:`~normscope.extensions.calibrator.score_threshold`).
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
                raise InputError(f"the calibrator needs {noun(len(missing), 'signal')} {', '.join(missing)}")
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
