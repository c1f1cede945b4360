"""What ``normscope tokens`` runs (:class:`TokensRequest`): checked once, at construction."""

from __future__ import annotations

import dataclasses

from normscope.requests import Request, Resampling, param

__all__ = ["TokensRequest"]


@dataclasses.dataclass(frozen=True)
class TokensRequest(Request):
    """Row norms of a model's input embedding table against token frequency and use
    (:func:`normscope.tokens.run_tokens`).

    Attributes
    ----------
    model : str or None
        The model (None: the bundled all-MiniLM-L6-v2): a transformer (its input embedding table and
        tokenizer vocabulary) or GloVe (its word-vector table).
    device : str
    resampling : Resampling
        ``n_boot`` bootstrap resamples over tokens (CIs), ``n_perm`` permutations (p-values), ``seed``.
    """

    COMMAND = ("normscope", "tokens")

    model: str | None = param(None, cli="--model", short="-m", show=True,
                              help="Model: a transformer (its input embedding table and tokenizer vocabulary) or GloVe "
                              "(glove:6B-50d; its word-vector table); default the bundled all-MiniLM-L6-v2.")
    device: str = param("cpu", cli="--device", help="Torch device (cpu, cuda, cuda:N, mps).")
    resampling: Resampling = Resampling(n_boot=2000, n_perm=2000)
