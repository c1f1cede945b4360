"""Sizes of ``normscope report``: how much of each dataset every stage uses, and the two presets."""

from __future__ import annotations

import dataclasses

__all__ = ["Sizes", "QUICK", "FULL"]


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Subset sizes of every stage (stated on the page). ``None`` means the stage command's default.

    Attributes
    ----------
    words : int
        Norm distribution: top-N alphabetic English words of wordfreq.
    probe_items, probe_batches, probe_batch_size : int or None
        Probes: P probe inputs, K virtual SGD batches of B pairs each (None B: the probe's default,
        64). The full default P = 500, K = 16 is the smallest design whose headline signs are
        stable on MiniLM by the criterion of docs/probe.md.
    lab_steps, lab_snapshots, lab_probe_batches : int or None
        Training lab (free table, SGD): training steps, snapshot states S, virtual batches K per state.
    transformer_design : {"report", "quick", "full"}
        Transformer lab: the size of the decisive design (:data:`normscope.lab.DESIGNS`: ``report``
        about a minute of CPU, ``quick``, ``full`` about an hour on 2 cores); the page also shows the
        stored full design's result.
    signal_items : int or None
        Semantic signals: items per signal (None: ``normscope correlate``'s defaults: frequency 5,000,
        specificity 2,000, concreteness 5,000, uncertainty all 3,113 ChaosNLI pairs).
    design_items : int or None
        The length-matched designs beside the signals: the cap on generated TreeCut-style and RuleTaker-style
        items, on the nouns of the WordNet chains and on the SciFact titles of the shuffle design (None:
        ``signal_items`` when given, else 1,000 items, 300 nouns and 2,000 titles;
        :data:`normscope.report.stages.designs.DESIGN_N`).
    retrieval_docs, retrieval_queries : int or None
        Retrieval: corpus subset (relevant documents always kept) and test-query subset (None: all).
    n_boot, n_perm : int
        Bootstrap resamples of every confidence interval (norm-aware similarity: of the SimLex-999
        pairs); permutations of every p-value.
    """

    words: int = 5000
    # probes: the smallest (P, K) whose headline signs are stable on MiniLM (criterion in docs/probe.md)
    probe_items: int | None = 500
    probe_batches: int | None = 16
    probe_batch_size: int | None = None
    lab_steps: int | None = None
    lab_snapshots: int | None = None
    lab_probe_batches: int | None = None
    transformer_design: str = "report"
    signal_items: int | None = None
    design_items: int | None = None
    retrieval_docs: int | None = None
    retrieval_queries: int | None = None
    n_boot: int = 2000
    n_perm: int = 2000

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


#: Default sizes of ``normscope report`` (and ``make run``).
FULL = Sizes()
#: ``--quick``: whole run under 5 minutes on 2 CPU cores.
QUICK = Sizes(
    words=2000,
    probe_items=100,  # below the sign-stable sizes (docs/probe.md): the page says so
    probe_batches=4,
    probe_batch_size=None,
    lab_steps=None,
    lab_snapshots=None,
    lab_probe_batches=None,
    transformer_design="quick",
    signal_items=800,
    design_items=200,
    retrieval_docs=600,
    retrieval_queries=100,
    n_boot=500,
    n_perm=500,
)
