"""A small BERT built from a config, with the bundled MiniLM's tokenizer, as a sentence-transformers model.

The decisive transformer design (:mod:`normscope.lab.decisive`) trains its own encoder, so that the
whole history of the weights (initialisation, AdamW pre-training, then the theorem's own SGD
conditions) is known: :func:`build_tiny_bert` writes a randomly initialised
``transformers.BertModel`` (seeded) with mean pooling as a sentence-transformers directory, which
:func:`normscope.load_encoder` loads like any other local model (same tokenizer, same forward, same
probe adapter).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from normscope._io import _umask
from normscope.encoders.bundled import bundled_model_path
from normscope.encoders.sentence_transformers import _quiet_transformers
from normscope.errors import InputError
from normscope.validate import check_choice

__all__ = ["build_tiny_bert", "save_encoder_dir", "decay_mask_named"]

#: decay masks of the decisive design (theta_D, docs/theory.md section 1)
MASKS = ("final-layernorm", "no-embeddings", "all", "matrices")

_LAYER_NORM = re.compile(r"encoder\.layer\.(\d+)\.output\.LayerNorm\.")


def decay_mask_named(name: str, param_names=None):
    """The decay mask ``name`` as accepted by :func:`normscope.probes.decay_mask_for`.

    - ``"final-layernorm"``: only the gain and bias of the encoder's last LayerNorm (the output of the
      last layer, before mean pooling). The pooled embedding is ``z = mean_t(gamma * n_t) + beta`` with
      ``n_t`` normalised, so ``J_x theta_D = z`` and ``lambda_rad(x) = lambda`` exactly for every input
      (E4); the rest of the network trains without decay (no shrinking, no rotational heating of the
      LayerNorm-invariant weights).
    - ``"no-embeddings"``: every parameter except the input embedding tables and their LayerNorm
      (``*embeddings*``).
    - ``"all"`` and ``"matrices"``: as in :func:`~normscope.probes.decay_mask_for`.

    Parameters
    ----------
    name : str
    param_names : sequence of str, optional
        The model's parameter names (needed by ``final-layernorm`` to find the last layer).

    Raises
    ------
    InputError
        Unknown mask name, or ``final-layernorm`` on a model without BERT-style layer names.
    """
    check_choice("decay mask", name, MASKS)
    if name == "no-embeddings":
        return _no_embeddings
    if name == "final-layernorm":
        if param_names is None:
            return name  # validated; resolved when the model's names are known
        layers = [int(m.group(1)) for m in map(_LAYER_NORM.search, param_names) if m]
        if not layers:
            raise InputError("decay mask final-layernorm needs a BERT-style encoder (encoder.layer.N.output.LayerNorm)")
        last = max(layers)
        return lambda n, _t: bool((m := _LAYER_NORM.search(n)) and int(m.group(1)) == last)
    return name


def _no_embeddings(param_name: str, _tensor) -> bool:
    return "embeddings" not in param_name


def save_encoder_dir(module, path: str | Path) -> Path:
    """Save a SentenceTransformer ``module`` to directory ``path`` atomically (temp directory, then rename).

    An existing directory at ``path`` is replaced only after the new one is complete.
    """
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700: the usual directory mode instead
        module.save(str(tmp))
        old = None
        if path.exists():
            old = path.parent / f".{path.name}.old"
            if old.exists():
                shutil.rmtree(old)
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def build_tiny_bert(path: str | Path, *, hidden: int = 128, layers: int = 2, heads: int = 2, intermediate: int | None = None,
                    max_seq_length: int = 32, seed: int = 0) -> Path:
    """Write a randomly initialised BERT (mean pooling, no dropout) as a sentence-transformers directory.

    Parameters
    ----------
    path : str or Path
        Directory to create (its parent must exist); replaced atomically.
    hidden, layers, heads : int
        ``hidden_size``, ``num_hidden_layers``, ``num_attention_heads`` of ``transformers.BertConfig``.
    intermediate : int, optional
        Feed-forward width (default ``4 * hidden``).
    max_seq_length : int
        Longest input in tokens (longer inputs are truncated).
    seed : int
        ``torch.manual_seed`` of the initialisation.

    Returns
    -------
    Path
        ``path``; the vocabulary is the bundled all-MiniLM-L6-v2 tokenizer's (30,522 wordpieces).
    """
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    _quiet_transformers()
    path = Path(path)
    work = Path(tempfile.mkdtemp(prefix=".tiny-bert.", dir=path.parent))
    try:
        tok = AutoTokenizer.from_pretrained(str(bundled_model_path()))
        cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, intermediate_size=intermediate or 4 * hidden,
                         max_position_embeddings=max(64, max_seq_length), hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0)
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            BertModel(cfg).save_pretrained(work / "hf")
        finally:
            torch.random.set_rng_state(gen_state)
        tok.save_pretrained(work / "hf")
        st = SentenceTransformer(modules=[models.Transformer(str(work / "hf"), max_seq_length=max_seq_length),
                                          models.Pooling(hidden, "mean")], device="cpu")
        save_encoder_dir(st, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return path
