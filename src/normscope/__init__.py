"""normscope: the embedding norm as a measured, theory-backed signal.

Public API (see ``docs/architecture.md``):

- :func:`load_encoder`, :class:`Encoder`, :func:`embed_texts` -- raw (un-normalised) embeddings from real
  models, through the content-addressed cache (the one path from texts to vectors);
- :class:`EmbeddingTable`, :class:`ModelFingerprint` -- the artefact every stage reads and writes;
- :mod:`normscope.theory`, :mod:`normscope.probes`, :mod:`normscope.lab`, :mod:`normscope.signals`,
  :mod:`normscope.stats`, :mod:`normscope.retrieval`, :mod:`normscope.report` -- the stages.
"""

from normscope.encoders import DEFAULT_MODEL, Encoder, load_encoder
from normscope.encoders.embed import embed_texts
from normscope.errors import DataError, InputError, ModelError, NormscopeError
from normscope.table import EmbeddingTable, ModelFingerprint

__version__ = "0.1.0"

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
]
