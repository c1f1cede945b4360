"""The up-front estimate ``normscope report`` prints: how long the run will take and how much memory it needs.

The figures are measurements of the bundled all-MiniLM-L6-v2 on the 2-core development machine (AMD EPYC,
no GPU), with the data found locally and an empty embedding cache (``scripts/report_timing.py``), not a model:

- full sizes: 9 min 55 s wall on an idle machine (load 0.4 before), peak RSS 3.48 GB, runtime auto (OpenVINO f32),
  the signals stage with its ``length_designs`` section and FEVEROUS (2026-12-03, README), per stage retrieval 251 s,
  signals 111 s, transformer 97 s, probes 94 s, lab 14 s, tokens 10 s, the rest under 8 s together, 11 s outside
  the stages (loading the model, writing the page);
- ``--quick``: 4 min 49 s wall on a clean clone (2026-12-01, docs/report.md "Sizes"), split over the stages in
  proportion to their CPU seconds in ``scripts/report_timing.py --quick`` (2026-12-03), whose peak RSS is the
  memory figure.

For ``--quick``, the signals stage's section ``length_designs`` (TreeCut, RuleTaker, WordNet chains; added after
that run) is added to the signals figure by its own measurement, ``report --only signals --signals
treecut,ruletaker,wordnet_chains`` (2026-12-03, niced on the shared machine, part of the embeddings cached): full
sizes 56 s CPU (1 min 41 s wall, peak RSS 1.13 GB), ``--quick`` 25 s CPU (1 min 31 s wall, 1.11 GB). Its
FEVEROUS design (50 claims, when the sample is here) is left out of the figure: ``report --only signals --signals
feverous`` at full sizes took 0.16 s in the stage (the claims' embeddings cached; 2026-12-03).
The shuffle design (added to ``length_designs`` after these runs) is not in the figures either: ``normscope
correlate --signal shuffle --n-items 2000`` with an empty cache took 37 s wall, 45 s CPU (model load and OpenVINO
conversion included), peak RSS 1.14 GB (2026-12-03, idle machine); in a full report with the embeddings cached
the whole signals stage took 64 s.

A stage whose finished record is already in ``OUT/stages`` (and ``--force`` is not given) is counted as
reused. With several models the model's own stages run once per model, the labs once (docs/report.md).

Memory with several models (they run one after another in one process): a two-model ``report --quick``
(all-MiniLM-L6-v2 then paraphrase-MiniLM-L3-v2, the embedding cache warm) peaked at 3.05 GB RSS
(``/usr/bin/time -v`` maximum RSS / 2^20, the unit of the one-model figures; 2026-12-03, 15 min 34 s wall, 388 s
of CPU, at load 5-7): no more than one model's 3.1 GB, so the second model reuses the first one's memory.
:data:`EXTRA_MODEL_GB`, the two-model peak less the one-model quick peak (floored at 0), is added per further
model: measured for two models of the bundled model's size or smaller, extrapolated beyond (said so in the
line); a larger model (all-mpnet-base-v2) has a larger peak of its own, not measured here.
"""

from __future__ import annotations

from pathlib import Path

from normscope._format import duration, plural
from normscope.report.config import ReportConfig
from normscope.report.stages import STAGES

__all__ = ["MEASURED", "estimate", "estimate_line"]

