"""Report stage ``lab``: the training-lab check of Theorem 1 (``normscope lab``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import shlex

from normscope._format import num, sig3
from normscope.lab import GATE, LabRequest, LabResult, plot_predicted_vs_observed, plot_trajectories, run_lab
from normscope.lab.claims import lab_claim, optimizer_claim, tower_claim_row
from normscope.claims import ClaimRow, not_testable_row
from normscope.lab.result import Agreement, LabGate
from normscope.report.stage import Command, Figure, KeyNumber, Section, Stage, Table
from normscope.requests import Request, param
from normscope.values import Spread

__all__ = ["LabStage", "LabCheckRequest", "training_lab_sentences", "LIMIT_OPTIMIZERS"]

SECTION = "training_lab"

#: The frozen-tower arm's full run, stored with normscope (``normscope lab --encoder tower --size full --json
#: src/normscope/lab/results/tower_full.json``): the report shows its row, labelled as stored, since the arm takes
#: minutes of CPU at full size (docs/lab.md).
TOWER_STORED = Path(__file__).resolve().parents[2] / "lab" / "results" / "tower_full.json"
TOWER_COMMAND = "normscope lab --encoder tower --size full --json tower_full.json"


def stored_tower_row() -> ClaimRow:
    """Row ``ambiguity_heat_lab`` from the stored full frozen-tower run (:data:`TOWER_STORED`), its ``tested_on``
    saying that this report did not rerun it; ``not testable here`` when the stored file is absent or unreadable."""
    import json

    try:
        d = json.loads(TOWER_STORED.read_text(encoding="utf-8"))
        row = tower_claim_row(d)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return not_testable_row("ambiguity_heat_lab", "no stored frozen-tower result could be read",
                                needs=TOWER_COMMAND)
    return row.but(tested_on=f"stored full run (normscope/lab/results/{TOWER_STORED.name}), not rerun by this "
                             f"report; {row.tested_on or ''}", needs=row.needs or f"to rerun it: {TOWER_COMMAND}",
                   stored=f"lab/results/{TOWER_STORED.name}")


@dataclasses.dataclass(frozen=True)
class LabCheckRequest(Request):
    """The free-table SGD lab on synthetic pairs (``lab``; None sizes are ``normscope lab``'s defaults), the same
    table under each of :data:`LIMIT_OPTIMIZERS` (:meth:`limits`), and the bootstrap resamples of the scorecard
    rows' CIs over items (``n_boot``, :func:`normscope.lab.claims.lab_claim`)."""

    lab: LabRequest = LabRequest()
    n_boot: int = param(2000, min=1)

    def limits(self) -> dict[str, LabRequest]:
        """The request of each limit run, by optimizer."""
        return {opt: self.lab.replace(optimizer=opt) for opt in LIMIT_OPTIMIZERS}


#: Optimizers whose limits the scorecard tests with a free-table run each (besides SGD).
LIMIT_OPTIMIZERS = ("momentum", "adamw")


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
    # the gate's thresholds as the run states them (GATE when a result lacks them)
    gate = LabGate.from_json({**GATE, **(res.gate.to_json() if res.gate is not None else {})})
    qc = res.q_over_c or Spread()
    return [
        KeyNumber("mean_abs_rel_error", "%s (gate \u2264 %s)" % (res.label("mean_abs_rel_error"), gate.mean_abs_rel_error),
                  res.mean_abs_rel_error),
        KeyNumber("median_rel_error", "%s (gate |.| \u2264 %s)" % (res.label("median_rel_error"),
                                                                   gate.abs_median_rel_error),
                  res.median_rel_error),
        KeyNumber("pearson", "%s (gate \u2265 %s)" % (res.label("pearson"), gate.pearson), res.pearson),
        KeyNumber("spearman", res.label("spearman"), res.spearman),
        KeyNumber("gate.passed", "gate passed", "yes" if gate.passed else "no"),
        KeyNumber("q_over_c.mean", "mean " + res.label("q_over_c"), qc.mean),
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

    def request(self, config) -> LabCheckRequest:
        s = config.sizes
        return LabCheckRequest(lab=LabRequest(steps=s.lab_steps, snapshots=s.lab_snapshots,
                                              probe_batches=s.lab_probe_batches, seed=config.seed), n_boot=s.n_boot)

    def commands(self, request: LabCheckRequest) -> list[Command]:
        return [Command(tuple(request.lab.argv() + ["--json", "lab.json"]))]

    def run(self, ctx, request: LabCheckRequest) -> dict[str, Section]:
        res = run_lab(request.lab, progress=True)
        limits = {opt: run_lab(r, progress=True) for opt, r in request.limits().items()}
        p1 = plot_predicted_vs_observed(res, ctx.figure_path("training_lab_predicted_vs_observed.png"))
        p2 = plot_trajectories(res, ctx.figure_path("training_lab_trajectories.png"))
        figs = [Figure(Path(p1).name, "Training lab: predicted stationary norm R_eq (E7, from measured heat and drift) "
                       "against the observed time-RMS norm, one point per item, coloured by ambiguity; dashed: "
                       "R_eq = R_obs."),
                Figure(Path(p2).name, "Training lab: mean norm per ambiguity group over training steps; the "
                       "measurement window starts at the dashed line.")]
        # heat and drift: 3 significant digits (groups differ in the 2nd-3rd significant digit, which 3 decimals hide)
        rows = [[g.ambiguity, g.n, g.r_obs, g.r_eq, sig3(g.heat), sig3(g.drift), g.mean_abs_rel_error]
                for g in res.groups or []]
        notes = list(res.caveats or [])
        if res.sgd_formula_expected is False:
            notes.append("The SGD formula (E7) is not expected to hold for this optimizer.")
        notes.insert(0, "A free embedding table meets the theorem's assumptions (a scale-invariant loss, SGD with decoupled "
                        "decay, degree k = 1) by construction: this section checks the balance and its estimator, not a "
                        "network (the two-tower MLP: normscope lab --encoder mlp).")
        lim_rows = []
        for opt, r in limits.items():
            unc = (r.uncorrected or Agreement()).mean_abs_rel_error if opt == "momentum" else r.mean_abs_rel_error
            lim_rows.append([opt, unc, r.mean_abs_rel_error if opt == "momentum" else None,
                             "yes" if r.gate is not None and r.gate.passed else "no",
                             shlex.join(request.limits()[opt].argv())])
        n_boot, seed = request.n_boot, request.lab.seed
        return {SECTION: Section(
            SECTION, commands=self.commands(request),
            sizes=(f"free embedding table, {res.n_items} items in d = {res.dim}, {res.steps} steps per optimizer (SGD; "
                   "momentum and AdamW for the limits), synthetic pairs with ambiguity 1..4"),
            result=res.to_dict(), derived={"limits": {opt: r.to_dict() for opt, r in limits.items()}},
            key_numbers=_key_numbers(res),
            tables=[Table("Per ambiguity group (means)",
                          ["ambiguity (concepts)", "items", "observed R", "predicted R_eq", "heat \u03a3\u00b2",
                           "drift D~", "mean |rel. error|"], rows),
                    Table("Limits of the SGD form: the same table trained with other optimizers",
                          ["optimizer", "mean |rel. error| of the SGD formula", "with the (E12) momentum correction",
                           "within the 5 % gate", "command"], lim_rows)],
            figures=figs, notes=notes,
            claims=[lab_claim(res, n_boot=n_boot, seed=seed)]
            + [optimizer_claim(r, n_boot=n_boot, seed=seed) for r in limits.values()] + [stored_tower_row()])}

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        return training_lab_sentences(LabResult.from_dict(section.result))

    def headline(self, section: Section) -> str:
        r = LabResult.from_dict(section.result)
        return (f"mean |rel. error| {num(r.mean_abs_rel_error)}, median {num(r.median_rel_error)}, "
                f"Pearson {num(r.pearson)}: gate {'passed' if r.gate is not None and r.gate.passed else 'not passed'}")

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
