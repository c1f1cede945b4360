"""Every request field round-trips through the command line and back (issue 37 item 3): a request with every field
set away from its default, written as its command (``argv()``) and run through the CLI, reaches the entry point as
the same request. An option missing from ``argv()`` or from the command, or read into the wrong field, fails here.

No model runs: the entry point is replaced by one that records the request it gets and stops the command.
"""

from __future__ import annotations

import dataclasses
import typing

from normscope.requests import Request


class _Stop(Exception):
    pass


def _captured(monkeypatch, module: str, name: str) -> list:
    got: list = []

    def entry(request, *args, **kwargs):
        got.append(request)
        raise _Stop

    monkeypatch.setattr(module + "." + name, entry)
    return got


def _other(field: dataclasses.Field, tp, value):
    """A valid value of the field other than ``value`` (None when the type gives no obvious one)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    meta = field.metadata
    if origin is typing.Literal:
        return next(a for a in args if a != value)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        inner = [a for a in args if a is not type(None)]
        return _other(field, inner[0], value if value is not None else _start(inner[0]))
    if tp is bool:
        return not value
    if tp is int:
        v = (value or 0) + 3
        return min(v, meta["max"]) if "max" in meta else v
    if tp is float:
        lo, hi = meta.get("above", meta.get("min", 0.0)), meta.get("below", meta.get("max", None))
        v = (value or 0.25) * 0.5 if value else 0.25
        return v if (hi is None or v < hi) and v > lo else (lo + (hi if hi is not None else lo + 1)) / 2
    return None


def _start(tp):
    return {int: 0, float: 0.0, str: ""}.get(tp)


def variant(req: Request, overrides: dict) -> Request:
    """``req`` with every field changed (nested requests too); ``overrides``: field -> value, for fields whose type
    alone gives no valid other value (paths, names, lists)."""
    hints = typing.get_type_hints(type(req))
    changes = {}
    for f in dataclasses.fields(req):
        value = getattr(req, f.name)
        if f.name in overrides:
            new = overrides[f.name]
            changes[f.name] = variant(value, new) if isinstance(value, Request) and isinstance(new, dict) else new
        elif isinstance(value, Request):
            changes[f.name] = variant(value, {})
        else:
            new = _other(f, hints[f.name], value)
            if new is not None:
                changes[f.name] = new
    return dataclasses.replace(req, **changes)


def _run(argv: list[str]) -> int:
    from normscope.cli import run

    assert argv[0] == "normscope"
    try:
        return run(argv[1:])
    except _Stop:
        return 0


def _diff(a: Request, b: Request) -> dict:
    ja, jb = a.to_json(), b.to_json()
    return {k: (ja[k], jb.get(k)) for k in ja if ja[k] != jb.get(k)}


def _check(monkeypatch, req: Request, module: str, name: str, *, argv=None, not_options=()) -> None:
    got = _captured(monkeypatch, module, name)
    argv = list(argv if argv is not None else req.argv())
    code = _run(argv)
    assert got, f"the command did not reach {name} (exit {code})"
    diff = {k: v for k, v in _diff(req, got[0]).items() if k not in not_options}
    nested = {}
    for k in list(diff):
        a, b = getattr(req, k), getattr(got[0], k)
        if isinstance(a, Request):
            nested[k] = {kk: vv for kk, vv in _diff(a, b).items() if f"{k}.{kk}" not in not_options}
            if not nested[k]:
                del diff[k]
    assert not diff, f"fields that do not round-trip through {' '.join(argv[:2])}: {diff}"


#: Fields no command has an option for (the library sets them): request field path -> why.
NOT_OPTIONS = {"resampling.level": "every command reports 95% intervals; the level is a library setting"}


def test_variant_changes_every_field():
    from normscope.requests.tokens import TokensRequest

    base = TokensRequest()
    v = variant(base, {"model": "m/x", "device": "cuda"})
    assert (v.model, v.device) == ("m/x", "cuda")
    assert (v.resampling.n_boot, v.resampling.n_perm, v.resampling.seed) == (2003, 2003, 3)


def test_tokens_request_round_trips(monkeypatch):
    from normscope.requests.tokens import TokensRequest

    req = variant(TokensRequest(), {"model": "org/model-x", "device": "cuda"})
    _check(monkeypatch, req, "normscope.tokens", "run_tokens", not_options=NOT_OPTIONS)


def test_correlate_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.correlate import CorrelateRequest

    files = {k: tmp_path / f"{k}.txt" for k in ("subtlex", "wordnet", "images")}
    for p in files.values():
        p.write_text("x\n")
    req = variant(CorrelateRequest(signal="frequency"), {
        "controls": ("length", "words"), "by": "source", **{k: str(p) for k, p in files.items()},
        "embedding": {"model": "org/model-x", "device": "cuda"}})
    _check(monkeypatch, req, "normscope.signals", "run_correlate", not_options=NOT_OPTIONS)


def test_similarity_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.similarity import SimilarityRequest

    dev, fit = tmp_path / "sts-dev.csv", tmp_path / "fit.csv"
    for p in (dev, fit):
        p.write_text("x\n")
    req = variant(SimilarityRequest(), {"dataset": str(dev), "fit": str(fit), "scorers": ("cosine", "dot"),
                                        "whiten": ("zipf",), "embedding": {"model": "org/model-x", "device": "cuda"}})
    monkeypatch.setattr("normscope.cli.similarity.dataset_path", lambda d: d)
    # no option: n_perm (similarity has no permutation test)
    _check(monkeypatch, req, "normscope.similarity", "run_similarity",
           not_options={**NOT_OPTIONS, "resampling.n_perm": ""})


def test_retrieval_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.retrieval import RetrievalRequest

    (tmp_path / "beir").mkdir()
    req = variant(RetrievalRequest(), {
        "dataset": str(tmp_path / "beir"), "scorers": ("cosine", "inverse_norm"), "fit_split": "dev", "split": "dev2",
        "params": (("inverse_norm", 0.25),), "grids": (), "engine": "local", "address": None, "workers": None,
        "embedding": {"model": "org/model-x", "device": "cuda"}})
    # no option: k (the run depth, 100) and the scorers' grids are library settings; the permutations of the
    # randomisation test are fixed (10,000)
    _check(monkeypatch, req, "normscope.retrieval", "run_retrieval",
           not_options={**NOT_OPTIONS, "k": "", "resampling.n_perm": ""})



def test_lab_request_round_trips(monkeypatch):
    from normscope.requests.lab import LabRequest

    req = variant(LabRequest(), {"encoder": "mlp", "dataset": "synthetic", "optimizer": "momentum",
                                 "estimator": "trajectory", "burn_in": 100, "steps": 400, "snapshots": 5})
    # no option (a gap this test records): the table / mlp lab's model and data sizes, its temperature, batch size
    # and momentum, and the recording settings are library-only; `normscope lab` runs them at their defaults
    library_only = ("n_items", "n_concepts", "dim", "tau", "batch_size", "beta", "hidden", "input_dim",
                    "record_every", "track")
    _check(monkeypatch, req, "normscope.lab", "run_lab", not_options={**NOT_OPTIONS, **dict.fromkeys(library_only, "")})



def test_decisive_request_round_trips(monkeypatch, tmp_path):
    """The decisive design is called with the request's ``run_kwargs()`` (its directory beside them)."""
    from normscope.requests.lab import DecisiveRequest

    req = variant(DecisiveRequest(), {"size": "report", "pairs": "wordnet", "probe_items": 32, "device": "cuda"})
    got = []

    def entry(*args, **kwargs):
        got.append(kwargs)
        raise _Stop

    monkeypatch.setattr("normscope.lab.run_decisive_design", entry)
    monkeypatch.chdir(tmp_path)
    _run(req.argv())
    assert got, "the command did not reach run_decisive_design"
    assert {k: v for k, v in got[0].items() if k in req.run_kwargs()} == req.run_kwargs()


