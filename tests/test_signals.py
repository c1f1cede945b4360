"""normscope.signals: covariates checked against independent computations and the source files."""

from __future__ import annotations

import gzip
import math
import io
import tarfile

import numpy as np
import pytest
from scipy import stats

from normscope.errors import DataError, InputError
from normscope import signals as sg


# ------------------------------------------------------------------ entropy


def test_label_entropy_matches_scipy():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 30, size=(50, 4))
    counts[3] = [7, 0, 0, 0]
    h = sg.label_entropy(counts)
    ref = stats.entropy(counts.T, base=2)
    np.testing.assert_allclose(h, ref, rtol=0, atol=1e-12)
    assert h[3] == 0.0
    hn = sg.label_entropy(counts, base=math.e)
    np.testing.assert_allclose(hn, stats.entropy(counts.T), atol=1e-12)
    assert np.isnan(sg.label_entropy([[0, 0, 0]])[0])
    assert abs(sg.label_entropy([[1, 1, 1]])[0] - math.log2(3)) < 1e-15
    with pytest.raises(InputError):
        sg.label_entropy([1, 2, 3])
    with pytest.raises(InputError):
        sg.label_entropy([[1, -1]])


def test_chaosnli_entropy_matches_file_field(shared_data):
    df = sg.load_chaosnli()
    assert len(df) == 1514 + 1599
    assert (df["n_labels"] == 100).all()
    # the release's own base-2 entropy field is an independent computation
    np.testing.assert_allclose(df["entropy_bits"], df["entropy_file"], rtol=0, atol=1e-9)
    row = df.iloc[0]
    assert row["text"] == f"{row['premise'].strip()} [SEP] {row['hypothesis'].strip()}"
    assert df["entropy_bits"].between(0, math.log2(3) + 1e-12).all()
    with pytest.raises(InputError, match="subset"):
        sg.load_chaosnli(subsets=("alphanli",))


def test_pair_text_is_the_tokenizer_pair_encoding(bundled_encoder):
    tok = bundled_encoder.hf_tokenizer
    single = tok(sg.pair_text("A man sleeps.", "Nobody sleeps."))["input_ids"]
    pair = tok("A man sleeps.", "Nobody sleeps.")["input_ids"]
    assert single == pair


def test_cifar10h_entropy_matches_probs_file(shared_data):
    h = sg.cifar10h_entropy()
    probs = np.load(shared_data / "cifar10h" / "cifar10h-probs.npy")
    assert h.shape == (10_000,)
    np.testing.assert_allclose(h, stats.entropy(probs.T, base=2), atol=1e-12)
    assert h.max() <= math.log2(10)


# ------------------------------------------------------------------ frequency


def test_zipf_frequency_against_wordfreq():
    from wordfreq import zipf_frequency as zf

    z = sg.zipf_frequency(["the", "Cat", "qqxzvbw", "the cat", "", "cat qqxzvbw"])
    assert z[0] == zf("the", "en") and z[1] == zf("cat", "en")
    assert np.isnan(z[2]) and np.isnan(z[4])
    assert abs(z[3] - (zf("the", "en") + zf("cat", "en")) / 2) < 1e-12
    assert z[5] == zf("cat", "en")  # unknown tokens are left out of the mean


def test_subtlex_zipf_formula_on_a_small_file(tmp_path):
    p = tmp_path / "sub.txt.gz"
    header = "Word\tFREQcount\tCDcount\tFREQlow\tCdlow\tSUBTLWF\tLg10WF\tSUBTLCD\tLg10CD\n"
    rows = ["the\t1000\t1\t1\t1\t1\t1\t1\t1\n", "Dog\t99\t1\t1\t1\t1\t1\t1\t1\n", "dog\t1\t1\t1\t1\t1\t1\t1\t1\n"]
    with gzip.open(p, "wt") as f:
        f.write(header + "".join(rows) + "trailer ____")
    z = sg.subtlex_zipf(["the", "DOG", "unseen", "the dog"], path=p, corpus_millions=2.0)
    denom = 2.0 + 3 / 1e6  # 3 rows (types) in the file
    expect = [math.log10(1001 / denom) + 3, math.log10(101 / denom) + 3, math.log10(1 / denom) + 3]
    np.testing.assert_allclose(z[:3], expect, atol=1e-12)
    assert abs(z[3] - (expect[0] + expect[1]) / 2) < 1e-12
    bad = tmp_path / "bad.txt"
    bad.write_text("a\tb\n1\t2\n")
    with pytest.raises(InputError, match="FREQcount"):
        sg.load_subtlex(bad)


