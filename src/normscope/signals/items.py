"""The items of ``normscope correlate``: default item sets, the user's covariate file and strata column.

:func:`default_item_set` builds the item set of each signal (wordfreq words, WordNet nouns,
Brysbaert words, ChaosNLI pairs with their source as the stratum); :func:`read_covariate_file`
reads the user's covariate CSV; :func:`read_item_column` reads one extra column (e.g. the source of
each item, for ``--by``) of a CSV or JSONL items file, aligned with
:func:`normscope.inputs.read_items`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dataclasses
import json
from pathlib import Path

import numpy as np

from normscope.datasets import wordfreq_words
from normscope.errors import InputError
from normscope.inputs import csv_records, read_text, split_lines

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ItemSet", "default_item_set", "read_covariate_file", "read_item_column", "sample_indices", "DEFAULT_N"]

#: Default number of items per signal (None: all).
DEFAULT_N = {"specificity": 2000, "frequency": 5000, "concreteness": 5000, "uncertainty": None}


@dataclasses.dataclass
class ItemSet:
    """Items to embed, with what is known about them before embedding.

    Attributes
    ----------
    ids : list of str, length n
        Unique item ids (the word itself for word lists, ChaosNLI ``uid`` for pairs).
    texts : list of str, length n
        The strings embedded.
    dataset : str
        What the items are, in words (printed and written to JSON).
    covariate : ndarray of shape (n,), float64, or None
        Values known up front (ChaosNLI entropy, a user file); None when computed from the texts.
    control_texts : list of str or None
        Texts read by the frequency and word-count controls when they differ from ``texts``
        (ChaosNLI: ``"premise hypothesis"``, without the separator token).
    strata : ndarray of shape (n,), object, or None
        Source of each item (ChaosNLI subset, or the user's ``--by`` column).
    extras : dict of str -> ndarray (n,)
        Further per-item columns (user control columns, ChaosNLI ``uid``).
    pair_format : str or None
        How a premise/hypothesis pair was turned into one string.
    """

    ids: list[str]
    texts: list[str]
    dataset: str
    covariate: np.ndarray | None = None
    control_texts: list[str] | None = None
    strata: np.ndarray | None = None
    extras: dict = dataclasses.field(default_factory=dict)
    pair_format: str | None = None


def sample_indices(n_total: int, n: int | None, seed: int) -> np.ndarray:
    """Sorted positions of a seeded sample of ``n`` of ``n_total`` items without replacement (all when ``n`` is None or >= n_total)."""
    if n is None or n >= n_total:
        return np.arange(n_total)
    return np.sort(np.random.default_rng(seed).choice(n_total, size=n, replace=False))


def default_item_set(signal: str, *, encoder, n: int | None, seed: int, wordnet=None) -> ItemSet:
    """The default items of ``signal`` (see :func:`normscope.signals.run_correlate`).

    Parameters
    ----------
    signal : {"specificity", "frequency", "concreteness", "uncertainty"}
    encoder : Encoder
        Its tokenizer's separator token joins ChaosNLI premise and hypothesis.
    n : int or None
        Number of items; None gives :data:`DEFAULT_N`, 0 all (concreteness, uncertainty).
    seed : int
        Seeds the concreteness and ChaosNLI samples.
    wordnet : path-like, optional
        WordNet location (:func:`normscope.signals.load_wordnet`).

    Returns
    -------
    ItemSet
        ChaosNLI items carry their subset (``snli`` / ``mnli_m``) as ``strata``.

    Raises
    ------
    InputError
        Missing data (WordNet, Brysbaert file, ChaosNLI).
    """
    from normscope import signals as sg  # deferred: normscope.signals imports this module (an import cycle)

    n_eff = DEFAULT_N[signal] if n is None else n
    if signal == "specificity":
        items = sg.wordnet_nouns(n_eff or 2000, wordnet=sg.load_wordnet(wordnet))
        return ItemSet(ids=list(items), texts=list(items),
                       dataset=f"wordfreq top-{len(items)} English words that are mainly WordNet 3.0 nouns")
    if signal == "frequency":
        items = wordfreq_words(n_eff or 5000)
        return ItemSet(ids=list(items), texts=list(items), dataset=f"wordfreq top-{len(items)} alphabetic English words")
    if signal == "concreteness":
        items = sg.concreteness_words(n=n_eff or None, seed=seed)
        sampled = f" sampled, seed {seed}" if n_eff else ""
        return ItemSet(ids=list(items), texts=list(items),
                       dataset=f"Brysbaert et al. 2014 single words ({len(items)}{sampled})")
    chaos = sg.load_chaosnli()
    tok = getattr(encoder, "hf_tokenizer", None)
    sep = getattr(tok, "sep_token", None)
    sep = "[SEP]" if sep is None else sep  # GloVe's word lookup has none: "" (the two sentences' words together)
    chaos = chaos.iloc[sample_indices(len(chaos), n_eff or None, seed)].reset_index(drop=True)
    texts = [sg.pair_text(p, h, sep=sep) for p, h in zip(chaos.premise, chaos.hypothesis)]
    return ItemSet(
        ids=chaos["uid"].astype(str).tolist(), texts=texts,
        dataset=f"ChaosNLI v1.0 SNLI+MNLI-m ({len(texts)} pairs, 100 labels each; text 'premise {sep} hypothesis')",
        covariate=chaos["entropy_bits"].to_numpy(dtype=np.float64),
        control_texts=[f"{p} {h}" for p, h in zip(chaos.premise, chaos.hypothesis)],
        strata=chaos["subset"].to_numpy(dtype=object),
        extras={"uid": chaos["uid"].astype(str).to_numpy()},
        pair_format=(f"'premise {sep} hypothesis' as one string ({sep} = the tokenizer's separator token, so ids "
                     "equal the pair encoding; token-type ids all 0)"),
    )


def read_covariate_file(path: str | Path, signal: str) -> pd.DataFrame:
    """A user covariate table: CSV with an ``item`` column and a ``value`` (or ``<signal>``) column.

    Other columns may be named as controls (``--control``, numeric) or as the strata (``--by``).

    Returns
    -------
    pandas.DataFrame with columns ``item`` (str), ``value`` (float64) and the extra columns.

    Raises
    ------
    InputError
        Missing file, unparsable CSV, or missing ``item`` / value column (found columns named).
    """
    import pandas as pd  # deferred: the CLI starts without pandas (benchmarks/cli_startup.py)

    p = Path(path)
    if not p.is_file():
        raise InputError(f"covariate file not found: {p}")
    try:
        df = pd.read_csv(p, keep_default_na=False, na_values=[""], dtype={"item": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot parse covariate file {p}: {exc}") from exc
    df.columns = [str(c).strip() for c in df.columns]
    value_col = "value" if "value" in df.columns else (signal if signal in df.columns else None)
    if "item" not in df.columns or value_col is None:
        raise InputError(
            f"covariate file {p} needs columns 'item' and 'value' (or '{signal}'); found {list(df.columns)}"
        )
    out = df.rename(columns={value_col: "value"})
    out["item"] = out["item"].astype(str)
    try:
        out["value"] = pd.to_numeric(out["value"], errors="raise").astype(np.float64)
    except (ValueError, TypeError) as exc:
        raise InputError(f"covariate file {p}: column '{value_col}' is not numeric ({exc})") from exc
    if out.empty:
        raise InputError(f"covariate file {p} has no rows")
    return out


def read_item_column(path: str | Path, column: str, n_items: int) -> np.ndarray:
    """One column of a CSV or JSONL items file, in the item order of :func:`normscope.inputs.read_items`.

    Parameters
    ----------
    path : path-like
        ``.csv`` (header row) or ``.jsonl`` items file (already read by ``read_items``).
    column : str
        Column (CSV) or field (JSONL) name, e.g. ``source``.
    n_items : int
        Number of items ``read_items`` found (blank rows and lines skipped alike here).

    Returns
    -------
    ndarray of shape (n_items,), object (str labels).

    Raises
    ------
    InputError
        A text file (no columns), a missing column / field, an empty label, or a row count that
        differs from ``n_items``.
    """
    p = Path(path)
    name = p.name.lower().removesuffix(".gz")
    if name.endswith(".csv"):
        records = [row for _, row in csv_records(read_text(p), p)]  # the reader of normscope.inputs.read_items
        found = records[0] if records else []
        # rows with no text in any field are skipped, as normscope.inputs.read_items does
        rows = [r for r in records[1:] if any(v.strip() for v in r)]
        k = found.index(column) if column in found else None
        values = [r[k] if k < len(r) else None for r in rows] if k is not None else None
    elif name.endswith((".jsonl", ".ndjson")):
        rows = [json.loads(line) for line in split_lines(read_text(p)) if line.strip()]
        found = sorted({k for r in rows for k in r})
        values = [r.get(column) for r in rows] if any(column in r for r in rows) else None
    else:
        raise InputError(f"--by {column}: the items file {p} has no columns; give a .csv or .jsonl items file "
                         "with that column, or put it in --covariate-file")
    if values is None:
        raise InputError(f"--by {column}: no such column in {p} (found {found})")
    if len(values) != n_items:
        raise InputError(f"--by {column}: {p} has {len(values)} rows but {n_items} items")
    empty = [i for i, v in enumerate(values) if v is None or not str(v).strip()]
    if empty:
        raise InputError(f"--by {column}: {len(empty):,} {'item has' if len(empty) == 1 else 'items have'} no {column} "
                         f"(e.g. item {empty[0]})")
    return np.asarray([str(v).strip() for v in values], dtype=object)