def test_transformer_lab_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.lab import TransformerLabRequest

    req = variant(TransformerLabRequest(), {"model": "org/model-x", "pairs": "wordnet", "optimizer": "momentum",
                                            "lr": 0.01, "weight_decay": 0.1, "probe_items": 40, "device": "cuda"})
    monkeypatch.setattr("normscope.cli.lab.resolve_backend", lambda name: ("sentence-transformers", name))
    # no option (a gap this test records): the momentum coefficient, the checkpoint and lambda-fit intervals, the
    # tracking switch and the permutations are library-only
    library_only = ("beta", "checkpoint_every", "lambda_every", "track", "resampling.n_perm")
    _check(monkeypatch, req, "normscope.lab", "run_transformer_lab", argv=req.argv("org/model-x"),
           not_options={**NOT_OPTIONS, **dict.fromkeys(library_only, "")})


def test_probe_request_round_trips(monkeypatch):
    """``ProbeRequest.argv()`` is the options after ITEMS, --model and --pairs; run_probe gets the request fourth."""
    from normscope.requests.probe import ProbeRequest

    req = variant(ProbeRequest(), {"batch_size": 16, "lr": 0.01, "weight_decay": 0.1, "tau": 0.07})
    got = []

    def run_probe(encoder, texts, pairs, request, **kwargs):
        got.append(request)
        raise _Stop

    monkeypatch.setattr("normscope.cli.probe.load_encoder", lambda *a, **k: object())
    monkeypatch.setattr("normscope.cli.probe.resolve_backend", lambda name: ("sentence-transformers", name))
    monkeypatch.setattr("normscope.pairs.load_pairs", lambda spec: object())
    monkeypatch.setattr("normscope.probes.run_probe", run_probe)
    _run(["normscope", "probe", "wordfreq:20", "--model", "org/model-x", "--pairs", "wordnet", *req.argv()])
    assert got, "the command did not reach run_probe"
    # no option (a gap this test records): the finite-difference target and the one-sided InfoNCE are library-only
    library_only = {"fd_target", "symmetric"}
    diff = {k: v for k, v in _diff(req, got[0]).items() if k not in library_only}
    if "resampling" in diff and set(_diff(req.resampling, got[0].resampling)) <= {"n_perm", "level"}:
        del diff["resampling"]  # the probe has no permutation test; the level is a library setting
    assert not diff, diff
