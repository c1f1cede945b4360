"""Every request field round-trips through the command line and back (issue 37 item 3): a request with every field
set away from its default, written as its command (``argv()``) and run through the CLI, reaches the entry point as
the same request. An option missing from the command, or read into the wrong field, fails here; a field with no
option must be listed in :data:`LIBRARY_ONLY` with the reason, so a new field cannot silently escape its command.

Options are declared once, on the request fields (``param(..., cli=...)``): the command's typer option
(``option_for``), ``argv()`` and the request built from the parsed options (``from_options``) all come from that
declaration, so this test checks the three against each other end to end.

No model runs: the entry point is replaced by one that records the request it gets and stops the command.
"""

from __future__ import annotations

import dataclasses
import typing

import pytest

from normscope.cli._options import option_for
from normscope.requests import Request, from_options, param


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


def _leaves(req: Request) -> dict:
    """Field name -> value of ``req`` and its nested requests."""
    out = {}
    for f in dataclasses.fields(req):
        v = getattr(req, f.name)
        out.update(_leaves(v) if isinstance(v, Request) else {f.name: v})
    return out


def _covers(req: Request, same=()) -> None:
    """Every field of ``req`` with an option is away from its default, but those in ``same``."""
    from normscope.requests import option_fields

    values = _leaves(req)
    unchanged = [k for k, (_, _, d) in option_fields(type(req)).items() if values[k] == d and k not in same]
    assert not unchanged, f"the test leaves these fields at their defaults: {unchanged}"


def _check(monkeypatch, req: Request, module: str, name: str, *, argv=None, same=()) -> None:
    """``req.argv()`` run through the CLI reaches ``module.name`` as ``req``, every field but the library-only ones
    (which must be exactly :data:`LIBRARY_ONLY`'s for the class). Every field with an option must be away from its
    default but those in ``same`` (so that the test covers it)."""
    from normscope.requests import library_fields

    _covers(req, same)
    library = set(library_fields(req))
    assert library == set(LIBRARY_ONLY.get(type(req).__name__, {})), (
        f"{type(req).__name__}: fields without an option {sorted(library)}; give each an option (param(cli=...)) and "
        "the command a line (option_for), or list it in LIBRARY_ONLY with the reason")
    got = _captured(monkeypatch, module, name)
    argv = list(argv if argv is not None else req.argv())
    code = _run(argv)
    assert got, f"the command did not reach {name} (exit {code})"
    diff = {k: v for k, v in _diff(req, got[0]).items() if k not in library}
    for k in list(diff):
        a, b = getattr(req, k), getattr(got[0], k)
        if isinstance(a, Request) and not {kk for kk in _diff(a, b) if f"{k}.{kk}" not in library}:
            del diff[k]
    assert not diff, f"fields that do not round-trip through {' '.join(argv[:2])}: {diff}"


#: Fields no command has an option for (the library sets them), by request class: field path -> why. A value other
#: than the default is not written by ``argv()``: the reproduce command of such a run is not complete.
LEVEL = "every stage but the shuffle reports 95% intervals whatever the level; an option would promise more"
LIBRARY_ONLY = {
    "TokensRequest": {"resampling.level": LEVEL},
    "CorrelateRequest": {"resampling.level": LEVEL},
    "SimilarityRequest": {"resampling.level": LEVEL, "resampling.n_perm": "similarity has no permutation test"},
    "RetrievalRequest": {"resampling.level": LEVEL, "params": "set by --alpha / --beta (one option per scorer)",
                         "grids": "the scorers' parameter grids (a nested list) are a library setting"},
    "CalibrateRequest": {"resampling.level": LEVEL, "resampling.n_perm": "calibrate has no permutation test",
                         "embedding.junk": "calibrate always leaves junk texts out (run_calibrate does not read it)"},
    "ProbeRequest": {"resampling.level": LEVEL, "resampling.n_perm": "the balance test permutes n_boot times"},
    "TransformerLabRequest": {"resampling.level": LEVEL, "resampling.n_perm": "the lab has no permutation test"},
}


def test_variant_changes_every_field():
    from normscope.requests.tokens import TokensRequest

    base = TokensRequest()
    v = variant(base, {"model": "m/x", "device": "cuda"})
    assert (v.model, v.device) == ("m/x", "cuda")
    assert (v.resampling.n_boot, v.resampling.n_perm, v.resampling.seed) == (2003, 2003, 3)


def test_tokens_request_round_trips(monkeypatch):
    from normscope.requests.tokens import TokensRequest

    req = variant(TokensRequest(), {"model": "org/model-x", "device": "cuda"})
    _check(monkeypatch, req, "normscope.tokens", "run_tokens")