def test_subtlex_real_file(shared_data):
    df = sg.load_subtlex()
    assert len(df) == 74_286
    z = sg.subtlex_zipf(["the"])
    # van Heuven et al. (2014): Zipf of "the" in SUBTLEX-US, by hand from FREQcount 1,501,908
    assert abs(z[0] - (math.log10(1_501_909 / (51.0 + 74_286 / 1e6)) + 3)) < 1e-12
    assert 7.4 < z[0] < 7.5


# ------------------------------------------------------------------ concreteness


def test_concreteness_file_quirks(tmp_path):
    p = tmp_path / "conc.txt"
    p.write_bytes(
        b"Word\tBigram\tConc.M\tConc.SD\tUnknown\tTotal\tPercent_known\tSUBTLEX\tDom_Pos\r\n"
        b"null\t0\t1.50\t0.8\t0\t30\t1.00\t10\t#N/A\r\n"
        b"ice cream\t1\t4.90\t0.3\t0\t30\t1.00\t0\t0\r\n"
        b"Dog\t0\t4.85\t0.4\t0\t30\t1.00\t100\tNoun"
    )
    v = sg.concreteness(["NULL", "ice  cream", "dog", "cat"], path=p)
    np.testing.assert_array_equal(v[:3], [1.50, 4.90, 4.85])
    assert np.isnan(v[3])
    assert sg.concreteness_words(path=p) == ["null", "Dog"]
    bad = tmp_path / "bad.txt"
    bad.write_text("Word\tConcreteness\nx\t1\n")
    with pytest.raises(InputError, match="Conc.M"):
        sg.load_concreteness(bad)


def test_concreteness_real_file(shared_data):
    df = sg.load_concreteness()
    assert len(df) == 39_954 and int((~df["bigram"]).sum()) == 37_058
    assert sg.concreteness(["roadsweeper"])[0] == 4.85
    sample = sg.concreteness_words(n=100, seed=3)
    assert len(sample) == 100 and sample == sg.concreteness_words(n=100, seed=3)
    assert np.isfinite(sg.concreteness(sample)).all()


# ------------------------------------------------------------------ length


def test_word_count():
    np.testing.assert_array_equal(sg.word_count(["Hello, world!", "one", ""]), [2, 1, 0])


# ------------------------------------------------------------------ WordNet


@pytest.fixture(scope="module")
def wn(shared_data):
    return sg.load_wordnet()


def test_wordnet_is_princeton_3_0(wn):
    assert wn.get_version() == "3.0"
    assert wn.synset("poodle.n.01").min_depth() == 9  # stated in the shared data's SOURCE.md


def test_wordnet_specificity_against_nltk(wn):
    words = ["dog", "dogs", "ice cream", "poodle", "xqzvt", ""]
    df = sg.wordnet_specificity(words, wordnet=wn)
    first = wn.synsets("dog", pos="n")[0]
    hypo = set(first.closure(lambda s: s.hyponyms() + s.instance_hyponyms()))
    assert df.loc[0, "min_depth"] == first.min_depth() and df.loc[0, "max_depth"] == first.max_depth()
    assert df.loc[0, "n_hyponyms"] == len(hypo)
    assert df.loc[0, "n_senses"] == len(wn.synsets("dog", pos="n")) == 7
    assert df.iloc[1].equals(df.iloc[0])  # morphy: dogs -> dog
    assert df.loc[2, "n_senses"] == 1 and df.loc[3, "min_depth"] == 9
    assert df.iloc[4].isna().all() and df.iloc[5].isna().all()
    mean = sg.wordnet_specificity(["dog"], wordnet=wn, aggregation="mean")
    senses = wn.synsets("dog", pos="n")
    assert abs(mean.loc[0, "min_depth"] - np.mean([s.min_depth() for s in senses])) < 1e-12
    np.testing.assert_array_equal(sg.specificity(["dog", "xqzvt"], wordnet=wn, measure="max_depth")[:1], [first.max_depth()])
    with pytest.raises(InputError, match="measure"):
        sg.specificity(["dog"], wordnet=wn, measure="depth")
    with pytest.raises(InputError, match="aggregation"):
        sg.wordnet_specificity(["dog"], wordnet=wn, aggregation="max")


