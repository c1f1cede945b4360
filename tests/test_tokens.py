"""``normscope tokens``: the input embedding table's rows (kinds, Zipf frequency, norms) and its statistics.

A tiny real BertModel (random weights) in a sentence-transformers folder, with planted never-used rows and a
planted norm-frequency relation, is found and measured; the statistics are unchanged when the table's rows
are permuted (tokens of mixed lengths), and each token's outputs follow it.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from normscope.cli import run
from normscope.requests import Resampling
from normscope.requests.tokens import TokensRequest
from normscope.tokens import classify_tokens, run_tokens, token_table, tokens_statistics

WORDS = ["the", "of", "and", "to", "in", "is", "that", "for", "it", "was", "on", "with", "he", "as", "at", "by",
         "this", "from", "dog", "house", "river", "apple", "theory", "symphony", "photosynthesis", "aardvark",
         "quantum", "hyponymy", "neutrino", "entity", ".", ",", "1"]
SUBWORDS = ["##s", "##ing", "##ed", "##ly", "##tion", "##ness", "##zz"]
N_UNUSED = 20


def _vocab():
    return (["[PAD]"] + [f"[unused{i}]" for i in range(N_UNUSED)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            + WORDS + SUBWORDS)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A sentence-transformers folder: BertModel (d = 16) whose table has 20 planted small [unused*] rows and
    word rows whose norm rises with Zipf frequency."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from normscope.tokens.table import token_zipf

    root = tmp_path_factory.mktemp("tiny")
    vocab = _vocab()
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n")
    hf = root / "hf"
    BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True).save_pretrained(hf)
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=32), add_pooling_layer=False)
    w = bert.get_input_embeddings().weight.data
    unit = torch.randn(w.shape, generator=torch.Generator().manual_seed(1))  # (the [PAD] row was initialised 0)
    unit = unit / unit.norm(dim=1, keepdim=True)
    kinds = classify_tokens(vocab, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    zipf = token_zipf(vocab, kinds)
    target = np.where(kinds == "unused", 0.2, np.where(np.isfinite(zipf), 0.3 + 0.1 * np.nan_to_num(zipf), 1.0))
    w.copy_(unit * torch.tensor(target, dtype=w.dtype)[:, None])
    bert.save_pretrained(hf)
    st = SentenceTransformer(modules=[models.Transformer(str(hf)), models.Pooling(16, "mean")])
    st.save(str(root / "st"))
    return root / "st", target, zipf


def test_tiny_model_planted_unused_rows_are_found(tiny_model):
    from normscope.encoders import load_encoder

    folder, target, zipf = tiny_model
    res = run_tokens(TokensRequest(resampling=Resampling(n_boot=200, n_perm=200)), encoder=load_encoder(str(folder)))
    assert res.n_rows == len(_vocab()) and res.dim == 16
    assert res.counts == {"word": len(WORDS), "subword": len(SUBWORDS), "special": 5, "unused": N_UNUSED}
    items = res.items
    assert items.loc[items["kind"] == "unused", "token"].tolist() == [f"[unused{i}]" for i in range(N_UNUSED)]
    np.testing.assert_allclose(items["norm"], target, rtol=1e-6)  # the table's own rows, in row order
    c = res.unused_vs_used
    assert c["median_unused"] == pytest.approx(0.2, rel=1e-6) and c["n_unused"] == N_UNUSED
    assert c["ci"][1] < 0 and c["ratio_ci"][1] < 1
    # norm = 0.3 + 0.1 zipf on words wordfreq lists: Spearman 1 up to ties (wordfreq's frequencies are binned, and
    # float32 rounding of the tied norms breaks some of them)
    assert res.frequency["word"]["spearman"] == pytest.approx(1.0, abs=2e-3)
    n_listed = int(np.isfinite(zipf[items["kind"] == "word"]).sum())
    assert res.frequency["word"]["n"] == n_listed and res.frequency["word"]["n_no_frequency"] == len(WORDS) - n_listed
    assert res.init_norm == pytest.approx(0.02 * 4.0)


def test_kinds_and_zipf_of_subword_pieces():
    from wordfreq import zipf_frequency

    toks = ["[PAD]", "[unused3]", "##ing", "dog", ".", "[CLS]", None, "##"]
    kinds = classify_tokens(toks, ["[PAD]", "[CLS]"])
    assert kinds.tolist() == ["special", "unused", "subword", "word", "word", "special", "unused", "word"]
    # BERT's entries in a vocabulary whose tokenizer has other specials (MPNet: <s>, </s>) are never emitted
    assert classify_tokens(["<s>", "[CLS]", "dog"], ["<s>"]).tolist() == ["special", "unused", "word"]
    t = token_table(np.ones((len(toks), 3)), toks, ["[PAD]", "[CLS]"])
    # wordfreq's own Zipf value (rounded to 2 decimals) of the string; a ## piece: of its string as a word
    assert t.loc[3, "zipf"] == pytest.approx(zipf_frequency("dog", "en"), abs=0.006)
    assert t.loc[2, "zipf"] == pytest.approx(zipf_frequency("ing", "en"), abs=0.006)
    assert np.isnan(t.loc[[0, 1, 5, 6], "zipf"]).all()
    assert t["used"].tolist() == [False, False, True, True, True, False, False, True]


def test_statistics_are_permutation_equivariant(rng):
    vocab = _vocab() + [w * k for w in ("ab", "xyz") for k in (3, 7)]  # tokens of mixed lengths
    w = rng.normal(size=(len(vocab), 8))
    a = token_table(w, vocab, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    perm = rng.permutation(len(vocab))
    b = token_table(w[perm], [vocab[i] for i in perm], ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    pd.testing.assert_frame_equal(a.drop(columns="token_id").iloc[perm].reset_index(drop=True),
                                  b.drop(columns="token_id"))
    sa = tokens_statistics(a, n_boot=300, n_perm=300, seed=5)
    sb = tokens_statistics(b, n_boot=300, n_perm=300, seed=5)
    assert json.dumps(sa, sort_keys=True, default=str) == json.dumps(sb, sort_keys=True, default=str)


def test_cli_tokens_writes_table_json_figure(tiny_model, tmp_path, capsys):
    folder, _, _ = tiny_model
    out, js, fig = tmp_path / "t.parquet", tmp_path / "t.json", tmp_path / "t.png"
    assert run(["tokens", "--model", str(folder), "--n-boot", "100", "--n-perm", "100", "-o", str(out),
                "--json", str(js), "--fig", str(fig)]) == 0
    d = json.loads(js.read_text())
    assert d["counts"]["unused"] == N_UNUSED and d["unused_vs_used"]["difference"] < 0
    assert pd.read_parquet(out).shape[0] == len(_vocab()) and fig.stat().st_size > 10_000
    assert "unused − used" in capsys.readouterr().out


def test_precomputed_vectors_have_no_table(tmp_path, capsys):
    np.save(tmp_path / "v.npy", np.ones((3, 4), np.float32))
    assert run(["tokens", "--model", str(tmp_path / "v.npy")]) == 2
    assert "no input embedding table" in capsys.readouterr().err


def test_byte_pair_vocabularies_mark_words_by_their_boundary_marks():
    from normscope.tokens.table import token_string, vocabulary_scheme

    clip = ["dog</w>", "the</w>", "ing", "pho", "tosynthesis</w>", "<|endoftext|>"]
    assert vocabulary_scheme(clip) == "clip-bpe"
    assert classify_tokens(clip, ["<|endoftext|>"]).tolist() == ["word", "word", "subword", "subword", "word", "special"]
    assert token_string("dog</w>", "word", "clip-bpe") == "dog"
    gpt2 = ["\u0120dog", "\u0120the", "ing", "\u0120house"]
    assert vocabulary_scheme(gpt2) == "gpt2-bpe" and classify_tokens(gpt2).tolist() == ["word", "word", "subword", "word"]
    t = token_table(np.ones((4, 2)), gpt2)
    assert np.isfinite(t["zipf"]).tolist() == [True, True, True, True]
