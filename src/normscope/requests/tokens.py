"""What ``normscope tokens`` runs (:class:`TokensRequest`): checked once, at construction."""

from __future__ import annotations

import dataclasses

from normscope.encoders.bundled import DEFAULT_MODEL
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

    model: str | None = None
    device: str = param("cpu", help="Torch device (cpu, cuda, cuda:N, mps).")
    resampling: Resampling = Resampling(n_boot=2000, n_perm=2000)

    def argv(self) -> list[str]:
        """``normscope tokens ...`` with every setting of this request."""
        out = ["normscope", "tokens", "--model", self.model or DEFAULT_MODEL]
        if self.device != "cpu":
            out += ["--device", self.device]
        return out + self.resampling.argv(perm=True)