def test_wordnet_nouns_are_noun_lemmas(wn):
    words = sg.wordnet_nouns(40, wordnet=wn)
    assert len(words) == 40 and "time" in words[:5]
    for w in words:
        assert wn.synsets(w, pos="n") and set(wn._morphy(w, "n")) == {w}
    assert "years" not in words and "will" not in words


def test_load_wordnet_locations(shared_data, tmp_path, monkeypatch):
    # extraction of the shared archive into a fresh cache, then a directory path and $NORMSCOPE_WORDNET
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    archive = shared_data / "wordnet-3.0" / "wordnet-3.0.tgz"
    reader = sg.load_wordnet(archive)
    # keyed by the archive's sha256 (registry pin of wordnet-3.0.tgz: 227d640a87ee4083...)
    root = tmp_path / "cache" / "nltk_data" / "wordnet-227d640a87ee4083" / "corpora" / "wordnet"
    assert (root / "data.noun").is_file()
    assert not [p for p in (tmp_path / "cache" / "nltk_data").iterdir() if p.name.startswith(".wordnet-extract")]
    assert reader.synset("poodle.n.01").min_depth() == 9
    assert sg.load_wordnet(root.parent.parent) is reader  # <root>/corpora/wordnet, cached reader
    monkeypatch.setenv("NORMSCOPE_WORDNET", str(root))
    assert sg.load_wordnet() is reader
    monkeypatch.setenv("NORMSCOPE_WORDNET", str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match="NORMSCOPE_WORDNET"):
        sg.load_wordnet()
    with pytest.raises(InputError, match="no WordNet"):
        sg.load_wordnet(tmp_path)


def test_load_wordnet_none_found(tmp_path, monkeypatch):
    import nltk

    import normscope.datasets

    monkeypatch.delenv("NORMSCOPE_WORDNET", raising=False)
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path))  # an empty cache, and offline (conftest): nothing to fetch
    monkeypatch.setattr(normscope.datasets, "shared_data_dir", lambda: None)

    def _missing(*a, **k):
        raise LookupError("no")

    monkeypatch.setattr(nltk.data, "find", _missing)
    with pytest.raises(DataError, match="WordNet 3.0 is not here .* `normscope data fetch wordnet`"):
        sg.load_wordnet()


def test_wordnet_archive_is_never_served_from_another_archives_extraction(shared_data, tmp_path, monkeypatch):
    """`correlate --wordnet ARCHIVE`: the extraction is keyed by the archive's hash, so a WordNet already in the
    cache does not hide the archive given (on the old code a garbage archive was ignored, exit 0)."""
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    real = sg.load_wordnet(shared_data / "wordnet-3.0" / "wordnet-3.0.tgz")
    assert real.synset("poodle.n.01").min_depth() == 9
    garbage = tmp_path / "garbage.tgz"
    garbage.write_bytes(b"this is not an archive\n" * 10)
    with pytest.raises(DataError) as exc:
        sg.load_wordnet(garbage)
    assert "\n" not in str(exc.value) and "not a readable tar archive" in str(exc.value)
    # a smaller, different WordNet: its own extraction, read from its own files
    with tarfile.open(shared_data / "wordnet-3.0" / "wordnet-3.0.tgz") as tf:
        files = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    other = tmp_path / "other.tgz"
    with tarfile.open(other, "w:gz") as tf:
        for name, data in files.items():
            if name.endswith("/README"):
                data = b"another copy\n"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    assert sg.load_wordnet(other) is not real
    roots = sorted(p.name for p in (tmp_path / "cache" / "nltk_data").iterdir())
    assert len(roots) == 2 and all(r.startswith("wordnet-") for r in roots)


def test_bad_wordnet_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "x"
    src.mkdir()
    (src / "README").write_text("not wordnet")
    arc = tmp_path / "bad.tgz"
    with tarfile.open(arc, "w:gz") as tf:
        tf.add(src, arcname="wordnet")
    with pytest.raises(DataError, match="data.noun"):
        sg.load_wordnet(arc)
