"""normscope: the embedding norm as a measured, theory-backed signal.

Public API (see ``docs/architecture.md``):

- :func:`load_encoder`, :class:`Encoder` -- raw (un-normalised) embeddings from real models;
- :class:`EmbeddingTable`, :class:`ModelFingerprint` -- the artefact every stage reads and writes;
- :mod:`normscope.theory`, :mod:`normscope.probes`, :mod:`normscope.lab`, :mod:`normscope.signals`,
  :mod:`normscope.stats`, :mod:`normscope.retrieval`, :mod:`normscope.report` -- the stages.
"""

from normscope.encoders import DEFAULT_MODEL, Encoder, load_encoder
from normscope.errors import DataError, InputError, ModelError, NormscopeError
from normscope.table import EmbeddingTable, ModelFingerprint

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MODEL",
    "Encoder",
    "load_encoder",
    "EmbeddingTable",
    "ModelFingerprint",
    "NormscopeError",
    "InputError",
    "ModelError",
    "DataError",
    "__version__",
]
