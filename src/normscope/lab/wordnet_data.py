"""WordNet 3.0 for the lab's real-data mode: reuses :func:`normscope.lexicons.wordnet.load_wordnet`.

Search order (see that function): ``$NORMSCOPE_WORDNET`` (a database folder or a ``.tgz``),
NLTK's data path, then the shared archive ``<shared data>/wordnet-3.0/wordnet-3.0.tgz``
(Princeton WordNet 3.0, see its SOURCE.md) extracted once into
``<normscope cache>/nltk_data/corpora/wordnet``.
"""

from __future__ import annotations

__all__ = ["load_wordnet"]


def load_wordnet(path=None):
    """An NLTK WordNet 3.0 reader (cached per database directory).

    Raises
    ------
    InputError
        No WordNet found (``$NORMSCOPE_WORDNET`` empty or wrong, no NLTK copy, no shared archive).
    DataError
        An archive or the database files are unreadable.
    """
    from normscope.lexicons.wordnet import load_wordnet as _load

    return _load(path)
