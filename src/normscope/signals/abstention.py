"""Does the raw norm flag unanswerable inputs? TreeCut and RuleTaker from normscope's own generators, length-matched.

``normscope correlate --signal treecut`` / ``--signal ruletaker``: ``n`` generated items, half answerable
and half unanswerable (:func:`normscope.signals.treecut.generate_treecut`,
:func:`normscope.signals.ruletaker.generate_ruletaker`), embedded as text. An unanswerable TreeCut
problem is one equation shorter than an answerable one of the same knobs, so a pooled comparison
of norms measures length as much as answerability (issue 39: AUROC of the token count 0.05-0.18).
Three figures, side by side:

- **pooled**: AUROC of the norm for "unanswerable" (P(norm of an unanswerable item > norm of an
  answerable one), ties 1/2; Mann-Whitney p), beside the AUROC of the token count (the confound);
- **length-partial**: partial Spearman rho(unanswerable (0/1), norm | tokens) with a bootstrap CI;
- **length-matched** (decides the row): answerable and unanswerable items paired at exactly equal
  token count (:func:`normscope.stats_designs.length_matched_pairs`), the share of pairs in which the
  unanswerable item has the larger norm with a Wilson CI and the exact sign test, and the matched-pairs
  rank-biserial correlation r_rb = 2 share - 1 (Kerby 2014) with the Wilson bounds mapped the same way.

The generated sets stand in for the paper's benchmarks, written from their papers' descriptions;
they are not the paper's data, and the paper states no protocol or figure for its abstention use:
the rows are exploratory.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from normscope._format import noun, plural
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import InputError
from normscope.requests import Embedding, Resampling
from normscope.signals.claims import abstention_claim
from normscope.signals.labels import model_name
from normscope.signals.ruletaker import generate_ruletaker
from normscope.signals.treecut import generate_treecut
from normscope.table import require_raw_norms

__all__ = ["BENCHMARKS", "AbstentionResult", "run_abstention", "abstention_stats", "DEFAULT_N_ABSTENTION"]

#: The generated benchmarks and what each stands in for.
BENCHMARKS = {"treecut": "TreeCut-style math word problems (normscope's generator after Ouyang 2025, arXiv 2502.13442)",
              "ruletaker": "RuleTaker-style theories, open-world labels (normscope's generator after Clark et al. 2020)"}
#: Default number of generated items (half answerable).
DEFAULT_N_ABSTENTION = 1000


def abstention_stats(norm, tokens, unanswerable, *, ids=None, n_boot: int = 2000, seed: int = 0,
                     level: float = 0.95) -> dict:
    """Pooled, length-partial and length-matched figures of the norm for unanswerable items.

    Parameters
    ----------
    norm : array_like of float, shape (n,)
        Raw norms.
    tokens : array_like of int, shape (n,)
        Token counts the model saw (or words for a model without a tokenizer).
    unanswerable : array_like of bool, shape (n,)
    ids : sequence of str, optional
        Unique ids (the matched pairs follow them, not positions).
    n_boot, seed, level
        Bootstrap of the partial rho; the seed also orders the pairing.

    Returns
    -------
    dict
        ``n_answerable``, ``n_unanswerable``; ``auroc_norm`` with ``auroc_norm_p`` (Mann-Whitney),
        ``auroc_tokens``; ``partial_rho``, ``partial_ci``, ``partial_n``; the matched figures of
        :func:`normscope.stats_designs.matched_comparison` (``matched_share``, ``matched_ci``, ``matched_p``,
        ``n_pairs``, ``n_ties``, ``n_unmatched_a`` = answerable, ``n_unmatched_b`` = unanswerable) and
        ``r_rb``, ``r_rb_ci``; ``mean_tokens_answerable`` / ``_unanswerable``.

    Raises
    ------
    InputError
        Arrays of different lengths; fewer than 2 items in a group.
    """
    from normscope.stats import partial_spearman  # deferred: scipy; this module is read when the CLI starts a command
    from normscope.stats_designs import length_matched_pairs, matched_comparison  # deferred: scipy, as above

    norm = np.asarray(norm, dtype=np.float64).ravel()
    tok = np.asarray(tokens, dtype=np.float64).ravel()
    u = np.asarray(unanswerable, dtype=bool).ravel()
    if not (norm.size == tok.size == u.size):
        raise InputError(f"norm, tokens and unanswerable differ in length: {norm.size}, {tok.size}, {u.size}")
    if u.sum() < 2 or (~u).sum() < 2:
        raise InputError(f"need at least 2 answerable and 2 unanswerable items, got {(~u).sum()} and {u.sum()}")
    ids = [str(i) for i in range(norm.size)] if ids is None else [str(i) for i in ids]
    ia, ib = np.flatnonzero(~u), np.flatnonzero(u)
    pairs = length_matched_pairs(tok[ia], tok[ib], ids_a=[ids[i] for i in ia], ids_b=[ids[i] for i in ib], seed=seed)
    out = matched_comparison(norm[ia], norm[ib], pairs, level=level)
    out["auroc_norm"], out["auroc_norm_p"] = out.pop("pooled_share"), out.pop("pooled_p")
    ta, tb = tok[ia], tok[ib]
    out["auroc_tokens"] = float((tb[:, None] > ta[None, :]).mean() + 0.5 * (tb[:, None] == ta[None, :]).mean())
    part = partial_spearman(u.astype(np.float64), norm, tok, n_boot=n_boot, n_perm=0, seed=seed, ci=level,
                            control_names=["tokens"])
    out.update(partial_rho=part.rho, partial_ci=list(part.ci), partial_n=part.n, n_answerable=int(ia.size),
               n_unanswerable=int(ib.size), mean_tokens_answerable=float(ta.mean()),
               mean_tokens_unanswerable=float(tb.mean()), r_rb=None, r_rb_ci=None)
    if out["matched_share"] is not None:
        out["r_rb"] = 2 * out["matched_share"] - 1
        out["r_rb_ci"] = [2 * out["matched_ci"][0] - 1, 2 * out["matched_ci"][1] - 1]
    return out


@dataclasses.dataclass
class AbstentionResult:
    """The result of :func:`run_abstention` (``to_dict()`` is ``normscope correlate --signal treecut|ruletaker --json``).

    Attributes
    ----------
    signal : {"treecut", "ruletaker"}
    model, dataset : str
    stats : dict
        :func:`abstention_stats` over every item.
    strata : list of dict
        The same per configuration (TreeCut: ``num_vars``; RuleTaker: none).
    length_unit : str
    seed, n_items, n_junk, n_truncated : int
    notes : list of str
    claims : list of dict
        The row ``abstention_<signal>``.
    items : pandas.DataFrame
        One row per item: ``id``, ``item``, ``unanswerable``, ``norm``, ``tokens``, the generator's labels.
    """

    signal: str
    model: str
    dataset: str
    stats: dict
    length_unit: str
    seed: int
    n_items: int
    n_junk: int
    n_truncated: int
    notes: list
    items: pd.DataFrame
    claims: list = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready summary (without the per-item table)."""
        return {"signal": self.signal, "model": self.model, "dataset": self.dataset, "stats": self.stats,
                "length_unit": self.length_unit, "seed": self.seed, "n_items": self.n_items, "n_junk": self.n_junk,
                "n_truncated": self.n_truncated, "notes": list(self.notes), "claims": list(self.claims)}


