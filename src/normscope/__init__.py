"""normscope: the embedding norm as a measured, theory-backed signal.

Public API (see ``docs/architecture.md``):

- :func:`load_encoder`, :class:`Encoder`, :func:`embed_texts` -- raw (un-normalised) embeddings from real
  models, through the content-addressed cache (the one path from texts to vectors);
- :class:`EmbeddingTable`, :class:`ModelFingerprint` -- the artefact every stage reads and writes;
- :mod:`normscope.theory`, :mod:`normscope.probes`, :mod:`normscope.lab`, :mod:`normscope.signals`,
  :mod:`normscope.stats`, :mod:`normscope.retrieval`, :mod:`normscope.report` -- the stages;
- :mod:`normscope.extensions` -- tools for users the core does not import (Ray engine, ANN indexes, the saved
  calibrator, sentence-transformers integrations).

The supported API is ``__all__`` here and the ``__all__`` of each module in :data:`PUBLIC_MODULES` (listed, with an
example per module, in ``docs/api.md``); other names (a module not listed, a name not in its module's ``__all__``,
anything starting with ``_``) may change without notice.
"""

from normscope.encoders import DEFAULT_MODEL, Encoder, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import DataError, InputError, ModelError, NormscopeError
from normscope.table import EmbeddingTable, ModelFingerprint

__version__ = "0.1.0"

#: The modules whose ``__all__`` is supported API (docs/api.md); importing this package imports none of them.
PUBLIC_MODULES: tuple[str, ...] = (
    "normscope.encoders", "normscope.engine", "normscope.table", "normscope.inputs", "normscope.datasets",
    "normscope.data", "normscope.lexicons", "normscope.requests", "normscope.theory", "normscope.stats",
    "normscope.scoring", "normscope.pairs", "normscope.claims", "normscope.values", "normscope.results",
    "normscope.errors", "normscope.probes", "normscope.signals", "normscope.similarity", "normscope.retrieval",
    "normscope.tokens", "normscope.lab", "normscope.report", "normscope.extensions",
)

__all__ = [
    "DEFAULT_MODEL",
    "Encoder",
    "load_encoder",
    "embed_texts",
    "EmbeddingTable",
    "ModelFingerprint",
    "NormscopeError",
    "InputError",
    "ModelError",
    "DataError",
    "__version__",
    "PUBLIC_MODULES",
]
