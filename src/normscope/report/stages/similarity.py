"""Report stage ``similarity``: norm-aware similarity on SimLex-999 (``normscope similarity``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from normscope._format import ci as ci_text, num
from normscope.data import data_path
from normscope.errors import DataError
from normscope.report.missing import data_unavailable
from normscope.report.stage import Command, Figure, KeyNumber, Section, Stage, Table
from normscope.report.text import ci_words, ci_excludes_zero
from normscope.requests import Embedding, Resampling
from normscope.requests.similarity import SimilarityRequest
from normscope.similarity import SimilarityResult, plot_similarity, run_similarity
from normscope.similarity.result import PairFit, PairScorerEval

__all__ = ["SimilarityStage", "SimilarityRequest", "similarity_sentences"]

SECTION = "similarity"


def _scorer_sentence(name: str, s: PairScorerEval) -> str:
    d, ci = s.delta_spearman, list(s.delta_ci) if s.delta_ci is not None else None
    par = f"{s.param_name} = {num(s.param)}, " if s.param_name else ""
    stats = f"\u0394\u03c1 = {num(d)}, paired {ci_words(ci)}"
    ex = ci_excludes_zero(ci)
    if ex is None:
        return f"{name} ({par}{stats}): no CI, so no claim about the difference."
    if not ex:
        return f"For {name} ({par}{stats}) the CI includes 0: no evidence of a difference from cosine."
    return f"{name} {'improves on' if d > 0 else 'is worse than'} cosine ({par}{stats}); the CI excludes 0."


def similarity_sentences(result: dict | None) -> list[str]:
    """Norm-aware similarity on human-rated pairs: each scorer's Spearman gain over cosine, by its paired CI."""
    res = SimilarityResult.from_dict(result)
    cos = res.scorers.get("cosine")
    if cos is None or cos.spearman is None:
        return []
    fit = res.fit or PairFit()
    out = [f"On {num(res.n_pairs)} evaluated pairs, cosine similarity has Spearman \u03c1 = {num(cos.spearman)} "
           f"({ci_words(list(cos.spearman_ci) if cos.spearman_ci else None)}) with the human scores; parameters were "
           f"fitted on {num(fit.n_pairs)} other pairs ({fit.source if fit.source is not None else 'fit pairs'})."]
    return out + [_scorer_sentence(name, s) for name, s in res.scorers.items()
                  if name != "cosine" and s.delta_spearman is not None]


class SimilarityStage(Stage[SimilarityRequest]):
    """Norm-aware pair scorers against SimLex-999's human ratings, fitted on other pairs."""

    name = "similarity"
    sections = {SECTION: "Norm-aware similarity"}
    size_names = ("n_boot",)
    reads = ("simlex-999",)

    def request(self, config) -> SimilarityRequest:
        """SimLex-999: parameters fitted on a seeded half of the pairs, evaluated on the other."""
        return SimilarityRequest(dataset="simlex-999", embedding=Embedding(model=config.model, device=config.device,
                                                                           precision=config.precision,
                                                                           runtime=config.runtime),
                                 resampling=Resampling(n_boot=config.sizes.n_boot, seed=config.seed))

    def commands(self, request: SimilarityRequest) -> list[Command]:
        return [Command(tuple(request.argv() + ["--json", "similarity.json"]))]

    def run(self, ctx, request: SimilarityRequest) -> dict[str, Section]:
        try:
            path = data_path(request.dataset)  # --data / shared copy, else fetched; offline: names the fetch command
        except DataError as exc:
            raise data_unavailable([exc]) from None
        res = run_similarity(request.replace(dataset=str(path)), encoder=ctx.encoder(), progress=True)
        n_boot, seed = request.resampling.n_boot, request.resampling.seed
        r = res.to_dict()
        fig = plot_similarity(res, ctx.figure_path("norm_aware_similarity.png"))
        rows = [[name, "\u2014" if sc.param is None else f"{sc.param_name} = {sc.param:.4g}", sc.fit_spearman,
                 sc.spearman, ci_text(sc.spearman_ci), sc.pearson, None if name == "cosine" else sc.delta_spearman,
                 ci_text(sc.delta_ci)] for name, sc in res.scorers.items()]
        key_numbers = [KeyNumber("scorers.cosine.spearman", f"Spearman \u03c1, cosine vs human scores (n = {res.n_pairs} pairs)",
                                 res.scorers["cosine"].spearman)]
        key_numbers += [KeyNumber(f"scorers.{name}.delta_spearman", f"\u0394 Spearman \u03c1, {name} minus cosine",
                                  res.scorers[name].delta_spearman)
                        for name in ("inverse_norm", "power") if name in res.scorers]
        fit = res.fit
        return {SECTION: Section(
            SECTION, commands=self.commands(request),
            sizes=(f"SimLex-999: {fit.n_pairs} fit pairs, {res.n_pairs} evaluated pairs ({fit.source}, seed "
                   f"{seed}); {res.n_texts} distinct words; {n_boot} bootstrap resamples"),
            result=r, derived={}, key_numbers=key_numbers,
            tables=[Table("One row per scorer: parameter fitted on the fit pairs, statistics on the evaluated pairs "
                          "(95% bootstrap CIs; \u0394: paired bootstrap)",
                          ["scorer", "parameter", "Spearman \u03c1 (fit pairs)", "Spearman \u03c1", "95% CI",
                           "Pearson r", "\u0394 Spearman vs cosine", "95% CI"], rows)],
            figures=[Figure(Path(fig).name, "Left: Spearman \u03c1 on the fit pairs against each scorer's parameter "
                            "(dashed: fitted value; grey: cosine). Right: Spearman difference to cosine on the "
                            "evaluated pairs with paired bootstrap 95% CIs.")],
            notes=list(res.notes), claims=list(res.claims))}  # the rows normscope similarity --json carries

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        return similarity_sentences(section.result)

    def headline(self, section: Section) -> str:
        res = SimilarityResult.from_dict(section.result)
        parts = [f"{name} {num(s.spearman)}" + ("" if name == "cosine" else f" (\u0394 {num(s.delta_spearman)} "
                                                                           f"{ci_text(s.delta_ci)})")
                 for name, s in res.scorers.items()]
        return f"Spearman \u03c1 with human scores, n = {num(res.n_pairs)} pairs: " + ", ".join(parts)
