"""Validation of a decisive-lab run folder before a design resumes from it (issue 36, item 3).

A run folder (``lab --encoder transformer --design decisive --run-dir DIR``) holds the state a killed design
resumes from: ``design.json`` (its settings), ``data.json`` (the data split), ``lambda0.json``,
``predictions.json``, and per run ``runs/<name>.json`` (key, spec, timings), ``runs/<name>.npz`` (the record),
``runs/<name>.ckpt`` (a checkpoint) and ``runs/<name>.final.pt`` (final parameters). :func:`check_run_folder`
reads every one of them that exists, before any work, and refuses a damaged one in one line that names the
file and what is wrong with it (:class:`~normscope.errors.InputError`, CLI exit 2): garbage or truncated
JSON, a JSON value of the wrong kind, a truncated ``.npz`` or checkpoint, a checkpoint that names Python
objects (never unpickled), and any file or folder that is a symbolic link out of the run folder (never read,
never written through). Files it does not know are left alone.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

from normscope._io import OutsideFolder, inside_folder, open_inside, read_inside
from normscope.errors import InputError

__all__ = ["check_run_folder", "read_state_json", "run_folder_writes"]

_HOW = "delete it (or the whole --run-dir) to start that part again"


def _bad(directory: Path, path: Path, what: str) -> InputError:
    return InputError(f"--run-dir {directory}: {path.relative_to(directory)} is damaged ({what}); {_HOW}")


def read_state_json(path: str | Path, directory: str | Path, fields: dict | None = None) -> dict:
    """A JSON object of the run folder, read without following a link out of it and checked against ``fields``.

    Parameters
    ----------
    path : str or Path
        The file, inside ``directory``.
    directory : str or Path
        The run folder.
    fields : dict, optional
        ``{name: type or tuple of types}`` every one of which the object must hold (``float`` accepts
        finite ints and floats, never booleans).

    Returns
    -------
    dict

    Raises
    ------
    InputError
        One line naming the file and the field: not UTF-8 JSON, not an object, a field missing or of the
        wrong type, a non-finite number, a symbolic link out of the folder.
    """
    path, directory = Path(path), Path(directory)
    try:
        d = json.loads(read_inside(path, directory, text=True))
    except OutsideFolder:
        raise _bad(directory, path, "a symbolic link out of the run folder, not followed") from None
    except UnicodeDecodeError:
        raise _bad(directory, path, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _bad(directory, path, f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except OSError as exc:
        raise _bad(directory, path, f"unreadable: {exc.strerror or type(exc).__name__}") from None
    if not isinstance(d, dict):
        raise _bad(directory, path, f"a JSON {type(d).__name__}, not an object")
    for name, types in (fields or {}).items():
        v = d.get(name)
        types = types if isinstance(types, tuple) else (types,)
        if float in types and isinstance(v, (int, float)) and not isinstance(v, bool):
            if not math.isfinite(v):
                raise _bad(directory, path, f"field '{name}' is {v}, not a finite number")
            continue
        if v is None or isinstance(v, bool) and bool not in types or not isinstance(v, types):
            want = " or ".join({dict: "an object", list: "a list", str: "a string", float: "a number",
                                int: "an integer", bool: "true/false"}[t] for t in types)
            got = "missing" if name not in d else f"{type(v).__name__} {json.dumps(v)[:40]}"
            raise _bad(directory, path, f"field '{name}' should be {want}, is {got}")
    return d


#: top-level JSON files and the fields each must hold
_TOP = {
    "design.json": {"key": str, "data_key": str, "settings": dict},
    "data.json": {"probe_ids": list, "probe_texts": list, "train_left": list, "train_right": list,
                  "eval_left": list, "eval_right": list},
    "lambda0.json": {"key": str, "median_lambda_rad_per_lambda": float},
    "predictions.json": {},
}
#: a run's JSON
_RUN = {"key": str, "spec": dict, "timings": dict}


def _links_out(directory: Path) -> None:
    for root, dirs, files in os.walk(directory):
        for n in dirs + files:
            p = Path(root) / n
            if p.is_symlink():
                try:
                    inside_folder(p, directory)
                except OutsideFolder:
                    raise _bad(directory, p, "a symbolic link out of the run folder; normscope neither reads nor "
                                             "writes through it") from None


def _check_npz(directory: Path, p: Path) -> None:
    import zipfile

    import numpy as np

    try:
        with open_inside(p, directory) as f, np.load(f, allow_pickle=False) as z:
            for k in z.files:
                z[k]  # every member read in full: a truncated one raises
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise _bad(directory, p, f"not a readable .npz record: {type(exc).__name__}") from None


def _check_torch(directory: Path, p: Path, kind: str) -> None:
    import torch

    from normscope.lab.checkpoint import FORMAT, check_checkpoint_file

    try:
        check_checkpoint_file(p, option="checkpoint")
    except InputError as exc:
        what = ("names Python objects a checkpoint never holds; never unpickled" if "names Python objects" in str(exc)
                else "not a readable checkpoint (a damaged zip or pickle)")
        raise _bad(directory, p, what) from None
    try:
        with open_inside(p, directory) as f:
            obj = torch.load(f, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign file (zip, pickle or torch errors)
        raise _bad(directory, p, f"not readable as weights only: {type(exc).__name__}") from None
    if kind == "ckpt" and (not isinstance(obj, dict) or obj.get("format") != FORMAT):
        raise _bad(directory, p, f"not a normscope lab checkpoint of format {FORMAT}")
    if kind == "final" and (not isinstance(obj, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in obj)):
        raise _bad(directory, p, "not a list of parameter tensors")


def check_run_folder(directory: str | Path) -> None:
    """Read every state file of a decisive-lab run folder that exists; refuse a damaged one in one line.

    Parameters
    ----------
    directory : str or Path
        The ``--run-dir`` (absent or empty: nothing to check).

    Raises
    ------
    InputError
        ``--run-dir DIR: <file> is damaged (<what, naming the field>); delete it ...``.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return
    _links_out(directory)
    for name, fields in _TOP.items():
        if (directory / name).exists():
            read_state_json(directory / name, directory, fields)
    data = directory / "data.json"
    if data.exists():
        d = read_state_json(data, directory, _TOP["data.json"])
        for a, b in (("train_left", "train_right"), ("eval_left", "eval_right"), ("probe_ids", "probe_texts")):
            if len(d[a]) != len(d[b]):
                raise _bad(directory, data, f"fields '{a}' and '{b}' differ in length ({len(d[a])} vs {len(d[b])})")
            bad = next((x for x in d[a] + d[b] if not isinstance(x, str)), None)
            if bad is not None:
                raise _bad(directory, data, f"field '{a}' or '{b}' holds {type(bad).__name__} {json.dumps(bad)[:30]}, "
                                            "not text")
    runs = directory / "runs"
    if not runs.is_dir():
        return
    for p in sorted(runs.iterdir()):
        if p.name.startswith("."):
            continue
        if p.name.endswith(".final.pt"):
            _check_torch(directory, p, "final")
        elif p.suffix == ".ckpt":
            _check_torch(directory, p, "ckpt")
        elif p.suffix == ".npz":
            _check_npz(directory, p)
        elif p.suffix == ".json":
            read_state_json(p, directory, _RUN)


@contextlib.contextmanager
def run_folder_writes(directory: str | Path):
    """Turn a full disk, a size limit, a quota or a read-only place met while a design writes ``directory`` into one line.

    Writers outside Python's ``open`` (safetensors, torch's zip writer, numpy in a worker process) raise
    their own exception types whose message carries the system's text (``No space left on device``); such
    an exception becomes an :class:`~normscope.errors.OutputError` (CLI exit 2) saying that the finished runs
    are kept (every file of a run folder is written atomically) and a rerun continues. Other exceptions
    pass unchanged.
    """
    from normscope.errors import OutputError
    from normscope.validate import write_failure

    try:
        yield
    except Exception as exc:
        probe = exc if isinstance(exc, (OSError, RuntimeError, OutputError)) else RuntimeError(str(exc))
        failure = write_failure(probe, directory, "--run-dir")
        if failure is None:
            raise
        reason = getattr(failure, "reason", None) or str(failure)
        raise OutputError(f"cannot write --run-dir {directory}: {reason}; the runs finished so far are kept (each "
                          "file is written whole): free space and rerun to continue") from None
