"""Measured thresholds per offline model, shipped with normscope: "what cosine threshold for MiniLM?".

Each file ``normscope/extensions/thresholds/<model>.json`` (:data:`THRESHOLD_DIR`) answers the question for one
model on one dataset (BEIR SciFact): the map score -> P(relevant) and the thresholds for a target precision,
measured on held-out queries. ``normscope calibrate --model M`` (no ``--dataset``) prints it;
``python scripts/thresholds.py`` regenerates every file (:func:`measure_thresholds`).

**What is measured** (:func:`threshold_file`, from one :func:`~normscope.extensions.calibrate.run_calibrate` with the
single signal ``top1_score``): the label is "the top-1 document of the cosine run is relevant" (qrels score >= 1);
SciFact's ``train`` queries are drawn (seeded) into fit and calibration halves, its ``test`` queries are held out.

- ``map``: P(top-1 relevant) as a function of the top-1 cosine ``s``: the calibrator's isotonic map
  (``CalibratedClassifierCV(method="isotonic")``, 5-fold cross-fitted, :mod:`normscope.extensions.calibrator`) on
  the fit queries, written as knots ``(score, p)`` in cosine units (linear between knots, constant outside).
- ``answer``: "answer a query only when its top-1 cosine >= t". ``measured``: the smallest ``t`` on the cosine
  grid (:data:`~normscope.extensions.calibrator.SCORE_GRID`, step 0.005) whose precision over the calibration
  queries reaches the target (no guarantee); ``guaranteed``: the Learn-then-Test threshold lambda on P(relevant)
  (precision >= target with probability >= 1 - delta over the draw of the calibration queries, for queries
  exchangeable with them), and the cosine where the map reaches lambda; None when no lambda on the grid passes.
  For each, on the held-out queries: answered and correct counts, precision and coverage with percentile
  bootstrap CIs (queries resampled).
- ``keep_documents``: "keep the top-10 documents whose cosine >= t", the smallest grid ``t`` with micro precision
  >= the target on the calibration queries (measured), and its held-out precision and coverage.
- ``held_out``: every held-out query's top-1 cosine and label, so the counts can be recomputed
  (:func:`check_threshold_file`).

**Caveat** (in every file): the numbers are SciFact's (scientific claims against abstracts); a threshold depends
on the corpus, the query style and what counts as relevant, so on other data it is a starting point to re-measure
with ``normscope calibrate --dataset``.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._io import write_json
from normscope.errors import InputError

__all__ = ["FORMAT", "VERSION", "THRESHOLD_DIR", "CAVEAT", "threshold_file", "top1_threshold", "score_map",
           "score_at_p", "shipped_thresholds", "load_thresholds", "check_threshold_file", "measure_thresholds",
           "file_name", "describe_thresholds"]

FORMAT = "normscope-thresholds"
VERSION = 1
#: Where the shipped files live (package data).
THRESHOLD_DIR = Path(__file__).parent / "thresholds"
CAVEAT = ("dataset-specific: measured on BEIR SciFact (scientific claims against paper abstracts, the top-1 judged "
          "relevant when its qrels score >= 1); on another corpus or query style the same cosine means another "
          "precision, so re-measure with `normscope calibrate --dataset YOURS --signal top1_score`")


def file_name(model: str) -> str:
    """The file name of a model's thresholds: its bundle key (``all-MiniLM-L6-v2``), else the name with ``/`` and
    ``:`` replaced by ``-`` (``glove:6B-50d`` -> ``glove-6B-50d``), plus ``.json``."""
    from normscope.encoders.bundled import bundle_for

    b = bundle_for(model)
    name = b.key if b is not None else str(model).rsplit("sentence-transformers/", 1)[-1]
    return name.replace("/", "-").replace(":", "-") + ".json"


def top1_threshold(scores, labels, *, precision: float = 0.8, grid: Sequence[float] | None = None) -> float | None:
    """The smallest ``t`` on ``grid`` such that the queries with top-1 cosine ``>= t`` reach ``precision``.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Each query's top-1 cosine.
    labels : array-like of shape (n,), 0/1
        Whether that top-1 document is relevant.
    precision : float
        Target precision (relevant among answered queries).
    grid : sequence of float, optional
        Default :data:`normscope.extensions.calibrator.SCORE_GRID` (-1 to 1 by 0.005).

    Returns
    -------
    float or None
        None when no grid value reaches the target (or nothing is answered at any).
    """
    from normscope.extensions.calibrator import SCORE_GRID  # deferred: printing a shipped file stays light

    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=np.float64).ravel()
    if s.shape != y.shape:
        raise InputError(f"{s.size} scores but {y.size} labels")
    for t in sorted(SCORE_GRID if grid is None else grid):
        a = s >= t
        if a.any() and y[a].mean() >= precision:
            return float(t)
    return None


def score_map(cal) -> dict:
    """A one-signal (``top1_score``) isotonic calibrator's map in cosine units: ``{"score": [...], "p": [...]}``.

    The calibrator's knots are on the decision value ``d = coef (s - mean) / scale + intercept``; with ``coef > 0``
    the knot ``d_j`` is the cosine ``s_j = mean + scale (d_j - intercept) / coef`` and P is unchanged, so
    ``np.interp(s, score, p)`` equals :meth:`Calibrator.predict_proba` (clipped outside the knots, as there).

    Raises
    ------
    InputError
        Another signal set, a Platt map, or a coefficient <= 0 (a map that does not rise with the score).
    """
    if list(cal.signals) != ["top1_score"] or "x" not in cal.map:
        raise InputError("a score map needs an isotonic calibrator on the single signal top1_score")
    coef = float(cal.coef[0])
    if not coef > 0:
        raise InputError(f"the calibrator's coefficient on top1_score is {coef:g}; the map does not rise with the score")
    d = np.asarray(cal.map["x"], dtype=np.float64)
    s = float(cal.scaler_mean[0]) + float(cal.scaler_scale[0]) * (d - float(cal.intercept)) / coef
    return {"score": [float(v) for v in s], "p": [float(v) for v in cal.map["y"]]}


def score_at_p(m: dict, lam: float) -> float | None:
    """The smallest cosine where the map reaches ``lam`` (linear between knots); None when it never does.

    ``s >= score_at_p(m, lam)`` and ``np.interp(s, m["score"], m["p"]) >= lam`` select the same queries (the map
    is non-decreasing), up to floating-point rounding at the boundary."""
    x, p = np.asarray(m["score"], dtype=np.float64), np.asarray(m["p"], dtype=np.float64)
    j = int(np.argmax(p >= lam)) if (p >= lam).any() else None
    if j is None:
        return None
    if j == 0:
        return -1.0  # constant at p[0] >= lam below the first knot: every cosine is answered
    return float(x[j - 1] + (lam - p[j - 1]) / (p[j] - p[j - 1]) * (x[j] - x[j - 1]))


def _held_stats(scores, y, t: float | None, *, n_boot: int, seed: int) -> dict | None:
    """Answered / correct counts, precision and coverage with bootstrap CIs of "answer when top-1 cosine >= t"."""
    from normscope.extensions.calibrator import answer_stats  # deferred: printing a shipped file stays light

    if t is None:
        return None
    st = answer_stats(scores, y, t, n_boot=n_boot, seed=seed)
    a = np.asarray(scores, dtype=np.float64) >= t
    return {"n": int(len(a)), "answered": int(a.sum()), "correct": int(np.asarray(y)[a].sum()),
            "precision": st["precision"], "precision_ci": st.get("precision_ci"), "coverage": st["coverage"],
            "coverage_ci": st.get("coverage_ci")}


def threshold_file(res, *, command: str, date: str | None = None, n_boot: int = 1000, seed: int = 0) -> dict:
    """The thresholds file of one :class:`~normscope.extensions.calibrate.CalibrateResult` (see the module docstring).

    Parameters
    ----------
    res : CalibrateResult
        A fit (``mode == "fit"``) with the single signal ``top1_score`` and the isotonic method.
    command : str
        The command that regenerates the file (recorded).
    date : str, optional
        ISO date of the measurement (default: today, UTC).
    n_boot, seed : int
        Bootstrap resamples and seed of the held-out CIs.

    Returns
    -------
    dict
        Strict JSON (``format``, ``version``, ``model``, ``data``, ``command``, ``date``, ``normscope``, ``target``,
        ``precision_target``, ``map``, ``answer``, ``keep_documents``, ``fit``, ``held_out``, ``caveat``).

    Raises
    ------
    InputError
        An applied calibrator, another signal set or method.
    """
    from normscope import __version__
    from normscope.encoders.bundled import bundle_for
    from normscope.extensions.calibrator import Calibrator  # deferred: printing a shipped file stays light

    if res.mode != "fit" or list(res.signals) != ["top1_score"] or res.method != "isotonic":
        raise InputError("a thresholds file is measured by a fit on the single signal top1_score, isotonic")
    cal = Calibrator(**{k: v for k, v in res.calibrator.items() if k not in ("format", "version")})
    m = score_map(cal)
    items = res.items
    calq = items[items["part"] == "calibration"]
    held = items[items["part"] == "held-out"].sort_values("query_id")
    s_cal, y_cal = calq["top1_score"].to_numpy(np.float64), calq["label"].to_numpy(np.int64)
    s_h, y_h = held["top1_score"].to_numpy(np.float64), held["label"].to_numpy(np.int64)
    target = float(cal.thresholds["answer"]["precision"])
    t_measured = top1_threshold(s_cal, y_cal, precision=target)
    ltt = cal.thresholds["answer"]
    lam = ltt.get("threshold")
    t_guaranteed = score_at_p(m, lam) if lam is not None else None
    kd = cal.thresholds.get("keep_documents") or {}
    hk = res.heldout.keep_documents
    fp = res.fingerprint
    b = bundle_for(fp["name"])
    fitted = cal.fitted_on
    return {
        "format": FORMAT, "version": VERSION,
        "model": {"name": fp["name"], "aliases": sorted(b.aliases) if b is not None else [fp["name"]],
                  "revision": fp.get("revision"), "model_key": _model_key(fp)},
        "data": {"dataset": res.dataset_name, "source": "BEIR SciFact (Wadden et al., EMNLP 2020; BEIR, Thakur et al. "
                 "2021): 5,183 abstracts, train and test queries with qrels", "fit_split": fitted.get("split"),
                 "n_fit": fitted.get("n_fit"), "n_calibration": fitted.get("n_calibration"),
                 "held_out_split": res.split, "n_held_out": int(len(held)), "seed": int(res.seed)},
        "command": command, "date": date or datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "normscope": __version__,
        "target": res.target, "precision_target": target,
        "map": {**m, "signal": "top1_score", "method": "isotonic (CalibratedClassifierCV, 5-fold cross-fitted) on the "
                "fit queries; linear between knots, constant outside", "held_out_auroc": res.heldout.auroc,
                "held_out_auroc_ci": _pair(res.heldout.auroc_ci), "held_out_ece": res.heldout.ece},
        "answer": {
            "rule": "answer a query only when its top-1 cosine >= score_threshold",
            "measured": {"score_threshold": t_measured, "how": "smallest cosine on a 0.005 grid whose precision over "
                         "the calibration queries reaches the target (no guarantee)",
                         "held_out": _held_stats(s_h, y_h, t_measured, n_boot=n_boot, seed=seed)},
            "guaranteed": {"p_threshold": lam, "score_threshold": t_guaranteed, "delta": ltt.get("delta"),
                           "statement": ltt.get("statement"), "assumption": ltt.get("assumption"),
                           "held_out": _held_stats(s_h, y_h, t_guaranteed, n_boot=n_boot, seed=seed)},
        },
        "keep_documents": {"rule": f"keep the top-{kd.get('k')} documents whose cosine >= score_threshold",
                           "k": kd.get("k"), "score_threshold": kd.get("threshold"), "how": kd.get("why"),
                           "held_out": None if hk is None else {
                               "precision": hk.precision, "precision_ci": _pair(hk.precision_ci),
                               "coverage": hk.coverage, "coverage_ci": _pair(hk.coverage_ci)}},
        "held_out": {"query_id": [str(q) for q in held["query_id"]], "top1_score": [float(v) for v in s_h],
                     "top1_relevant": [int(v) for v in y_h]},
        "caveat": CAVEAT,
    }


def _pair(ci) -> list | None:
    return None if ci is None else [float(ci[0]), float(ci[1])]


def _model_key(fp: dict) -> str | None:
    from normscope.table import ModelFingerprint

    try:
        return ModelFingerprint(**{k: v for k, v in fp.items() if k != "key"}).model_key
    except TypeError:
        return fp.get("key")


def shipped_thresholds(directory: Path | None = None) -> dict[str, Path]:
    """Model name -> file, for every thresholds file in ``directory`` (default :data:`THRESHOLD_DIR`)."""
    out = {}
    for p in sorted(Path(directory or THRESHOLD_DIR).glob("*.json")):
        d = json.loads(p.read_text())
        out[d["model"]["name"]] = p
    return out


def load_thresholds(model: str, directory: Path | None = None) -> dict:
    """The shipped thresholds file of ``model`` (any alias), checked (:func:`check_threshold_file`).

    Raises
    ------
    InputError
        No file for this model (the message lists the models that have one).
    """
    files = shipped_thresholds(directory)
    for name, p in files.items():
        d = json.loads(p.read_text())
        if str(model) == name or str(model) in d["model"].get("aliases", []):
            check_threshold_file(d, source=p.name)
            return d
    raise InputError(f"no measured thresholds shipped for model '{model}' (shipped: {', '.join(sorted(files)) or 'none'}); "
                     "measure them with `normscope calibrate --dataset scifact --model MODEL --signal top1_score`")


def _bad(source: str, what: str) -> InputError:
    return InputError(f"{source}: {what}")


def check_threshold_file(d: dict, source: str = "thresholds") -> None:
    """Schema and internal consistency of a thresholds file.

    Checks the format and version, the map (knots non-decreasing in score and in p, p in [0, 1]) and, for each
    answer threshold, that its held-out counts, precision and coverage are those recomputed from the stored
    held-out top-1 cosines and labels, and that the CIs contain their estimates.

    Raises
    ------
    InputError
        The first inconsistency, named.
    """
    if d.get("format") != FORMAT or d.get("version") != VERSION:
        raise _bad(source, f"not a {FORMAT} file of version {VERSION}")
    for k in ("model", "data", "command", "date", "map", "answer", "keep_documents", "held_out", "caveat"):
        if k not in d:
            raise _bad(source, f"missing '{k}'")
    x, p = np.asarray(d["map"]["score"], dtype=np.float64), np.asarray(d["map"]["p"], dtype=np.float64)
    if len(x) != len(p) or len(x) < 1 or (np.diff(x) < 0).any() or (np.diff(p) < 0).any() or p.min() < 0 or p.max() > 1:
        raise _bad(source, "the map's knots must be non-decreasing in score and in p, with p in [0, 1]")
    h = d["held_out"]
    s, y = np.asarray(h["top1_score"], dtype=np.float64), np.asarray(h["top1_relevant"], dtype=np.int64)
    if len(s) != len(y) or len(s) != len(h["query_id"]) or len(s) != d["data"]["n_held_out"]:
        raise _bad(source, "held-out scores, labels and ids differ in length")
    for name in ("measured", "guaranteed"):
        e = d["answer"][name]
        t, st = e.get("score_threshold"), e.get("held_out")
        if t is None:
            if st is not None:
                raise _bad(source, f"answer.{name} has held-out numbers but no threshold")
            continue
        a = s >= t
        want = {"n": len(s), "answered": int(a.sum()), "correct": int(y[a].sum())}
        got = {k: st[k] for k in want}
        if got != want:
            raise _bad(source, f"answer.{name}: stored counts {got} but the held-out scores give {want}")
        if (st["answered"] and not np.isclose(st["precision"], st["correct"] / st["answered"])) or \
                not np.isclose(st["coverage"], st["answered"] / st["n"]):
            raise _bad(source, f"answer.{name}: precision or coverage differs from its counts")
        for k in ("precision", "coverage"):
            ci = st.get(f"{k}_ci")
            if ci is not None and not ci[0] - 1e-12 <= st[k] <= ci[1] + 1e-12:
                raise _bad(source, f"answer.{name}: {k} {st[k]} outside its CI {ci}")


def measure_thresholds(model: str, *, dataset: str = "scifact", n_boot: int = 1000, seed: int = 0,
                       precision_target: float = 0.8, delta: float = 0.1, command: str | None = None,
                       progress: bool = False, encoder=None) -> dict:
    """Run ``calibrate`` (signal ``top1_score``, isotonic) for ``model`` on ``dataset`` and return its thresholds file.

    Parameters
    ----------
    model : str
        Model name (an offline bundle: ``all-MiniLM-L6-v2``, ``paraphrase-MiniLM-L3-v2``, ``all-mpnet-base-v2``,
        ``glove:6B-50d``).
    dataset : str
        A BEIR directory or ``scifact`` (docs/data.md).
    n_boot, seed, precision_target, delta, command, progress, encoder
        As :class:`~normscope.requests.retrieval.CalibrateRequest`; ``command`` is recorded (default:
        ``python scripts/thresholds.py --model MODEL``).

    Returns
    -------
    dict
        :func:`threshold_file`.
    """
    from normscope.extensions.calibrate import run_calibrate
    from normscope.requests import Embedding, Resampling
    from normscope.requests.retrieval import CalibrateRequest

    req = CalibrateRequest(dataset=str(dataset), signals=("top1_score",), method="isotonic",
                           precision_target=precision_target, delta=delta, embedding=Embedding(model=model),
                           resampling=Resampling(n_boot=n_boot, seed=seed))
    res = run_calibrate(req, encoder=encoder, progress=progress)
    return threshold_file(res, command=command or f"python scripts/thresholds.py --model {model}", n_boot=n_boot,
                          seed=seed)


def write_thresholds(d: dict, directory: Path | None = None) -> Path:
    """Write a thresholds file (atomic) as ``<directory>/<file_name(model)>``; returns its path."""
    check_threshold_file(d)
    p = Path(directory or THRESHOLD_DIR) / file_name(d["model"]["name"])
    p.parent.mkdir(parents=True, exist_ok=True)
    write_json(d, p)
    return p


def _f(x, spec: str = ".3f") -> str:
    return "-" if x is None else format(float(x), spec)


def _ci(ci) -> str:
    return "" if not ci else f" [{_f(ci[0])}, {_f(ci[1])}]"


def describe_thresholds(d: dict) -> list[str]:
    """The lines ``normscope calibrate --model M`` prints for a thresholds file."""
    dt, ans = d["data"], d["answer"]
    out = [f"{d['model']['name']} on {dt['dataset']} ({dt['n_fit']} fit + {dt['n_calibration']} calibration "
           f"'{dt['fit_split']}' queries; {dt['n_held_out']} held-out '{dt['held_out_split']}' queries; measured "
           f"{d['date']})",
           f"P({d['target']}) from the top-1 cosine: {d['map']['method']}; held-out AUROC "
           f"{_f(d['map']['held_out_auroc'])}{_ci(d['map']['held_out_auroc_ci'])}"]
    for name, e in (("measured", ans["measured"]), ("guaranteed", ans["guaranteed"])):
        t, st = e.get("score_threshold"), e.get("held_out")
        label = f"answer when top-1 cosine >= t for precision >= {d['precision_target']:g} ({name}"
        label += f", Learn-then-Test lambda = {_f(e['p_threshold'], '.2f')}, 1 - delta = {1 - e['delta']:g})" \
            if name == "guaranteed" and e.get("p_threshold") is not None else ")"
        if t is None:
            why = e.get("statement") or "no cosine on the grid reaches the target on the calibration queries"
            out.append(f"{label}: none ({why})")
            continue
        out.append(f"{label}: t = {t:.3f}; held-out precision {_f(st['precision'])}{_ci(st['precision_ci'])} "
                   f"({st['correct']}/{st['answered']}), coverage {_f(st['coverage'])}{_ci(st['coverage_ci'])} "
                   f"({st['answered']}/{st['n']} queries answered)")
    kd = d["keep_documents"]
    hk = kd.get("held_out") or {}
    if kd.get("score_threshold") is None:
        out.append(f"keep the top-{kd.get('k')} documents whose cosine >= t for micro precision >= "
                   f"{d['precision_target']:g} (measured): none (no cosine on the grid reaches it on the calibration "
                   "queries)")
    else:
        out.append(f"{kd['rule'].replace('score_threshold', _f(kd['score_threshold']))} (measured): held-out precision "
                   f"{_f(hk.get('precision'))}{_ci(hk.get('precision_ci'))}, queries keeping one or more "
                   f"{_f(hk.get('coverage'))}{_ci(hk.get('coverage_ci'))}")
    out.append(f"caveat: {d['caveat']}")
    out.append(f"regenerate: {d['command']}")
    return out
