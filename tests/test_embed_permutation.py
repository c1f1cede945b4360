"""`normscope embed` is equivariant under a permutation of its input: shuffling the lines of the input
file (mixed lengths: single words, sentences, a paragraph cut at the model's 256-token limit, a duplicate,
a junk line; several batches) gives the same id -> (text, norm, vector, tokens) map, with the embedding
cache off, with a cold cache and with a warm cache filled by the other order."""

from __future__ import annotations

import json

import numpy as np
import pytest

from normscope.encoders.embed import embed_input
from normscope.table import EmbeddingTable
from _close import RTOL, assert_vectors_close

WORDS = ["bank", "apple", "quantum", "run", "tree", "photosynthesis", "the", "of"]
SENTENCES = [
    "The cell membrane regulates what enters and leaves the cell.",
    "Aspirin reduces the risk of heart attack in some adults.",
    "A dog chased the ball across the park.",
    "Vitamin D deficiency is associated with higher mortality in older adults with chronic disease.",
    "Light bends when it passes from air into water.",
]
PARAGRAPH = " ".join(["Randomised controlled trials of statin therapy in patients with elevated cholesterol "
                      "have reported reductions in cardiovascular events across several populations."] * 14)


def _records():
    texts = WORDS + SENTENCES + [PARAGRAPH, "apple", " \u200b "]  # a duplicate text and a junk line
    return [{"id": f"item-{i:02d}", "text": t} for i, t in enumerate(texts)]


def _by_id(table: EmbeddingTable) -> dict:
    return {i: (t, n, v, k) for i, t, n, v, k in zip(table.ids, table.texts, table.norms, table.vectors, table.tokens)}


def _run(tmp_path, records, name, **kw):
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / f"{name}.parquet"
    summary, _ = embed_input(src, out=out, batch_size=4, **kw)
    return summary, EmbeddingTable.from_parquet(out)


@pytest.mark.parametrize("cache", ["off", "cold-then-warm"])
def test_embed_outputs_are_permutation_equivariant(tmp_path, monkeypatch, bundled_encoder, cache):
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    records = _records()
    order = np.random.default_rng(3).permutation(len(records))
    shuffled = [records[i] for i in order]
    use_cache = cache != "off"
    sa, ta = _run(tmp_path, records, "a", cache=use_cache)
    sb, tb = _run(tmp_path, shuffled, "b", cache=use_cache)  # with the cache on: served from a's entries
    assert ta.ids == [r["id"] for r in records if r["id"] != "item-15"]  # rows in input order, junk left out
    assert tb.ids == [r["id"] for r in shuffled if r["id"] != "item-15"]
    assert sa["junk"]["ids"] == sb["junk"]["ids"] == ["item-15"]
    assert sa["n_truncated"] == sb["n_truncated"] == 1
    a, b = _by_id(ta), _by_id(tb)
    assert a.keys() == b.keys()
    for i in a:
        (text_a, norm_a, vec_a, tok_a), (text_b, norm_b, vec_b, tok_b) = a[i], b[i]
        assert text_a == text_b and tok_a == tok_b, i
        # batches hold other items in the other order (other padding): equal to float32 rounding (tests/_close.py)
        assert_vectors_close(vec_b, vec_a, err_msg=i)
        assert norm_b == pytest.approx(norm_a, rel=RTOL), i
    np.testing.assert_array_equal(a["item-01"][2], a["item-14"][2])  # the duplicate text: one vector
    for key in ("n", "norm_mean", "norm_std", "norm_min", "norm_max"):
        assert sb[key] == pytest.approx(sa[key], rel=RTOL), key
    if use_cache:  # the warm run computed nothing: its vectors are the cached ones, bit for bit
        for i in a:
            np.testing.assert_array_equal(b[i][2], a[i][2])
