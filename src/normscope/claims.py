"""The paper's claims as data, and the verdict rules that judge them, written once.

Every claim of the paper behind normscope (docs/theory.md) is a :class:`Claim` in :data:`CLAIMS`: what it says,
the paper's figure quoted as the paper gives it, the claimed direction and the claimed **size**
(:class:`Size`: a range, a point with a declared tolerance, a bound, or none). The stage packages
build their own scorecard rows from their result dicts (``probes/claims.py``, ``lab/claims.py``,
``signals/claims.py``, ``similarity/claims.py``, ``retrieval/claims.py``) with :func:`claim_row`,
so ``normscope retrieval --json`` and ``normscope similarity --json`` carry the same rows as the
report.

Each row gets two verdicts and a headline:

- **direction** (:func:`direction_verdict`): ``reproduced`` when the 95 % CI excludes 0 on the
  claimed side (and a paired test given beside it agrees), ``refuted`` when it excludes 0 on the
  other side, ``inconclusive`` otherwise; a claim of an association without a stated direction is
  reproduced when the CI excludes 0 on either side.
- **size** (:func:`size_verdict`), against the claimed size: ``consistent`` (the CI meets the
  claimed range), ``smaller`` / ``larger`` (the CI lies wholly on the zero side of it / beyond it);
  for a bound ``<= b``: ``consistent`` when the whole CI is at most ``b``, ``larger`` when the whole
  CI exceeds it; ``undetermined`` otherwise or without a CI.
- **headline** (:func:`headline`, the rule :data:`HEADLINE_RULE`): a failed gate first (``not
  decided at this size`` / ``not testable here``); then ``refuted`` when the direction is refuted
  or the CI excludes the claimed size on the side that contradicts the claim (for a claimed
  effect: on the side of zero, **even if the CI includes 0**); ``reproduced`` when the direction
  is reproduced (or none is claimed) and the claimed size is not excluded; ``inconclusive``
  otherwise.

Two shared rules come before the headline rule: a **degenerate CI** (zero width: both ends equal, e.g. a
fitted parameter that changes no ranking, so a scorer is compared with itself) is never a decision, the row is
``not decided at this size`` with that reason; and a claim whose size is only "strong" is read against the
declared minimum :data:`STRONG_RHO`.

Every row has a **kind** (:data:`KINDS`): the paper's own claims (``paper``), checks of the derivation on a
design that meets the theorem's assumptions by construction (``construction``: the free-table lab) and
exploratory questions the paper leaves open (``exploratory``: the optimizers, never-used token rows,
human-rated pairs, the balance on a pretrained encoder). The headline counts each kind apart
(:func:`kind_counts`, :func:`counts_text`); only the paper's claims can be "reproduced" claims of the paper.

This is the interval reading of equivalence testing: a 95 % CI lying wholly outside the claimed
range rejects every value of the range at the 2.5 % level on that side, as the two one-sided tests
(TOST) do (Schuirmann 1987, J. Pharmacokinet. Biopharm. 15:657; Lakens 2017, Soc. Psychol.
Personal. Sci. 8:355). A result that excludes 0 but also the claimed size is therefore not a
reproduction of the claim as stated.

:func:`check_one_verdict_per_statistic` enforces that two rows resting on the same statistic
(the ``statistic`` key of a row) never carry different verdicts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

from normscope.values import Interval, Record

__all__ = [
    "KINDS",
    "KIND_TITLES",
    "STRONG_RHO",
    "kind_of",
    "kind_counts",
    "counts_text",
    "Size",
    "Claim",
    "ClaimRow",
    "Gate",
    "CLAIMS",
    "VERDICTS",
    "DIRECTION_VERDICTS",
    "SIZE_VERDICTS",
    "HEADLINE_RULE",
    "HEADLINE_RULE_SHORT",
    "GLOSSARY",
    "direction_verdict",
    "permutation_direction",
    "size_verdict",
    "headline",
    "judge",
    "claim_row",
    "degenerate_gate",
    "not_testable_row",
    "paper_scope_rows",
    "check_one_verdict_per_statistic",
    "fmt_value",
    "ceiling_gate",
]

#: Headline verdicts, in the order of the rule.
VERDICTS: tuple[str, ...] = ("reproduced", "refuted", "inconclusive", "not decided at this size", "not testable here")
#: Verdicts on the claimed direction.
DIRECTION_VERDICTS: tuple[str, ...] = ("reproduced", "refuted", "inconclusive", "no direction claimed", "not tested")
#: Verdicts on the claimed size.
SIZE_VERDICTS: tuple[str, ...] = ("consistent", "smaller", "larger", "undetermined", "no size claimed")

#: Kinds of scorecard rows, in the order the headline counts them.
KINDS: tuple[str, ...] = ("paper", "construction", "exploratory")
#: How the headline names each kind.
KIND_TITLES: dict[str, str] = {"paper": "paper's claims", "construction": "checks by construction",
                               "exploratory": "exploratory"}

#: The smallest |Spearman rho| read as a "strong" association. The paper calls the norm's associations
#: with specificity, frequency and human uncertainty "strong" and gives no figure, so a minimum is declared
#: once, before any run: 0.3, the lower edge of a "medium" correlation in Cohen's conventions (.10 small,
#: .30 medium, .50 large; Cohen 1988, *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed.,
#: section 3.2), the smallest value that no reader would call weak. A 95 % CI wholly inside (-0.3, +0.3)
#: excludes a strong association in the way :data:`HEADLINE_RULE` reads any claimed size (size verdict
#: ``smaller``, headline ``refuted``); one wholly beyond +-0.3 is ``consistent``.
STRONG_RHO = 0.3

#: The headline rule, as the page, the CLI and docs/report.md state it.
HEADLINE_RULE = (
    "Headline verdict: a row whose design cannot decide the claim (below the sign-stable size, a guard statistic "
    "saying the effect may be mechanical, a run shorter than the claim needs, a CI of zero width) is 'not decided at "
    "this size', and one whose data or model is absent, or that lies outside the claim's scope (an AdamW checkpoint "
    "and the SGD form), is 'not testable here'; otherwise 'refuted' when the 95% CI excludes 0 on the side "
    "opposite to the claim, or excludes the claimed size on the side that contradicts it (for a claimed effect: on "
    "the side of zero, even if the CI includes 0; for a bound: beyond it); 'reproduced' when the claimed direction is "
    "reproduced (or none is claimed) and the claimed size is not excluded; 'inconclusive' otherwise. A CI wholly "
    "outside the claimed range rejects that range as the two one-sided tests of equivalence testing do (Schuirmann "
    "1987; Lakens 2017). A 'strong' association is read as |rho| >= 0.3 (Cohen 1988's 'medium'). The headline "
    "counts the paper's claims, checks by construction and exploratory rows apart.")

#: The rule in one line (the CLI's scorecard footer; the full rule is :data:`HEADLINE_RULE`).
HEADLINE_RULE_SHORT = ("refuted: the 95% CI excludes 0 on the other side, or excludes the paper's size on the side of "
                       "zero (even if it includes 0); reproduced: the direction holds and the size is not excluded; not "
                       "decided / not testable: the run cannot decide, and the row says what would (docs/report.md)")

#: Terms of the scorecard explained for a newcomer (shown under the scorecard).
GLOSSARY: dict[str, str] = {
    "heat \u03a3\u00b2": "how strongly random minibatch gradients shake an embedding (its second moment, R\u00b2 "
                         "E||\u0394||\u00b2)",
    "drift D~": "the mean outward (positive) or inward (negative) radial step an embedding gets per training step",
    "R, R_eq": "R is an embedding's raw norm ||z||; R_eq is the norm at which heat and drift balance weight decay "
               "(Theorem 1, equation (E7) of docs/theory.md)",
    "q(x), c": "q is the decay rate an item would need for its measured heat and drift to balance (E9); Theorem 1 "
               "requires q(x) = c, one decay rate, for every item; with no known decay c is fitted as the median q",
    "R-free statistic": "a quantity with no R in its definition (the displacement E||a||\u00b2); heat = R\u00b2 "
                        "E||a||\u00b2 correlates with R by construction, the R-free part does not",
    "permutation null": "the same statistic after shuffling the R-free quantities across items, i.e. with no link "
                        "between an item's norm and its own training motion",
    "sign-stable design": "the smallest probe (P items, K batches) at which the signs of the headline correlations "
                          "did not change between resamples (docs/probe.md)",
    "relaxation time": "about 1/(2 \u03b7 \u03bb) steps: how long a norm needs to forget its start and reach its "
                       "equilibrium",
    "AUROC": "the chance that a random right result gets a higher confidence than a random wrong one (0.5 = chance)",
    "size": "consistent: the CI meets the claimed range; smaller / larger: the CI lies wholly below / above it "
            "(nearer to / farther from 0); undetermined: the CI cannot tell",
}


@dataclasses.dataclass(frozen=True)
class Size:
    """The size a claim states.

    Attributes
    ----------
    kind : {"range", "point", "at_most", "at_least", "strong", "none"}
        ``range``: the effect lies in ``[low, high]``; ``point``: ``value`` with a declared
        ``tolerance`` (stored as the range ``value +- tolerance``); ``at_most`` / ``at_least``: a
        bound (``high`` / ``low``); ``strong``: ``|effect| >= low`` (:data:`STRONG_RHO`), on the claimed
        side when the claim has one; ``none``: direction only.
    low, high : float or None
        The claimed region, in the unit of the row's statistic (a fraction for percentages).
    value, tolerance : float or None
        Of a point claim.
    percent : bool
        Display the numbers as percentages.
    basis : str
        Where the region comes from (the paper's figure; why this tolerance).
    """

    kind: str = "none"
    low: float | None = None
    high: float | None = None
    value: float | None = None
    tolerance: float | None = None
    percent: bool = False
    basis: str = ""

    @classmethod
    def range(cls, low: float, high: float, *, percent: bool = False, basis: str = "") -> "Size":
        """The effect lies in ``[low, high]``."""
        return cls("range", float(low), float(high), percent=percent, basis=basis)

    @classmethod
    def point(cls, value: float, tolerance: float, *, basis: str = "") -> "Size":
        """``value`` with a declared ``tolerance`` (the range ``value +- tolerance``)."""
        return cls("point", value - tolerance, value + tolerance, value=float(value), tolerance=float(tolerance),
                   basis=basis)

    @classmethod
    def at_most(cls, bound: float, *, percent: bool = False, basis: str = "") -> "Size":
        """The statistic is at most ``bound``."""
        return cls("at_most", None, float(bound), percent=percent, basis=basis)

    @classmethod
    def at_least(cls, bound: float, *, percent: bool = False, basis: str = "") -> "Size":
        """The statistic is at least ``bound``."""
        return cls("at_least", float(bound), None, percent=percent, basis=basis)

    @classmethod
    def strong(cls, minimum: float | None = None, *, basis: str = "") -> "Size":
        """A "strong" association: ``|effect| >= minimum`` (default :data:`STRONG_RHO`)."""
        m = STRONG_RHO if minimum is None else float(minimum)
        return cls("strong", m, None, basis=basis or (
            f"the paper calls it strong and gives no figure; declared minimum |\u03c1| >= {m:g} (Cohen 1988: .30 is "
            "the lower edge of a 'medium' correlation), stated before any run"))

    def fmt(self, x: float) -> str:
        """``x`` in this size's unit (``+1.2 %`` or ``0.38``)."""
        return f"{100 * x:+.2g} %" if self.percent else fmt_value(x)

    def text(self) -> str:
        """The claimed size in words (``"+1.2 to +2.3 %"``, ``"+0.38 +- 0.10"``, ``"at most 0.001"``)."""
        if self.kind == "range":
            if self.percent:
                return f"{100 * self.low:+.2g} to {100 * self.high:+.2g} %"
            return f"{fmt_value(self.low, sign=True)} to {fmt_value(self.high, sign=True)}"
        if self.kind == "point":
            return f"{fmt_value(self.value, sign=True)} \u00b1 {fmt_value(self.tolerance)}"
        if self.kind == "at_most":
            return f"at most {self.fmt(self.high)}"
        if self.kind == "at_least":
            return f"at least {self.fmt(self.low)}"
        if self.kind == "strong":
            return f"strong: |\u03c1| at least {fmt_value(self.low)}"
        return "no size claimed"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of the paper.

    Attributes
    ----------
    key : str
    claim : str
        What the paper claims, in plain words.
    paper : str
        The paper's figure as the paper gives it (no coefficient or model is added that the paper
        does not name).
    sign : int or None
        Claimed direction of the row's statistic: +1 / -1; 0 for an association the paper states
        without a direction; None when the claim has no direction to test.
    size : Size
    section : str
        The report section holding the evidence.
    size_needs_sgd : bool
        The size is predicted by the SGD form of Theorem 1 only: for a checkpoint trained with AdamW
        the size verdict is ``undetermined`` (docs/theory.md C3).
    how_to_test : str
        For a claim this repository cannot test offline: what would test it.
    kind : {"paper", "construction", "exploratory"}
        ``paper``: a claim the paper makes; ``construction``: a check of the derivation on a design that
        meets its assumptions by construction; ``exploratory``: a question the paper leaves open (never
        counted as a reproduced claim of the paper). See :data:`KINDS`.
    """

    key: str
    claim: str
    paper: str
    sign: int | None
    size: Size = Size()
    section: str = ""
    size_needs_sgd: bool = False
    how_to_test: str = ""
    kind: str = "paper"


_R = 0.10
_R_BASIS = ("the paper gives the figure without a CI; declared tolerance \u00b10.10 in r (a 'small' correlation, "
            "Cohen 1988), stated before any run")
_GAIN = Size.range(0.012, 0.023, percent=True, basis="the paper's range, relative to cosine")

#: The paper's claims, in scorecard order.
CLAIMS: dict[str, Claim] = {c.key: c for c in (
    Claim("theorem1_lab", "Theorem 1 holds in training: each norm settles at the equilibrium R_eq where heat and "
          "drift balance weight decay", "stationary norm = R_eq", None,
          Size.at_most(0.05, basis="mean |R_eq - R| / R within 5 %, the gate the theory's simulations set "
                       "(docs/theory.md section 7: about 3x the estimator's noise floor)"), "training_lab", kind="construction"),
    Claim("optimizer_momentum", "Open question: does the plain-SGD formula miss the norm under heavy-ball momentum?",
          "an open question (no claim, no figure)", None,
          Size.at_least(0.05, basis="the SGD formula misses the observed norm by more than the 5 % "
                        "gate (docs/theory.md C2)"), "training_lab", kind="exploratory"),
    Claim("optimizer_adamw", "Open question: does the plain-SGD formula miss the norm under AdamW?",
          "an open question (no claim, no figure)", None,
          Size.at_least(0.05, basis="the SGD formula misses the observed norm by more than the 5 % gate "
                        "(docs/theory.md C3)"), "training_lab", kind="exploratory"),
    Claim("theorem1_transformer", "Theorem 1 on a transformer: the decayed scale-invariant group \u03b8_D settles where "
          "(E2) predicts, with no fitted constant", "no figure", None,
          Size.at_most(0.05, basis="|s_pred / s_obs - 1| within 5 %, the free table's gate (docs/theory.md section 7): "
                       "\u03b8_D (the last LayerNorm's gain and bias) is exactly scale invariant, a free vector"),
          "transformer_lab"),
    Claim("theorem1_transformer_items", "Per-item output norms of a transformer settle at their per-item R_eq (the "
          "paper's application, outside the theorem's derivation)", "no figure", +1,
          Size.at_most(0.10, basis="declared tolerance, stated before the full run: 10 % in R is 40 % in the heat/decay "
                       "balance since R ~ (heat/c)^(1/4), twice the free table's gate (docs/theory.md section 7)"),
          "transformer_lab"),
    # kind "construction", as theorem1_lab: the noun vectors are free, so A1-A3 hold by construction; what is new is
    # real text (a frozen tower's glosses) as the source of ambiguity
    Claim("ambiguity_heat_lab", "Ambiguity \u2192 heat \u2192 norm on real text: free vectors of WordNet nouns trained "
          "against a frozen text tower's gloss embeddings settle at R_eq = (\u03a3\u00b2/2c)^(1/4), nouns with more "
          "senses running hotter", "no figure (Theorem 1 with D~ = 0; conflicting positives raise heat, "
          "docs/theory.md section 5)", None,
          Size.at_most(0.05, basis="mean |R_eq - R| / R within 5 %, the free table's gate (docs/theory.md section 7): "
                       "the noun vectors are free, so A1-A3 hold exactly"), "training_lab",
          how_to_test="normscope lab --encoder tower --size full (the bundled MiniLM as the frozen tower; about 2.5 "
                      "minutes of CPU; docs/lab.md); the report does not run it", kind="construction"),
    Claim("corr_norm_heat", "The norm rises with heat \u03a3\u00b2", "+0.38", +1, Size.point(0.38, _R, basis=_R_BASIS),
          "equilibrium_theory"),
    Claim("corr_norm_drift", "The norm falls with radial drift D~", "\u22120.58", -1, Size.point(-0.58, _R, basis=_R_BASIS),
          "equilibrium_theory"),
    Claim("req_predicts_norm", "Theorem 1 on a pretrained encoder: every item's implied decay q(x) is the same c, so "
          "R_eq = R", "no figure", +1,
          Size.at_most(0.20, basis="mean |q/c - 1| within 20 %: the 5 % gate on R is 20 % in the balance since "
                       "R ~ (heat/c)^(1/4) (docs/theory.md section 7)"), "equilibrium_theory", size_needs_sgd=True,
          kind="exploratory"),
    Claim("unused_rows_decay", "Theorem 1's mechanism: rows that get no gradient (never-used tokens) feel no heat, "
          "only decay, so their norms are smaller", "not in the paper (follows from Theorem 1: no heat, R_eq = 0)", -1, Size(),
          "token_table", kind="exploratory"),
    Claim("specificity", "The norm tracks concept specificity strongly", "a strong association; no direction or figure",
          0, Size.strong(), "semantic_signals"),
    Claim("frequency", "The norm tracks token frequency strongly", "a strong association; no direction or figure", 0,
          Size.strong(), "semantic_signals"),
    Claim("uncertainty", "The norm tracks human uncertainty strongly", "a strong association; no direction or figure",
          0, Size.strong(), "semantic_signals"),
    Claim("ambiguity", "Conflicting gradients give larger norms: words with more senses (ambiguous words) have "
          "larger norms", "the mechanism sentence 'conflicting gradients \u2192 larger norm'; no figure", +1, Size(),
          "semantic_signals",
          how_to_test="WordNet 3.0 (normscope data fetch wordnet): Spearman \u03c1(norm, number of noun senses) "
                      "controlling for Zipf frequency and length over WordNet nouns"),
    Claim("atypical_input_shuffle", "Exploratory: does a word-shuffled text (an atypical input, same words, same "
          "length) get a smaller norm than the text itself?", "not in the paper's stated claims (the reading 'smaller "
          "norm = unexpected input' of its abstention use; no figure)", -1, Size(), "semantic_signals",
          how_to_test="normscope correlate --signal shuffle (SciFact titles, or --items): the median relative norm "
                      "change of the shuffled copy with a bootstrap CI over pairs, the sign test beside it",
          kind="exploratory"),
    Claim("abstention_treecut", "Exploratory: does the raw norm flag unanswerable math word problems (TreeCut-style, "
          "one equation cut from the query's path) at equal length?", "not in the paper's stated claims (its "
          "abstention use on TreeCut names no protocol or figure)", 0, Size(), "semantic_signals",
          how_to_test="normscope correlate --signal treecut (normscope's own seeded generator): answerable and "
                      "unanswerable problems paired at equal token count, the rank-biserial r with a Wilson CI",
          kind="exploratory"),
    Claim("abstention_ruletaker", "Exploratory: does the raw norm flag unanswerable (Unknown) RuleTaker-style "
          "statements at equal length?", "not in the paper's stated claims (its abstention use on RuleTaker names no "
          "protocol or figure)", 0, Size(), "semantic_signals",
          how_to_test="normscope correlate --signal ruletaker (normscope's own seeded generator): True/False and "
                      "Unknown items paired at equal token count, the rank-biserial r with a Wilson CI",
          kind="exploratory"),
    Claim("similarity_gain", "Norm-aware similarity cos/(1 + \u03b1||z||) gains over cosine (retrieval)",
          "a gain, direction only (the paper's +1.2 to +2.3 % is for high-frequency words and low-quality samples: "
          "the rows below)", +1, Size(), "retrieval"),
    Claim("gain_high_frequency", "The gain lies on high-frequency words", "+1.2 to +2.3 %, on high-frequency words "
          "and low-quality samples", +1, _GAIN, "retrieval"),
    Claim("gain_low_quality", "The gain lies on low-quality samples", "+1.2 to +2.3 %, on high-frequency words and "
          "low-quality samples", +1, _GAIN, "retrieval",
          how_to_test="items with a quality label (e.g. degraded images, noisy or machine-translated text) and the "
                      "same stratified paired test as the high-frequency row; none of this run's datasets has one"),
    Claim("similarity_pairs", "Exploratory: does norm-aware similarity gain on human-rated pairs?",
          "not in the paper (its +1.2 to +2.3 % is for retrieval strata)", +1, Size(), "similarity", kind="exploratory"),
    Claim("mean_pooling", "Mean pooling shows similar trends to CLS pooling", "'similar trends', direction only", 0,
          Size(), "semantic_signals",
          how_to_test="a transformer whose weights load with both CLS and mean pooling (hf:<dir or hub id>): the "
                      "same words embedded twice and Spearman rho(norm, Zipf frequency) compared in sign "
                      "(normscope.signals.pooling)"),
    Claim("calibration_discrimination", "The norm is a free calibration signal: it tells right from wrong results",
          "no figure", +1, Size(), "calibration"),
    Claim("calibration_incremental", "The norm adds to what is already free (the top score, the margin)", "no figure",
          +1, Size(), "calibration",
          how_to_test="the cross-fitted comparison of a confidence model with and without the norm "
                      "(calibration_incremental of normscope retrieval --json)"),
    Claim("norm_confidence_nauc", "The norm is a free confidence signal on the field's abstention yardstick: "
          "abstaining by the query norm beats the best of MTEB's confidence functions (max, std, diff1) in nAUC of "
          "nDCG@10", "no figure (the paper's 'free calibration signal', read in MTEB's unit against the field's free "
          "confidences)", +1, Size(), "calibration",
          how_to_test="nAUC of nDCG@10 of the query norm and of MTEB's max/std/diff1 on the same run (abstention of "
                      "normscope retrieval --json)"),
    Claim("inference_cost", "Norm-aware scoring costs about 1/1000 of the model's inference", "1/1000", None,
          Size.at_most(1e-3, basis="the paper's figure, read as an upper bound on the cost ratio"), "retrieval"),
    Claim("paper_models", "The results hold on the paper's models", "CLIP ViT-B/32 and MiniLM-L12 (no model per "
          "figure)", None, Size(), "setup",
          how_to_test="normscope report --model hf-clip:openai/clip-vit-base-patch32 and --model "
                      "sentence-transformers/all-MiniLM-L12-v2 (each downloaded once from the Hugging Face hub)"),
    Claim("paper_benchmarks", "The results hold on the paper's benchmarks", "FEVEROUS, RuleTaker, TreeCut", None,
          Size(), "setup",
          how_to_test="none of the three is bundled or fetchable offline; a copy in BEIR layout (corpus, queries, "
                      "qrels) gives the gain and calibration rows with normscope retrieval --dataset DIR --json"),
    Claim("llm_baselines", "The paper's comparison with LLM baselines", "the paper's LLM baselines", None, Size(),
          "setup",
          how_to_test="the paper's LLM baselines run on the paper's benchmarks; neither is bundled, and normscope "
                      "measures embedding encoders, not generative models"),
)}


@dataclasses.dataclass(frozen=True)
class Gate:
    """A validity or power condition a row must meet before its verdict counts.

    Attributes
    ----------
    passed : bool
    reason : str
        Why the design cannot decide (shown as the row's reason when not passed).
    needs : str
        What would decide it (a size, a longer run, a command).
    verdict : str
        ``"not decided at this size"`` (the default) or ``"not testable here"``.
    """

    passed: bool
    reason: str = ""
    needs: str = ""
    verdict: str = "not decided at this size"


def ceiling_gate(mean, n_ceiling: int, n_floor: int, n: int, *, claimed_gain: float | None = None,
                 baseline: str = "cosine", metric: str = "nDCG@10", unit: str = "queries", low: float = 0.0,
                 high: float = 1.0) -> Gate:
    """Whether a gain over ``baseline`` is possible at all: a ceiling / floor gate for the gain claims.

    A metric bounded by ``[low, high]`` (nDCG@10, a correlation) leaves no room for a gain where the baseline is
    already at ``high``: a scorer can only tie or lose there, so a CI below the claimed size says nothing about
    the claim. The relative gain ``mean(scorer) / mean(baseline) - 1`` is at most ``high / mean - 1``; when that
    largest possible gain is below the claimed one, or the baseline is at the ceiling on every unit, the claim is
    ``not testable here``. A baseline at ``low`` on every unit leaves the relative gain undefined: also
    ``not testable here``. Used by the retrieval and similarity gain rows (:mod:`normscope.retrieval.claims`,
    :mod:`normscope.similarity.claims`).

    Parameters
    ----------
    mean : float
        The baseline's mean of ``metric`` over the evaluated units.
    n_ceiling, n_floor : int
        Units on which the baseline scores ``high`` / ``low``.
    n : int
        Evaluated units; 1 for a statistic of the whole set (a Spearman rho over all pairs: ``mean`` is it).
    claimed_gain : float, optional
        The smallest relative gain the claim states (a fraction: 0.012 for +1.2 %); None: only the all-at-the-
        ceiling / all-at-the-floor cases fail.
    baseline, metric, unit : str
        Words of the reason.
    low, high : float
        The metric's bounds.

    Returns
    -------
    Gate
        ``verdict`` ``"not testable here"``; ``reason`` (the row's reason beside that verdict) e.g. ``"cosine is at
        the ceiling on 40 of 40 queries (nDCG@10 = 1): no gain is possible"``.
    """
    m = float(mean) if _finite(mean) else None
    if n == 1 and m is not None:  # one statistic over the whole set (a correlation), not a mean over units
        where = f"{baseline}'s {metric} is {fmt_value(m)} (at most {high:g})"
    else:
        where = f"{baseline} is at the ceiling on {n_ceiling} of {n} {unit} ({metric} = {high:g})"
    needs = f"a harder dataset, where {baseline} leaves room below {metric} = {high:g}"
    if n <= 0 or m is None:
        return Gate(False, f"no {unit} with a {metric} of {baseline}", needs,
                    "not testable here")
    if n_ceiling >= n:
        return Gate(False, f"{where}: no gain is possible", needs, "not testable here")
    if n_floor >= n or m <= low:
        floor = (f"{baseline}'s {metric} is {fmt_value(m)}" if n == 1 else
                 f"{baseline} is at the floor on {n_floor} of {n} {unit} ({metric} = {low:g})")
        return Gate(False, f"{floor}: the relative gain over it is undefined", f"a dataset on which {baseline} "
                    f"scores above {low:g}", "not testable here")
    best = high / m - 1 if low == 0 else None
    if claimed_gain is not None and best is not None and best < claimed_gain:
        return Gate(False, f"{where}: the largest possible gain, {100 * best:+.2f} %, is below "
                           f"the claimed {100 * claimed_gain:+.2f} %", needs, "not testable here")
    return Gate(True, f"{where}; the largest possible gain is {100 * best:+.2f} %" if best is not None else where)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def _ci_ok(ci) -> bool:
    return ci is not None and len(ci) == 2 and all(_finite(c) for c in ci)


def fmt_value(x, *, sign: bool = False) -> str:
    """A number for a sentence: 3 significant digits, scientific below 1e-3, ``n/a`` for None."""
    if not _finite(x):
        return "n/a"
    x = float(x)
    if x != 0 and abs(x) < 1e-3:
        return f"{x:+.2e}" if sign else f"{x:.2e}"
    return f"{x:+.3g}" if sign else f"{x:.3g}"


def _ci_text(ci, size: Size | None = None) -> str:
    f = size.fmt if size is not None and size.percent else fmt_value
    return f"[{f(ci[0])}, {f(ci[1])}]"


def direction_verdict(estimate, ci: Sequence[float] | None, sign: int | None, *, p: float | None = None
                      ) -> tuple[str, str]:
    """Verdict on the claimed direction from an estimate and its 95 % CI.

    Parameters
    ----------
    estimate : float or None
    ci : (low, high) or None
    sign : {+1, -1, 0} or None
        Claimed direction; 0: an association without a direction (either side reproduces it);
        None: no direction claimed.
    p : float, optional
        p-value of a test of the same effect given beside the CI (e.g. a paired t-test): a CI that
        excludes 0 while ``p >= 0.05`` is ``inconclusive`` (the two disagree).

    Returns
    -------
    (verdict, why) : tuple of str
        ``verdict`` in :data:`DIRECTION_VERDICTS`.
    """
    if sign is None:
        return "no direction claimed", "the claim states no direction"
    if not _finite(estimate) or not _ci_ok(ci):
        return "not tested", "no estimate with a 95% CI"
    lo, hi = float(ci[0]), float(ci[1])
    txt = f"the 95% CI [{fmt_value(lo)}, {fmt_value(hi)}]"
    excluded = lo > 0 or hi < 0
    if excluded and _finite(p) and p >= 0.05:
        return "inconclusive", f"{txt} excludes 0, but the paired test does not reject equality (p = {p:.3g} >= 0.05)"
    if not excluded:
        return "inconclusive", f"{txt} includes 0"
    if sign == 0:
        return "reproduced", f"{txt} excludes 0 (the claim names no direction)"
    side = "positive" if sign > 0 else "negative"
    if (sign > 0) == (lo > 0):
        return "reproduced", f"{txt} excludes 0 on the claimed ({side}) side"
    return "refuted", f"{txt} excludes 0 on the side opposite to the claimed {side} sign"


def permutation_direction(p_below: float | None, p_above: float | None, n_perm: int, what: str,
                          alpha: float = 0.05) -> tuple[str, str]:
    """Direction verdict from a one-sided permutation test in each direction.

    ``reproduced`` when the observed statistic lies below the permutation null (``p_below <
    alpha``: closer to the claim than chance), ``refuted`` when it lies above it, ``inconclusive``
    otherwise.

    Parameters
    ----------
    p_below, p_above : float or None
        ``(1 + #{T* <= T}) / (n_perm + 1)`` and ``(1 + #{T* >= T}) / (n_perm + 1)``.
    n_perm : int
    what : str
        The statistic, for the sentence.
    alpha : float
    """
    from normscope.stats import p_text  # deferred: normscope.stats imports scipy, and this module loads at start-up

    if not _finite(p_below) or not _finite(p_above):
        return "not tested", "no permutation test"
    if p_below < alpha:
        return "reproduced", f"{what} is below its permutation null ({p_text(p_below, n_perm)}, one-sided)"
    if p_above < alpha:
        return "refuted", f"{what} is above its permutation null ({p_text(p_above, n_perm)}, one-sided)"
    return "inconclusive", (f"{what} is not distinguishable from its permutation null ({p_text(p_below, n_perm)} "
                            "below, one-sided)")


def size_verdict(ci: Sequence[float] | None, size: Size, sign: int | None = None) -> tuple[str, str]:
    """Verdict on the claimed size from a 95 % CI.

    Range and point claims: ``consistent`` when the CI meets ``[low, high]``; ``smaller`` when it
    lies wholly on the zero side of the range, ``larger`` when wholly beyond it (along the claimed
    sign; a range of negative values is read in magnitude). Bounds: ``at_most b`` is
    ``consistent`` when ``hi <= b`` and ``larger`` when ``lo > b``; ``at_least b`` is
    ``consistent`` when ``lo >= b`` and ``smaller`` when ``hi < b``; ``undetermined`` between.

    Returns
    -------
    (verdict, why) : tuple of str
        ``verdict`` in :data:`SIZE_VERDICTS`.
    """
    if size.kind == "none":
        return "no size claimed", "the claim states no size"
    if not _ci_ok(ci):
        return "undetermined", "no 95% CI to compare with the claimed size"
    lo, hi = float(ci[0]), float(ci[1])
    txt = f"the 95% CI {_ci_text((lo, hi), size)}"
    claimed = _claimed(size)
    if size.kind == "at_most":
        if hi <= size.high:
            return "consistent", f"{txt} lies wholly below {claimed}"
        if lo > size.high:
            return "larger", f"{txt} lies wholly above {claimed}"
        return "undetermined", f"{txt} straddles {claimed}"
    if size.kind == "strong":
        return _strong_verdict(lo, hi, size.low, sign, txt, claimed)
    if size.kind == "at_least":
        if lo >= size.low:
            return "consistent", f"{txt} lies wholly above {claimed}"
        if hi < size.low:
            return "smaller", f"{txt} lies wholly below {claimed}"
        return "undetermined", f"{txt} straddles {claimed}"
    a, b = size.low, size.high
    neg = (sign is not None and sign < 0) or (sign is None and b <= 0)
    if hi < a:
        return ("larger" if neg else "smaller"), f"{txt} lies wholly {'beyond' if neg else 'below'} {claimed}"
    if lo > b:
        return ("smaller" if neg else "larger"), f"{txt} lies wholly {'on the zero side of' if neg else 'above'} {claimed}"
    return "consistent", f"{txt} meets {claimed}"


def _strong_verdict(lo: float, hi: float, m: float, sign: int | None, txt: str, claimed: str) -> tuple[str, str]:
    """Size verdict of a "strong" claim, ``|effect| >= m``: on the claimed side when there is one, else on either."""
    if sign is not None and sign != 0:
        lo, hi = (lo, hi) if sign > 0 else (-hi, -lo)
        if lo >= m:
            return "consistent", f"{txt} lies wholly beyond {claimed} on the claimed side"
        if hi < m:
            return "smaller", f"{txt} lies wholly short of {claimed}"
        return "undetermined", f"{txt} straddles {claimed}"
    if lo >= m or hi <= -m:
        return "consistent", f"{txt} lies wholly beyond \u00b1{fmt_value(m)} ({claimed})"
    if -m < lo and hi < m:
        return "smaller", f"{txt} lies wholly inside \u00b1{fmt_value(m)}, short of {claimed}"
    return "undetermined", f"{txt} straddles \u00b1{fmt_value(m)} ({claimed})"


def _claimed(size: Size) -> str:
    """``the claimed size (+1.2 to +2.3 %)`` / ``the claimed bound (at most 0.001)``."""
    if size.kind == "strong":
        return f"the strong minimum (|\u03c1| \u2265 {fmt_value(size.low)})"
    return f"the claimed {'bound' if size.kind in ('at_most', 'at_least') else 'size'} ({size.text()})"


def _contradicts(size: Size, s: str) -> bool:
    """Whether size verdict ``s`` excludes the claimed size on the side that contradicts the claim."""
    if size.kind == "at_most":
        return s == "larger"
    if size.kind == "at_least":
        return s == "smaller"
    return s == "smaller"


def headline(direction: str, size_v: str, size: Size, *, gate: Gate | None = None,
             conditions_met: bool | None = None) -> str:
    """The headline verdict from the two verdicts by :data:`HEADLINE_RULE`.

    Parameters
    ----------
    direction : str
        From :func:`direction_verdict` (or :func:`permutation_direction`).
    size_v : str
        From :func:`size_verdict`.
    size : Size
        The claimed size (which side of it contradicts the claim).
    gate : Gate, optional
        A design / validity condition; when not passed its verdict is the headline.
    conditions_met : bool, optional
        Further conditions a reproduction needs (e.g. the lab gate's median and Pearson parts):
        False turns ``reproduced`` into ``inconclusive``.

    Returns
    -------
    str
        One of :data:`VERDICTS`.
    """
    if gate is not None and not gate.passed:
        return gate.verdict
    if direction == "refuted" or _contradicts(size, size_v):
        return "refuted"
    if direction == "no direction claimed":  # the size is the only evidence: it must hold
        ok = size_v == "consistent"
    else:  # the direction is the evidence; the claimed size must not be excluded
        ok = direction == "reproduced"
    if ok:
        return "inconclusive" if conditions_met is False else "reproduced"
    return "inconclusive"


def _short(verdict: str, direction: str, size_v: str, claim: Claim, gate: Gate | None,
           conditions_met: bool | None, by_null: bool = False) -> str:
    """The row's one-line reason (about 20 words at most), from the same verdicts; ``by_null``: the direction
    came from a permutation test (:func:`permutation_direction`), not from the CI."""
    size = claim.size
    if gate is not None and not gate.passed:
        return gate.reason
    if verdict == "refuted":
        if direction == "refuted":
            return ("the statistic is worse than its permutation null" if by_null
                    else "the CI excludes 0 on the side opposite to the claim")
        if size.kind == "at_most":
            return f"the whole CI lies above {_claimed(size)}"
        if size.kind == "at_least":
            return f"the whole CI lies below {_claimed(size)}"
        if size.kind == "strong":
            return (f"the CI lies wholly inside \u00b1{fmt_value(size.low)}: "
                    + ("the association exists but is not strong" if direction == "reproduced"
                       else f"a null, tight enough to exclude {_claimed(size)}"))
        zero = ", even though it includes 0" if direction == "inconclusive" else ""
        side = "on the zero side of" if (claim.sign or 0) < 0 else "below"
        return f"the CI lies wholly {side} {_claimed(size)}{zero}"
    if verdict == "reproduced":
        if direction == "no direction claimed":
            side = {"at_most": "below", "at_least": "above", "strong": "beyond"}.get(size.kind, "within")
            return f"the whole CI lies {side} {_claimed(size)}"
        tail = {"consistent": (" and lies beyond the strong minimum" if size.kind == "strong"
                               else " and meets the claimed size"), "larger": ", larger than the claimed size",
                "undetermined": "; its size is undetermined", "no size claimed": ""}.get(size_v, "")
        if by_null:
            return "the statistic beats its permutation null" + tail
        return ("the CI excludes 0" if claim.sign == 0 else "the CI excludes 0 on the claimed side") + tail
    if conditions_met is False and size_v == "consistent":
        return "the CI is within the claimed size but the gate's other conditions fail"
    if direction == "inconclusive":
        return (("the statistic does not beat its permutation null" if by_null else "the CI includes 0")
                + (" but meets the claimed size" if by_null and size_v == "consistent" else
                   " and meets the claimed size" if size_v == "consistent" else ""))
    if size_v == "undetermined":
        return f"the CI straddles {_claimed(size)}"
    return "the data cannot decide"


def judge(claim: Claim | str, estimate, ci: Sequence[float] | None, *, p: float | None = None,
          size_ci: Sequence[float] | None = None, direction: tuple[str, str] | None = None,
          gate: Gate | None = None, conditions_met: bool | None = None, adamw: bool = False,
          degenerate: str = "") -> dict:
    """Both verdicts and the headline of one claim from its numbers.

    Two shared rules come first (after a failed ``gate``): a CI of zero width (``ci``, or ``size_ci``
    when the claim has a size) is never a decision (:func:`degenerate_gate`: ``not decided at this
    size``), and a size that only the SGD form predicts, on an AdamW checkpoint, is outside the
    claim's scope (``not testable here``).

    Parameters
    ----------
    claim : Claim or str
        The claim or its key in :data:`CLAIMS`.
    estimate : float or None
    ci : (low, high) or None
        95 % CI of ``estimate`` (the direction is read from it).
    p : float, optional
        A paired test's p-value beside the CI (:func:`direction_verdict`).
    size_ci : (low, high), optional
        The CI compared with the claimed size when it is another statistic's (e.g. the raw
        correlation the paper's figure measures); default ``ci``.
    direction : (verdict, why), optional
        A direction verdict computed otherwise (e.g. :func:`permutation_direction`).
    gate : Gate, optional
    conditions_met : bool, optional
        See :func:`headline`.
    adamw : bool
        The checkpoint was trained with AdamW: a size that only the SGD form predicts is
        ``undetermined`` and the row is ``not testable here`` (docs/theory.md C3).
    degenerate : str
        Why a zero-width CI has zero width, when the caller knows (e.g. "the fitted alpha changes no
        ranking in this stratum"); the reason of the row then reads "<degenerate>: the CI has zero width".

    Returns
    -------
    dict
        ``verdict``, ``direction``, ``size``, ``reason`` (one line), ``why`` (the full reasoning).
    """
    c = CLAIMS[claim] if isinstance(claim, str) else claim
    d, d_why = direction if direction is not None else direction_verdict(estimate, ci, c.sign, p=p)
    if adamw and c.size_needs_sgd and c.size.kind != "none":
        s, s_why = "undetermined", ("the claimed size comes from the SGD form of Theorem 1, which is not expected to hold "
                                    "quantitatively for an AdamW-trained checkpoint (docs/theory.md C3)")
    else:
        s, s_why = size_verdict(size_ci if size_ci is not None else ci, c.size, c.sign)
    if gate is None or gate.passed:
        flat = degenerate_gate(ci, degenerate) or (degenerate_gate(size_ci, degenerate) if c.size.kind != "none"
                                                   else None)
        if flat is not None:
            gate = flat
        elif adamw and c.size_needs_sgd and c.size.kind != "none":
            gate = Gate(False, "outside the claim's scope: an AdamW checkpoint is outside the SGD form of Theorem 1 "
                               "(docs/theory.md C3)", "an SGD-trained checkpoint", verdict="not testable here")
    v = headline(d, s, c.size, gate=gate, conditions_met=conditions_met)
    why = []
    if gate is not None and not gate.passed:
        head = "not decided" if gate.verdict == "not decided at this size" else gate.verdict
        why.append(f"{head}: {gate.reason}" + (f"; would decide it: {gate.needs}" if gate.needs else ""))
    why.append("direction: none claimed" if d == "no direction claimed" else f"direction {d}: {d_why}")
    why.append("size: none claimed" if s == "no size claimed" else
               f"size {s}: {s_why}" + (f" ({c.size.basis})" if c.size.basis else ""))
    return {"verdict": v, "direction": d, "size": s,
            "reason": _short(v, d, s, c, gate, conditions_met, by_null=direction is not None),
            "why": "; ".join(why)}


def degenerate_gate(ci: Sequence[float] | None, reason: str = "") -> Gate | None:
    """The failed gate of a degenerate CI (both ends equal: zero width), else None.

    A CI of zero width means that no resample moved the statistic (e.g. a fitted parameter that changes
    no ranking, so a scorer is compared with itself): it says nothing about sampling error, so it decides
    nothing, whichever side of a claimed size it sits on.

    Parameters
    ----------
    ci : (low, high) or None
    reason : str
        Why it has zero width, when known.

    Returns
    -------
    Gate or None
        ``not decided at this size`` with the reason ``"<reason>: the CI has zero width"``.
    """
    if not _ci_ok(ci) or float(ci[0]) != float(ci[1]):
        return None
    why = reason or f"every resample gave the same value ({fmt_value(ci[0])}), so the run cannot estimate its error"
    return Gate(False, f"{why}: the CI has zero width",
                "a design in which the statistic varies across resamples (more items, or a fitted parameter that "
                "changes the result)")


def claim_row(key: str, *, measured, ci: Sequence[float] | None, judged: dict, section: str | None = None,
              n: int | None = None, what: str = "", statistic: str | None = None, details: Mapping | None = None,
              note: str = "", tested_on: str = "", beside: str = "", needs: str = "", percent: bool | None = None,
              label: str = "", claim: Claim | None = None, kind: str | None = None) -> dict:
    """One scorecard row (a JSON object of ``claims`` in ``summary.json`` and in a command's ``--json``).

    Parameters
    ----------
    key : str
        A key of :data:`CLAIMS`.
    measured : float or None
        This run's figure (the statistic ``what`` names).
    ci : (float, float) or None
        Its 95 % CI (``what`` says which sources of sampling it resamples).
    judged : dict
        :func:`judge`'s output (or :func:`not_testable_row`'s).
    section : str, optional
        The page section with the evidence (default the claim's).
    n : int, optional
        Items (queries, pairs) behind the figure.
    what : str
        What ``measured`` is and what its CI resamples.
    statistic : str, optional
        Identity of the number the verdict rests on (two rows with the same ``statistic`` must
        carry the same verdict: :func:`check_one_verdict_per_statistic`).
    details : mapping, optional
        Further numbers behind the verdict (shown one click away).
    note : str
        Appended to the full reasoning (``why``).
    tested_on : str
        What actually ran (model, encoder, optimizer, data).
    beside : str
        A figure shown beside ``measured`` (e.g. the raw correlation next to the R-free one).
    needs : str
        What would decide the claim when this run cannot.
    percent : bool, optional
        ``measured`` and ``ci`` are fractions to show as percentages (default: when the claimed size is
        in percent).
    label : str
        The statistic's short name, shown above the figure (e.g. ``"Pearson r(R, D~)"``).
    claim : Claim, optional
        The claim as this design tests it (default ``CLAIMS[key]``), e.g. a direction-only form.
    kind : {"paper", "construction", "exploratory"}, optional
        The row's kind (:data:`KINDS`; default the claim's), e.g. ``construction`` for a lab row that ran
        on a free table.

    Returns
    -------
    dict
        Keys ``key, kind, claim, paper, claimed_size, tested_on, label, measured, ci, percent, beside,
        verdict, direction, size, reason, why, needs, section, n, what, statistic, details``.

    Raises
    ------
    KeyError
        Unknown claim key.
    ValueError
        A verdict outside :data:`VERDICTS`, or a kind outside :data:`KINDS`.
    """
    c = claim or CLAIMS[key]
    if judged["verdict"] not in VERDICTS:
        raise ValueError(f"unknown verdict {judged['verdict']!r}")
    kind = kind or c.kind
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
    why = judged["why"] + (f"; {note}" if note else "")
    return {"key": key, "kind": kind, "claim": c.claim, "paper": c.paper, "claimed_size": c.size.text(), "tested_on": tested_on,
            "label": label, "measured": float(measured) if _finite(measured) else None,
            "ci": [float(ci[0]), float(ci[1])] if _ci_ok(ci) else None,
            "percent": bool(c.size.percent if percent is None else percent), "beside": beside,
            "verdict": judged["verdict"], "direction": judged["direction"], "size": judged["size"],
            "reason": judged["reason"], "why": why, "needs": needs, "section": section or c.section, "n": n,
            "what": what, "statistic": statistic, "details": dict(details or {})}


@dataclasses.dataclass(frozen=True)
class ClaimRow(Record):
    """A scorecard row as a typed value (the JSON object :func:`claim_row` writes; read back with
    :meth:`~normscope.values.Record.from_json`). Rows written by an earlier normscope may lack keys
    (they read as None)."""

    key: str | None = None
    kind: str | None = None
    claim: str | None = None
    paper: str | None = None
    claimed_size: str | None = None
    tested_on: str | None = None
    label: str | None = None
    measured: float | None = None
    ci: Interval | None = None
    percent: bool | None = None
    beside: str | None = None
    verdict: str | None = None
    direction: str | None = None
    size: str | None = None
    reason: str | None = None
    why: str | None = None
    needs: str | None = None
    section: str | None = None
    n: int | None = None
    what: str | None = None
    statistic: str | None = None
    details: dict | None = None


def not_testable_row(key: str, reason: str, *, section: str | None = None, what: str = "", needs: str = "",
                     verdict: str = "not testable here", tested_on: str = "", note: str = "") -> dict:
    """A row whose claim this run cannot judge: ``reason`` says why, ``needs`` (default the claim's
    ``how_to_test``) what would test it; ``verdict`` may be ``"not decided at this size"``."""
    c = CLAIMS[key]
    needs = needs or c.how_to_test
    judged = {"verdict": verdict, "direction": "not tested", "size": "undetermined" if c.size.kind != "none"
              else "no size claimed", "reason": reason,
              "why": reason + (f"; would test it: {needs}" if needs else "")}
    return claim_row(key, measured=None, ci=None, judged=judged, section=section, what=what, needs=needs,
                     tested_on=tested_on, note=note)


#: Names of the paper's models as they appear in model ids.
_PAPER_MODELS = {"clip-vit-base-patch32": "CLIP ViT-B/32", "vit-b-32": "CLIP ViT-B/32",
                 "all-minilm-l12": "MiniLM-L12"}


def paper_scope_rows(model: str | None) -> list[dict]:
    """The rows ``paper_models``, ``paper_benchmarks`` and ``llm_baselines`` for a run of ``model``.

    ``paper_models`` is ``not testable here`` unless ``model`` is one of the paper's (its other rows
    then test the paper's model); the benchmarks are never bundled; the paper's LLM baselines are
    generative models on those benchmarks, outside what normscope measures.
    """
    name = (model or "").lower()
    hit = next((v for k, v in _PAPER_MODELS.items() if k in name), None)
    if hit:
        judged = {"verdict": "inconclusive", "direction": "no direction claimed", "size": "no size claimed",
                  "reason": f"this run's model is the paper's {hit}: its verdicts are the other rows",
                  "why": f"this run's model {model} is the paper's {hit}; the other rows test it; the paper's other "
                         f"model is not in this run"}
        models = claim_row("paper_models", measured=None, ci=None, judged=judged, tested_on=model or "")
    else:
        models = not_testable_row("paper_models", f"this run's model is {model or 'unknown'}, not one of the paper's",
                                  tested_on=model or "")
    bench = not_testable_row("paper_benchmarks", "FEVEROUS, RuleTaker and TreeCut are not bundled and normscope has "
                             "no fetch route for them (online or offline)")
    llm = not_testable_row("llm_baselines", "the LLM baselines are generative models run on the paper's benchmarks; "
                           "neither is part of this run")
    return [models, bench, llm]


def kind_of(row: Mapping) -> str:
    """The kind of a row (:data:`KINDS`): its ``kind``, else its claim's (rows written before kinds existed)."""
    k = row.get("kind")
    if k in KINDS:
        return k
    c = CLAIMS.get(str(row.get("key")))
    return c.kind if c is not None else "paper"


def kind_counts(rows: Iterable[Mapping]) -> dict[str, dict[str, int]]:
    """Verdict counts per kind: ``{kind: {verdict: n}}``, kinds in :data:`KINDS` order, verdicts in
    :data:`VERDICTS` order (only those that occur; a kind without rows is left out)."""
    out: dict[str, dict[str, int]] = {}
    rows = list(rows)
    for k in KINDS:
        vs = [str(r.get("verdict")) for r in rows if kind_of(r) == k]
        if vs:
            order = list(VERDICTS) + sorted(set(vs) - set(VERDICTS))
            out[k] = {v: vs.count(v) for v in order if v in vs}
    return out


def counts_text(counts: Mapping[str, Mapping[str, int]]) -> str:
    """The headline count, each kind apart (:func:`kind_counts`), e.g. ``"paper's claims: 3 reproduced,
    2 refuted, 1 not testable here (of 12); checks by construction: 1 reproduced (of 1); exploratory: 2
    inconclusive (of 4)"``. Exploratory rows and checks by construction never add to the paper's count."""
    parts = []
    for k in KINDS:
        c = counts.get(k)
        if not c:
            continue
        body = ", ".join(f"{n} {v}" for v, n in c.items())
        parts.append(f"{KIND_TITLES[k]}: {body} (of {sum(c.values())})")
    return "; ".join(parts)


def check_one_verdict_per_statistic(rows: Iterable[Mapping]) -> None:
    """Raise ``ValueError`` when two rows with the same ``statistic`` carry different verdicts.

    A statistic decides one verdict: a second row that reduces to the same number says so in its
    reasoning and rests on another statistic (or none).
    """
    seen: dict[str, tuple[str, str]] = {}
    bad = []
    for r in rows:
        st = r.get("statistic")
        if not st:
            continue
        if st in seen and seen[st][1] != r.get("verdict"):
            bad.append(f"{seen[st][0]} ({seen[st][1]}) and {r.get('key')} ({r.get('verdict')}) rest on '{st}'")
        seen.setdefault(st, (str(r.get("key")), str(r.get("verdict"))))
    if bad:
        raise ValueError("one statistic, two verdicts: " + "; ".join(bad))