def test_correlate_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.correlate import CorrelateRequest

    files = {k: tmp_path / f"{k}.txt" for k in ("subtlex", "wordnet", "images")}
    for p in files.values():
        p.write_text("x\n")
    req = variant(CorrelateRequest(signal="frequency"), {
        "controls": ("length", "words"), "by": "source", **{k: str(p) for k, p in files.items()},
        "embedding": {"model": "org/model-x", "device": "cuda"}})
    _check(monkeypatch, req, "normscope.signals", "run_correlate")
    # no control at all: the empty list is written as --control ''
    _check(monkeypatch, req.replace(controls=()), "normscope.signals", "run_correlate")


def test_similarity_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.similarity import SimilarityRequest

    dev, fit = tmp_path / "sts-dev.csv", tmp_path / "fit.csv"
    for p in (dev, fit):
        p.write_text("x\n")
    req = variant(SimilarityRequest(), {"dataset": str(dev), "fit": str(fit), "scorers": ("cosine", "dot"),
                                        "whiten": ("zipf",), "embedding": {"model": "org/model-x", "device": "cuda"}})
    monkeypatch.setattr("normscope.cli.similarity.dataset_path", lambda d: d)
    _check(monkeypatch, req, "normscope.similarity", "run_similarity")


def test_retrieval_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.retrieval import RetrievalRequest

    (tmp_path / "beir").mkdir()
    req = variant(RetrievalRequest(), {
        "dataset": str(tmp_path / "beir"), "scorers": ("cosine", "inverse_norm"), "fit_split": "dev", "split": "dev2",
        "params": (("inverse_norm", 0.25),), "grids": (), "engine": "ray", "address": "auto",
        "agreement_model": "org/model-y", "embedding": {"model": "org/model-x", "device": "cuda"}})
    _check(monkeypatch, req, "normscope.retrieval", "run_retrieval")
    # cross-validation (None) is written as --fit-split cv; both fixed parameters at once
    req = req.replace(fit_split=None, params=(("inverse_norm", 0.25), ("power", 1.5)),
                      scorers=("cosine", "inverse_norm", "power"))
    _check(monkeypatch, req, "normscope.retrieval", "run_retrieval")


def test_calibrate_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.retrieval import CalibrateRequest

    (tmp_path / "beir").mkdir()
    req = variant(CalibrateRequest(dataset="scifact"), {
        "dataset": str(tmp_path / "beir"), "run_file": None, "qrels_file": None, "apply": None,
        "signals": ("query_norm", "margin"), "fit_split": "dev", "split": "dev2", "answer_at": (0.25, 0.5),
        "embedding": {"model": "org/model-x", "device": "cuda"}})
    # a dataset, or a run file with its qrels; --apply refuses --signal: the second request sets the others
    _check(monkeypatch, req, "normscope.extensions.calibrate", "run_calibrate", same=("run_file", "qrels_file", "apply"))
    files = {k: tmp_path / f"{k}.txt" for k in ("run", "qrels", "calibrator")}
    for p in files.values():
        p.write_text("x\n")
    req = req.replace(dataset=None, run_file=str(files["run"]), qrels_file=str(files["qrels"]),
                      apply=str(files["calibrator"]), signals=CalibrateRequest.defaults()["signals"])
    _check(monkeypatch, req, "normscope.extensions.calibrate", "run_calibrate", same=("dataset", "signals"))


def test_lab_request_round_trips(monkeypatch):
    from normscope.requests.lab import LabRequest

    req = variant(LabRequest(), {"encoder": "mlp", "dataset": "wordnet", "optimizer": "momentum",
                                 "estimator": "trajectory", "burn_in": 100, "steps": 400, "snapshots": 5})
    _check(monkeypatch, req, "normscope.lab", "run_lab")


def test_tower_lab_request_round_trips(monkeypatch, tmp_path):
    from normscope.requests.lab import TowerLabRequest

    req = variant(TowerLabRequest(), {"model": "org/model-x", "size": "quick", "run_dir": str(tmp_path / "run")})
    _check(monkeypatch, req, "normscope.lab.tower", "run_tower_lab")


def test_decisive_request_round_trips(monkeypatch, tmp_path):
    """The decisive design is called with the request's ``run_kwargs()`` (its directory beside them)."""
    from normscope.requests import library_fields
    from normscope.requests.lab import DecisiveRequest

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a\tb\n")
    req = variant(DecisiveRequest(), {"size": "report", "pairs": str(pairs), "probe_items": 32, "device": "cuda"})
    assert library_fields(req) == []
    _covers(req)
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

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a\tb\n")
    req = variant(TransformerLabRequest(), {"model": "org/model-x", "pairs": str(pairs), "optimizer": "momentum",
                                            "lr": 0.01, "weight_decay": 0.1, "probe_items": 40, "device": "cuda"})
    monkeypatch.setattr("normscope.cli.lab.resolve_backend", lambda name: ("sentence-transformers", name))
    _check(monkeypatch, req, "normscope.lab", "run_transformer_lab")
    # an items file instead of a number of probe items
    items = tmp_path / "items.txt"
    items.write_text("a\nb\nc\n")
    _check(monkeypatch, req.replace(probe_items=str(items)), "normscope.lab", "run_transformer_lab")


