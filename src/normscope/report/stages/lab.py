"""Report stage ``lab``: the training-lab check of Theorem 1 (``normscope lab``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._format import num, sig3
from normscope.lab import LabRequest, LabResult, plot_predicted_vs_observed, plot_trajectories, run_lab
from normscope.report.claims import claim_row
from normscope.report.stage import Command, Figure, KeyNumber, Section, Stage, Table
from normscope.requests import Request, param

__all__ = ["LabStage", "LabCheckRequest", "lab_claim", "training_lab_sentences"]

SECTION = "training_lab"


@dataclasses.dataclass(frozen=True)
class LabCheckRequest(Request):
    """The free-table SGD lab on synthetic pairs (``lab``; None sizes are ``normscope lab``'s defaults) and the
    bootstrap resamples of the scorecard row's CI over items (``n_boot``, :func:`lab_claim`)."""

    lab: LabRequest = LabRequest()
    n_boot: int = param(2000, min=1)


def lab_claim(res: LabResult, *, n_boot: int, seed: int) -> dict:
    """The scorecard row ``theorem1_lab`` from a table/MLP lab result.

    Rule (stated in the row): ``reproduced`` when the docs/theory.md 7A gate passes and the upper end of
    the 95 % CI of the mean |relative error| is within the gate's 0.05; ``refuted`` when the CI's
    lower end exceeds 0.05; ``inconclusive`` otherwise. The CI resamples items (bootstrap).
    """
    rel = res.items["rel_error"].to_numpy(dtype=float) if not res.items.empty else np.array([])
    rel = np.abs(rel[np.isfinite(rel)])
    if rel.size < 3 or res.mean_abs_rel_error is None:
        return claim_row("theorem1_lab", measured=None, ci=None, verdict="not testable here",
                         why="fewer than 3 items with a predicted R_eq", section=SECTION)
    rng = np.random.default_rng(seed)
    boot = np.array([rel[rng.integers(0, rel.size, rel.size)].mean() for _ in range(n_boot)])
    lo, hi = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
    gate = res.gate or {}
    limit = gate.get("mean_abs_rel_error", 0.05)
    if gate.get("passed") and hi <= limit:
        verdict = "reproduced"
        why = f"7A gate passed and the mean |rel. error| CI [{lo:.3g}, {hi:.3g}] lies within {limit}"
    elif lo > limit:
        verdict = "refuted"
        why = f"the mean |rel. error| CI [{lo:.3g}, {hi:.3g}] lies above the gate's {limit}"
    else:
        verdict = "inconclusive"
        why = (f"7A gate {'passed' if gate.get('passed') else 'not passed'}; mean |rel. error| CI [{lo:.3g}, {hi:.3g}] "
               f"straddles or the other gate figures fail ({limit})")
    return claim_row("theorem1_lab", measured=res.mean_abs_rel_error, ci=[lo, hi], verdict=verdict, why=why,
                     section=SECTION, n=int(rel.size),
                     what=(f"mean |R_eq - R_obs| / R_obs over items ({res.encoder}, {res.optimizer}); CI: bootstrap over "
                           f"items ({n_boot} resamples)"))


#: The docs/theory.md 7A gate as the sentence states it.
_GATE = "mean |rel. error| \u2264 0.05, |median| \u2264 0.02, r \u2265 0.95"


def training_lab_sentences(res: LabResult) -> list[str]:
    """The lab sentence: whether the measured stationary norms meet the (E7) gate, with its numbers."""
    mare, med, pear = res.mean_abs_rel_error, res.median_rel_error, res.pearson
    if mare is None:
        return []
    setting = f"{res.encoder or '?'} encoder, {res.optimizer or '?'}"
    passed = mare <= 0.05 and (med is None or abs(med) <= 0.02) and (pear is None or pear >= 0.95)
    numbers = (f"mean |relative error| {num(mare)}, median signed error {num(med)}, Pearson r {num(pear)} "
               "between predicted R_eq and the measured stationary norm")
    if passed:
        return [f"In the training lab ({setting}) the measured stationary norms agree with the (E7) prediction "
                f"within the gate ({_GATE}): {numbers}."]
    return [f"In the training lab ({setting}) the measured stationary norms do not meet the gate ({_GATE}): {numbers}."]


def _key_numbers(res: LabResult) -> list[KeyNumber]:
    gate = res.gate or {}
    qc = res.q_over_c or {}
    return [
        KeyNumber("mean_abs_rel_error", "%s (gate \u2264 %s)" % (res.label("mean_abs_rel_error"),
                                                                 gate.get("mean_abs_rel_error", 0.05)),
                  res.mean_abs_rel_error),
        KeyNumber("median_rel_error", "%s (gate |.| \u2264 %s)" % (res.label("median_rel_error"),
                                                                   gate.get("abs_median_rel_error", 0.02)),
                  res.median_rel_error),
        KeyNumber("pearson", "%s (gate \u2265 %s)" % (res.label("pearson"), gate.get("pearson", 0.95)), res.pearson),
        KeyNumber("spearman", res.label("spearman"), res.spearman),
        KeyNumber("gate.passed", "gate passed", "yes" if gate.get("passed") else "no"),
        KeyNumber("q_over_c.mean", "mean " + res.label("q_over_c"), qc.get("mean")),
        KeyNumber("n_items,dim,batch_size", "items / dimension / batch", f"{res.n_items} / {res.dim} / {res.batch_size}"),
        KeyNumber("lr,weight_decay", "learning rate \u03b7 / weight decay \u03bb", f"{res.lr} / {res.weight_decay}"),
        KeyNumber("steps,burn_in", "steps (burn-in)", f"{res.steps} ({res.burn_in})", "steps"),
        KeyNumber("estimator", "estimator", f"{res.estimator} ({res.snapshots} states \u00d7 {res.probe_batches} batches)"),
    ]


class LabStage(Stage[LabCheckRequest]):
    """Trains the free embedding table with SGD and compares the measured stationary norms with (E7)."""

    name = "lab"
    sections = {SECTION: "Training-lab check of the theorem"}
    size_names = ("lab_steps", "lab_snapshots", "lab_probe_batches", "n_boot")
    uses_model = False
    explains = "the training lab"
    claim_keys = {"theorem1_lab": SECTION}

    def request(self, config) -> LabCheckRequest:
        s = config.sizes
        return LabCheckRequest(lab=LabRequest(steps=s.lab_steps, snapshots=s.lab_snapshots,
                                              probe_batches=s.lab_probe_batches, seed=config.seed), n_boot=s.n_boot)

    def commands(self, request: LabCheckRequest) -> list[Command]:
        return [Command(tuple(request.lab.argv() + ["--json", "lab.json"]))]

    def run(self, ctx, request: LabCheckRequest) -> dict[str, Section]:
        res = run_lab(request.lab, progress=True)
        p1 = plot_predicted_vs_observed(res, ctx.figure_path("training_lab_predicted_vs_observed.png"))
        p2 = plot_trajectories(res, ctx.figure_path("training_lab_trajectories.png"))
        figs = [Figure(Path(p1).name, "Training lab: predicted stationary norm R_eq (E7, from measured heat and drift) "
                       "against the observed time-RMS norm, one point per item, coloured by ambiguity; dashed: "
                       "R_eq = R_obs."),
                Figure(Path(p2).name, "Training lab: mean norm per ambiguity group over training steps; the "
                       "measurement window starts at the dashed line.")]
        # heat and drift: 3 significant digits (groups differ in the 2nd-3rd significant digit, which 3 decimals hide)
        rows = [[g["ambiguity"], g["n"], g["r_obs"], g["r_eq"], sig3(g["heat"]), sig3(g["drift"]),
                 g["mean_abs_rel_error"]] for g in res.groups or []]
        notes = list(res.caveats or [])
        if res.sgd_formula_expected is False:
            notes.append("The SGD formula (E7) is not expected to hold for this optimizer.")
        return {SECTION: Section(
            SECTION, commands=self.commands(request),
            sizes=(f"free embedding table, {res.n_items} items in d = {res.dim}, "
                   f"{res.steps} SGD steps, synthetic pairs with ambiguity 1..4"),
            result=res.to_dict(), derived={}, key_numbers=_key_numbers(res),
            tables=[Table("Per ambiguity group (means)",
                          ["ambiguity (concepts)", "items", "observed R", "predicted R_eq", "heat \u03a3\u00b2",
                           "drift D~", "mean |rel. error|"], rows)],
            figures=figs, notes=notes, claims=[lab_claim(res, n_boot=request.n_boot, seed=request.lab.seed)])}

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        return training_lab_sentences(LabResult.from_dict(section.result))

    def headline(self, section: Section) -> str:
        r = LabResult.from_dict(section.result)
        return (f"mean |rel. error| {num(r.mean_abs_rel_error)}, median {num(r.median_rel_error)}, "
                f"Pearson {num(r.pearson)}: gate {'passed' if (r.gate or {}).get('passed') else 'not passed'}")

    def sizes_used(self, sizes, request: LabCheckRequest, sections) -> dict[str, int]:
        used = super().sizes_used(sizes, request, sections)
        sec = sections[SECTION]
        if sec.ok and sec.result:  # sizes left to `normscope lab`'s defaults: the values it used
            res = LabResult.from_dict(sec.result)
            for size, value in (("lab_steps", res.steps), ("lab_snapshots", res.snapshots),
                                ("lab_probe_batches", res.probe_batches)):
                if isinstance(value, int) and not isinstance(value, bool):
                    used[size] = value
        return used
