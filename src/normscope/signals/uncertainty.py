"""Human uncertainty: entropy of the human label distribution of each item.

Sources
-------
- ChaosNLI v1.0 (Nie, Zhou & Bansal, EMNLP 2020): 100 new annotator labels (entailment /
  neutral / contradiction) for each of 1,514 SNLI-dev and 1,599 MNLI-matched-dev items.
- CIFAR-10H (Peterson, Battleday, Griffiths & Russakovsky, ICCV 2019): 47-63 human labels for each
  of the 10,000 CIFAR-10 test images (labels only; the images are not shipped).

Entropy is the plug-in (maximum-likelihood) Shannon entropy of the label proportions, in
**bits** (base 2), the unit of ChaosNLI's own ``entropy`` field: 0 = unanimous,
``log2(3) = 1.585`` = uniform over three NLI labels, ``log2(10) = 3.32`` for CIFAR-10.

Pair embedding: a premise/hypothesis pair is embedded as the single string
``"premise [SEP] hypothesis"`` (:func:`pair_text`). For BERT-family tokenizers (MiniLM included)
the literal ``[SEP]`` is recognised as the separator special token, so the token ids equal the
tokenizer's pair encoding ``[CLS] premise [SEP] hypothesis [SEP]``; the token-type ids are all 0
(a sentence encoder's single-text path), which is what sentence-transformers itself does for text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._format import noun
from normscope.data import data_path
from normscope.errors import DataError, InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "label_entropy",
    "pair_text",
    "load_chaosnli",
    "chaosnli_entropy",
    "load_cifar10h",
    "cifar10h_entropy",
    "CHAOSNLI_SUBSETS",
    "CIFAR10_CLASSES",
]

CHAOSNLI_SUBSETS = {"snli": "chaosNLI_snli.jsonl", "mnli_m": "chaosNLI_mnli_m.jsonl"}
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
_NLI_LABELS = ("e", "n", "c")


def label_entropy(counts, *, base: float = 2.0) -> np.ndarray:
    """Shannon entropy of each row's label distribution (plug-in estimate).

    ``H = -sum_k p_k log_base p_k`` with ``p_k = counts_k / sum(counts)`` and ``0 log 0 = 0``.

    Parameters
    ----------
    counts : array_like of shape (n, K)
        Non-negative label counts (or probabilities) per item.
    base : float, keyword-only
        Logarithm base: 2 for bits (default), ``e`` for nats.

    Returns
    -------
    ndarray of shape (n,), float64; NaN for rows with zero total.

    Raises
    ------
    InputError
        If ``counts`` is not 2-D or has negative / non-finite entries.
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2:
        raise InputError(f"label counts must be a 2-D array (n, K), got shape {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise InputError("label counts must be finite and non-negative")
    tot = c.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = c / tot
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    h = -terms.sum(axis=1) / np.log(base)
    h[tot[:, 0] <= 0] = np.nan
    return h


def pair_text(premise: str, hypothesis: str, *, sep: str = "[SEP]") -> str:
    """The single string ``f"{premise} {sep} {hypothesis}"`` used to embed an NLI pair."""
    return f"{str(premise).strip()} {sep} {str(hypothesis).strip()}"


def _chaos_dir(path) -> Path:
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise InputError(f"ChaosNLI path not found: {p}")
        return p

    return data_path("chaosnli")


def load_chaosnli(
    path: str | os.PathLike | None = None, *, subsets: Sequence[str] = ("snli", "mnli_m"), sep: str = "[SEP]"
) -> pd.DataFrame:
    """ChaosNLI items with their 100 human labels.

    Parameters
    ----------
    path : path-like, optional
        A ChaosNLI v1.0 directory (holding ``chaosNLI_snli.jsonl`` / ``chaosNLI_mnli_m.jsonl``) or
        one such ``.jsonl`` file. Default ``<shared data>/chaosnli``.
    subsets : sequence of {"snli", "mnli_m"}, keyword-only
        Subsets read from a directory (alphaNLI is not supported: its items are four-part
        stories, not premise/hypothesis pairs).
    sep : str, keyword-only
        Separator of :func:`pair_text`.

    Returns
    -------
    pandas.DataFrame
        Columns ``uid`` (str), ``subset`` (str), ``premise``, ``hypothesis``, ``text``
        (:func:`pair_text`), ``n_e``, ``n_n``, ``n_c`` (int label counts), ``n_labels`` (int,
        100 in v1.0), ``entropy_bits`` (float64, :func:`label_entropy` of the counts),
        ``entropy_file`` (float64, the file's own base-2 ``entropy`` field), ``majority_label``.

    Raises
    ------
    InputError
        Unknown subset, missing file, or a row without ``example.premise``/``label_count``.
    DataError
        A line that is not valid JSON.
    """
    import pandas as pd  # deferred: the CLI starts without pandas (benchmarks/cli_startup.py)

    p = _chaos_dir(path)
    if p.is_file():
        files = [("file", p)]
    else:
        bad = [s for s in subsets if s not in CHAOSNLI_SUBSETS]
        if bad:
            raise InputError(f"unknown ChaosNLI {noun(len(bad), 'subset')} {bad}; choose from {sorted(CHAOSNLI_SUBSETS)}")
        files = [(s, p / CHAOSNLI_SUBSETS[s]) for s in subsets]
    rows = []
    for subset, f in files:
        if not f.is_file():
            raise InputError(f"ChaosNLI file not found: {f}")
        with open(f, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"{f}:{lineno}: not JSON ({exc})") from exc
                ex = r.get("example", {})
                counts = r.get("label_count")
                if "premise" not in ex or "hypothesis" not in ex or counts is None or len(counts) != 3:
                    raise InputError(f"{f}:{lineno}: not a ChaosNLI SNLI/MNLI row (needs example.premise, "
                                     "example.hypothesis and a 3-way label_count)")
                rows.append(dict(
                    uid=str(r.get("uid", ex.get("uid", lineno))), subset=subset,
                    premise=ex["premise"], hypothesis=ex["hypothesis"],
                    text=pair_text(ex["premise"], ex["hypothesis"], sep=sep),
                    n_e=int(counts[0]), n_n=int(counts[1]), n_c=int(counts[2]),
                    entropy_file=float(r["entropy"]) if r.get("entropy") is not None else np.nan,
                    majority_label=r.get("majority_label"),
                ))
    df = pd.DataFrame(rows)
    if df.empty:
        raise InputError(f"no ChaosNLI rows in {p}")
    cnt = df[["n_e", "n_n", "n_c"]].to_numpy()
    df["n_labels"] = cnt.sum(axis=1)
    df["entropy_bits"] = label_entropy(cnt, base=2.0)
    return df


def chaosnli_entropy(path: str | os.PathLike | None = None, *, subsets: Sequence[str] = ("snli", "mnli_m")) -> np.ndarray:
    """Label entropy (bits) of every ChaosNLI item, in :func:`load_chaosnli` row order.

    Returns
    -------
    ndarray of shape (n,), float64, in [0, log2 3].
    """
    return load_chaosnli(path, subsets=subsets)["entropy_bits"].to_numpy()


def load_cifar10h(path: str | os.PathLike | None = None) -> np.ndarray:
    """CIFAR-10H human label counts, shape (10000, 10), rows in CIFAR-10 test-set order.

    Parameters
    ----------
    path : path-like, optional
        ``cifar10h-counts.npy`` (int counts) or ``cifar10h-probs.npy`` (probabilities), or a
        directory holding ``cifar10h-counts.npy``. Default ``<shared data>/cifar10h``.

    Returns
    -------
    ndarray of shape (n, 10), float64. Columns in CIFAR-10 class order (:data:`CIFAR10_CLASSES`).

    Raises
    ------
    InputError
        Missing file or wrong shape.
    """
    if path is None:
        path = data_path("cifar10h")
    p = Path(path)
    if p.is_dir():
        p = p / "cifar10h-counts.npy"
    if not p.is_file():
        raise InputError(f"CIFAR-10H label file not found: {p}")
    try:
        a = np.load(p, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read CIFAR-10H labels {p}: {exc}") from exc
    if a.ndim != 2 or a.shape[1] != len(CIFAR10_CLASSES):
        raise InputError(f"CIFAR-10H labels must have shape (n, 10), got {a.shape} in {p}")
    return a.astype(np.float64)


def cifar10h_entropy(path: str | os.PathLike | None = None, *, base: float = 2.0) -> np.ndarray:
    """Entropy (bits by default) of the CIFAR-10H human label distribution of each test image.

    Returns
    -------
    ndarray of shape (10000,), float64, in [0, log2 10]; row i is CIFAR-10 test image i.
    """
    return label_entropy(load_cifar10h(path), base=base)
