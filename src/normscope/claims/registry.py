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
  is reproduced (or none is claimed) and the claimed size is met (a range: the CI meets it; a bound or
  "strong": the whole CI is on the claimed side of it); ``inconclusive`` otherwise (e.g. a CI that
  excludes 0 but straddles a claimed bound: the size is neither shown nor excluded).

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

from normscope.claims._numbers import fmt_value

__all__ = ["VERDICTS", "DIRECTION_VERDICTS", "SIZE_VERDICTS", "KINDS", "KIND_TITLES", "STRONG_RHO", "HEADLINE_RULE",
           "HEADLINE_RULE_SHORT", "GLOSSARY", "Size", "Claim", "CLAIMS"]

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
    "reproduced (or none is claimed) and the claimed size is met (a range: the CI meets it; a bound or 'strong': the "
    "whole CI lies on the claimed side of it); 'inconclusive' otherwise, e.g. a CI that straddles a claimed bound. A CI wholly "
    "outside the claimed range rejects that range as the two one-sided tests of equivalence testing do (Schuirmann "
    "1987; Lakens 2017). A 'strong' association is read as |rho| >= 0.3 (Cohen 1988's 'medium'). The headline "
    "counts the paper's claims, checks by construction and exploratory rows apart.")

#: The rule in one line (the CLI's scorecard footer; the full rule is :data:`HEADLINE_RULE`).
HEADLINE_RULE_SHORT = ("refuted: the 95% CI excludes 0 on the other side, or excludes the paper's size on the side of "
                       "zero (even if it includes 0); reproduced: the direction holds and the claimed size is met (a CI straddling a bound: inconclusive); not "
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
          "norm = unexpected input' of its abstention use; no figure)", -1, Size(), "length_designs",
          how_to_test="normscope correlate --signal shuffle (SciFact titles, or --items): the median relative norm "
                      "change of the shuffled copy with a bootstrap CI over pairs, the sign test beside it",
          kind="exploratory"),
    Claim("specificity_hierarchy", "The norm tracks concept specificity strongly: within hierarchies of texts "
          "(WordNet hypernym chains, general to specific) at equal length", "a strong association; no direction or "
          "figure (the specificity claim on a second design)", 0, Size.strong(), "length_designs",
          how_to_test="normscope correlate --signal specificity --pairs wordnet (or a caption-hierarchy CSV): "
                      "Spearman \u03c1(level, norm) within the same hierarchy and token count, CI resampling "
                      "whole hierarchies (WordNet: groups of chains sharing their depth-3 synset)"),
    Claim("abstention_treecut", "Exploratory: does the raw norm flag unanswerable math word problems (TreeCut-style, "
          "one equation cut from the query's path) at equal length?", "not in the paper's stated claims (its "
          "abstention use on TreeCut names no protocol or figure)", 0, Size(), "length_designs",
          how_to_test="normscope correlate --signal treecut (normscope's own seeded generator): answerable and "
                      "unanswerable problems paired at equal token count, the rank-biserial r with a Wilson CI",
          kind="exploratory"),
    Claim("abstention_ruletaker", "Exploratory: does the raw norm flag unanswerable (Unknown) RuleTaker-style "
          "statements at equal length?", "not in the paper's stated claims (its abstention use on RuleTaker names no "
          "protocol or figure)", 0, Size(), "length_designs",
          how_to_test="normscope correlate --signal ruletaker (normscope's own seeded generator): True/False and "
                      "Unknown items paired at equal token count, the rank-biserial r with a Wilson CI",
          kind="exploratory"),
    Claim("abstention_feverous", "Exploratory: does the raw norm flag the FEVEROUS claims the evidence cannot decide "
          "(NOT ENOUGH INFO) at equal length?", "not in the paper's stated claims (its use of FEVEROUS names no protocol "
          "or figure)", 0, Size(), "length_designs",
          how_to_test="normscope data fetch feverous (the 50-claim dev sample in the PyPI sdist graphrag-core 0.18.1), "
                      "then normscope correlate --signal feverous: NEI vs decided claims at equal token count, or the "
                      "partial rho on tokens when fewer than 10 pairs",
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
    Claim("paper_benchmark_feverous", "The results hold on FEVEROUS (fact verification over Wikipedia text and "
          "tables)", "the paper's +1.2 to +2.3 % accuracy, with no protocol for this set (no task, split, model, "
          "metric or place of the norm stated)", None, Size(), "setup",
          how_to_test="the paper's protocol for FEVEROUS (not stated); what normscope can measure on it: normscope "
                      "data fetch feverous, then normscope correlate --signal feverous (row abstention_feverous)"),
    Claim("paper_benchmark_treecut", "The results hold on TreeCut (unanswerable math word problems)",
          "the paper's +1.2 to +2.3 % accuracy, with no protocol for this set", None, Size(), "setup",
          how_to_test="the paper's protocol and TreeCut instances (not stated, not bundled); what normscope can "
                      "measure: normscope correlate --signal treecut on its own generator (row abstention_treecut)"),
    Claim("paper_benchmark_ruletaker", "The results hold on RuleTaker (rule reasoning with unprovable statements)",
          "the paper's +1.2 to +2.3 % accuracy, with no protocol for this set", None, Size(), "setup",
          how_to_test="the paper's protocol and the RuleTaker datasets (not stated, not bundled); what normscope can "
                      "measure: normscope correlate --signal ruletaker on its own generator (row "
                      "abstention_ruletaker)"),
    Claim("llm_baselines", "The paper's comparison with LLM baselines", "the paper's LLM baselines", None, Size(),
          "setup",
          how_to_test="the paper's LLM baselines run on the paper's benchmarks; neither is bundled, and normscope "
                      "measures embedding encoders, not generative models"),
)}