def _generate(benchmark: str, n: int, seed: int) -> pd.DataFrame:
    if benchmark == "treecut":
        ps = generate_treecut(n, seed=seed)
        return pd.DataFrame({"id": [p.id for p in ps], "item": [p.text for p in ps],
                             "unanswerable": [not p.answerable for p in ps], "num_vars": [p.num_vars for p in ps],
                             "ans_depth": [p.ans_depth for p in ps], "cut_depth": [p.cut_depth for p in ps]})
    if benchmark == "ruletaker":
        xs = generate_ruletaker(n, seed=seed)
        return pd.DataFrame({"id": [x.id for x in xs], "item": [x.text for x in xs],
                             "unanswerable": [not x.answerable for x in xs], "label": [x.label for x in xs],
                             "depth": [x.depth if x.depth is not None else -1 for x in xs]})
    raise InputError(f"unknown benchmark {benchmark!r}; choose from {', '.join(BENCHMARKS)}")


_EMBEDDING = Embedding()
_RESAMPLING = Resampling(n_boot=2000, n_perm=0)


def run_abstention(benchmark: str, *, n: int = DEFAULT_N_ABSTENTION, embedding: Embedding = _EMBEDDING,
                   resampling: Resampling = _RESAMPLING, encoder=None,
                   progress: bool = False) -> AbstentionResult:
    """Generate ``n`` items of ``benchmark``, embed them, and compare the norms of unanswerable and answerable ones.

    Parameters
    ----------
    benchmark : {"treecut", "ruletaker"}
    n : int
        Items generated (>= 20; half unanswerable), fixed by ``resampling.seed``.
    embedding : Embedding
        Model, device, precision, runtime, batch size, junk handling.
    resampling : Resampling
        ``n_boot`` of the partial rho; ``seed`` seeds the generator, the pairing and the bootstrap.
    encoder : Encoder, optional
    progress : bool

    Returns
    -------
    AbstentionResult

    Raises
    ------
    InputError
        Unknown benchmark, ``n < 20``, already-normalised vectors, junk with ``junk="error"``.
    """
    if n < 20:
        raise InputError(f"--n-items must be >= 20 for an abstention row, got {n}")
    seed = int(resampling.seed)
    df = _generate(benchmark, n, seed)
    e = embedding
    model = e.model or DEFAULT_MODEL
    if encoder is None:
        encoder = load_encoder(model, device=e.device, precision=e.precision, runtime=e.runtime)
    table = embed_texts(df["item"].tolist(), df["id"].tolist(), encoder=encoder, batch_size=e.batch_size,
                        progress=progress, junk=e.junk, what=f"{benchmark} items")
    norm = table.norms.astype(np.float64)
    require_raw_norms(norm, f"correlate --signal {benchmark}")
    notes = []
    pos = {i: k for k, i in enumerate(table.ids)}
    kept = df[df["id"].isin(pos)].copy()
    kept["norm"] = [norm[pos[i]] for i in kept["id"]]
    if table.tokens is not None:
        kept["tokens"] = [int(table.tokens[pos[i]]) for i in kept["id"]]
        unit = "tokens the model saw (after truncation, special tokens included)"
    else:
        kept["tokens"] = [len(t.split()) for t in kept["item"]]
        unit = "words (the model has no tokenizer)"
        notes.append("the model has no tokenizer: items are matched on their word count")
    if len(kept) < len(df):
        notes.append(f"{plural(len(df) - len(kept), 'junk item')} left out")
    if table.n_truncated:
        notes.append(f"{plural(table.n_truncated, 'item')} {noun(table.n_truncated, 'was', 'were')} cut at the model's maximum "
                     "sequence length: their token "
                     "count is the truncated one")
    kept = kept.sort_values("id", kind="stable")  # id order: the figures do not depend on the input order
    st = abstention_stats(kept["norm"].to_numpy(), kept["tokens"].to_numpy(), kept["unanswerable"].to_numpy(),
                          ids=kept["id"].tolist(), n_boot=resampling.n_boot, seed=seed, level=resampling.level)
    res = AbstentionResult(signal=benchmark, model=model_name(encoder, model),
                           dataset=f"{BENCHMARKS[benchmark]}, n = {n}, seed {seed}", stats=st, length_unit=unit,
                           seed=seed, n_items=n, n_junk=len(df) - len(kept), n_truncated=int(table.n_truncated or 0),
                           notes=notes, items=kept.reset_index(drop=True))
    res.claims = [abstention_claim(res.to_dict())]
    return res