def test_probe_request_round_trips(monkeypatch):
    """``ProbeRequest.argv()`` is the options after ITEMS, --model and --pairs; run_probe gets the request fourth."""
    from normscope.requests import library_fields
    from normscope.requests.probe import ProbeRequest

    req = variant(ProbeRequest(), {"batch_size": 16, "lr": 0.01, "weight_decay": 0.1, "tau": 0.07, "fd_target": 0.02})
    assert set(library_fields(req)) == set(LIBRARY_ONLY["ProbeRequest"])
    _covers(req)
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
    diff = _diff(req, got[0])
    if "resampling" in diff and set(_diff(req.resampling, got[0].resampling)) <= {"n_perm", "level"}:
        del diff["resampling"]  # LIBRARY_ONLY
    assert not diff, diff


def test_every_request_of_a_command_has_its_round_trip_here():
    """A new request class of ``normscope.requests`` needs its round-trip test in this file."""
    import importlib
    import inspect
    import pkgutil

    import normscope.requests as pkg

    classes = {c.__name__ for m in pkgutil.iter_modules(pkg.__path__)
               for _, c in inspect.getmembers(importlib.import_module(f"normscope.requests.{m.name}"), inspect.isclass)
               if issubclass(c, Request) and c.__module__.startswith("normscope.requests.")}
    tested = {"TokensRequest": "tokens", "CorrelateRequest": "correlate", "SimilarityRequest": "similarity",
              "RetrievalRequest": "retrieval", "CalibrateRequest": "calibrate", "LabRequest": "lab",
              "TowerLabRequest": "tower_lab", "DecisiveRequest": "decisive", "TransformerLabRequest": "transformer_lab",
              "ProbeRequest": "probe"}
    assert classes == set(tested)
    for name in tested.values():
        assert f"test_{name}_request_round_trips" in globals(), name


def test_option_words():
    """How each kind of option writes a value (the inverse of what the command parses)."""
    from normscope.requests import Option

    assert Option("--junk-error", flag="error").tokens("error", "junk") == ["--junk-error"]
    assert Option("--ignore-identical-ids/--keep-identical-ids").tokens(False, "x") == ["--keep-identical-ids"]
    assert Option("--fit-split", none="cv").tokens(None, "fit_split") == ["--fit-split", "cv"]
    assert Option("--control").tokens((), "controls") == ["--control", ""]
    assert Option("--control").tokens(("a", "b"), "controls") == ["--control", "a,b"]
    assert Option("--lr").tokens(0.1 + 0.2, "lr") == ["--lr", "0.30000000000000004"]  # shortest exact float
    with pytest.raises(ValueError, match="no command-line form"):
        Option("--max-tokens").tokens(None, "max_tokens")
    with pytest.raises(ValueError, match="sets only"):
        Option("--junk-error", flag="error").tokens("warn", "junk")


@dataclasses.dataclass(frozen=True)
class SearchRequest(Request):
    """A request of this test's own (``test_an_option_is_one_field_and_one_line``)."""

    COMMAND = ("normscope", "search")
    min_prob: float | None = param(None, above=0.0, below=1.0, cli="--min-prob", help="Keep hits with P >= this.")
    k: int = param(10, min=1, cli="-k", help="Hits per query.")


_SEARCHED: list = []


def _search(min_prob: option_for(SearchRequest, "min_prob") = None,  # the one line of an added option
            k: option_for(SearchRequest, "k") = SearchRequest().k) -> None:
    _SEARCHED.append(from_options(SearchRequest, locals()))


def test_an_option_is_one_field_and_one_line():
    """The mechanism on a request of its own: the field's declaration gives the typer option (name, help, type,
    default), the parsed value builds the request, and ``argv()`` writes it back."""
    import typer
    import typer.main

    app = typer.Typer()
    app.command("search")(_search)
    app.callback()(lambda: None)
    cmd = typer.main.get_command(app)
    want = SearchRequest(min_prob=0.25, k=3)
    assert want.argv() == ["normscope", "search", "--min-prob", "0.25", "-k", "3"]
    cmd.main(want.argv()[1:], standalone_mode=False)
    assert _SEARCHED == [want]
    cmd.main(["search"], standalone_mode=False)
    assert _SEARCHED[-1] == SearchRequest()
    assert {p.name: p.help for p in cmd.commands["search"].params} == {"min_prob": "Keep hits with P >= this.",
                                                                       "k": "Hits per query."}