#: Preset -> measured wall seconds per stage, peak RSS (GB) and where the figures come from (module docstring).
MEASURED: dict[str, dict] = {
    "full": {"seconds": {"setup": 0.4 + 11.0, "norms": 4.4, "tokens": 10.4, "probes": 93.5, "lab": 13.6,
                         "transformer": 97.1, "signals": 110.6, "similarity": 2.6, "retrieval": 250.9},
             "peak_gb": 3.5, "source": "measured 2026-12-03, idle 2-core machine"},
    # 289 s (4 min 49 s, docs/report.md) split by the CPU seconds of scripts/report_timing.py --quick on 2026-12-03
    # (setup 0.0, norms 16.6, tokens 3.8, probes 105.2, lab 14.4, transformer 28.2, signals 29.2, similarity 5.8,
    # retrieval 111.2; 314.4 s in all; peak RSS 3.09 GB; load average 13 on 2 CPUs, so its wall time, 28 min 35 s,
    # is not the figure)
    "quick": {"seconds": {"setup": 0.5, "norms": 15.3, "tokens": 3.5, "probes": 96.7, "lab": 13.2, "transformer": 25.9,
                          "signals": 26.8 + 25.0, "similarity": 5.3, "retrieval": 102.2},
              "peak_gb": 3.1, "source": "measured 2026-12-01 and 2026-12-03, 2-core machine"},
}


#: Peak RSS (GB) of the two-model quick report (module docstring) and what each model after the first adds.
TWO_MODELS_QUICK_GB = 3.05
EXTRA_MODEL_GB = max(round(TWO_MODELS_QUICK_GB - MEASURED["quick"]["peak_gb"], 2), 0.0)


def estimate(config: ReportConfig, n_models: int = 1) -> dict:
    """Seconds and peak memory a report should take on the development machine (see the module docstring).

    Parameters
    ----------
    config : ReportConfig
        The run (preset, selected stages, output folder, ``force``).
    n_models : int
        Models side by side.

    Returns
    -------
    dict
        ``seconds`` (float), ``peak_gb`` (float, peak RSS of the run: one model's, plus :data:`EXTRA_MODEL_GB` per
        further model), ``memory_basis`` (``measured``, or ``extrapolated`` beyond the two models measured),
        ``stages`` (the selected stage names), ``reused`` (selected stages whose finished record is in
        ``OUT/stages``), ``source``.
    """
    m = MEASURED["quick" if config.preset == "quick" else "full"]
    out = Path(config.out)
    selected = [st for st in STAGES if st.name in config.only]
    reused = [] if config.force else [st.name for st in selected if (out / "stages" / f"{st.name}.json").is_file()]
    total = 0.0
    for st in selected:
        if st.name in reused:
            continue
        total += m["seconds"].get(st.name, 0.0) * (n_models if st.uses_model else 1)
    peak = m["peak_gb"] + max(n_models - 1, 0) * max(EXTRA_MODEL_GB, 0.0)
    basis = "measured" if n_models == 1 or (n_models == 2 and config.preset == "quick") else "extrapolated"
    return {"seconds": total, "peak_gb": peak, "memory_basis": basis, "stages": [st.name for st in selected],
            "reused": reused, "source": m["source"]}


def estimate_line(config: ReportConfig, n_models: int = 1) -> str:
    """The line ``report`` prints before its first stage, e.g. ``estimate: about 4 min 49 s and 3.0 GB of memory
    for the bundled all-MiniLM-L6-v2 on 2 CPU cores (quick sizes; measured ...); a larger model, a loaded machine
    or fewer cores take longer``."""
    e = estimate(config, n_models)
    models = "the bundled all-MiniLM-L6-v2" if n_models == 1 else f"{n_models} models of the bundled model's size"
    mem = f"{e['peak_gb']:.1f} GB of memory"
    if n_models > 1:
        mem += (f" (two models, quick sizes, measured at {TWO_MODELS_QUICK_GB:.1f} GB: they run one after another"
                + ("" if e["memory_basis"] == "measured" else f"; {EXTRA_MODEL_GB:.1f} GB per further model, extrapolated")
                + ")")
    reused = f"; {plural(len(e['reused']), 'stage')} already in {config.out}/stages may be reused" if e["reused"] else ""
    return (f"estimate: about {duration(e['seconds'])} and {mem} for {models} on 2 CPU cores ({config.preset} sizes, "
            f"{len(e['stages'])} stages; {e['source']}){reused}; a larger model, a loaded machine or fewer cores "
            "take longer")
