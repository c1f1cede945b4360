"""Outputs a first-hour user looks for (issue 38 item 7): ``retrieval --fig``, ``index search`` printing its top
hits with text (and writing the text with -o), ``embed`` naming its lowest- and highest-norm items."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _retrieval_data import GRIDS, planted

from normscope.cli import run
from normscope.table import EmbeddingTable


def test_embed_names_the_lowest_and_highest_norm_items(bundled_encoder, tmp_path, monkeypatch, capsys):
    import normscope.encoders as encs

    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(encs, "load_encoder", lambda *a, **k: bundled_encoder)
    words = ["the", "democracy", "cat", "photosynthesis", "run", "blue", "of", "xylophone", "and", "quantum", "a",
             "nevertheless"]
    (tmp_path / "w.txt").write_text("\n".join(words) + "\n")
    out = tmp_path / "w.parquet"
    assert run(["embed", str(tmp_path / "w.txt"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    df = pd.read_parquet(out)
    norms = np.linalg.norm(np.stack(df["vector"].to_numpy()).astype(np.float64), axis=1)  # independent of `norm`
    order = np.argsort(norms, kind="stable")
    low = [f"{df['id'][i]} {df['text'][i]!r} ({norms[i]:.3f})" for i in order[:5]]  # ids: the line numbers
    high = [f"{df['id'][i]} {df['text'][i]!r} ({norms[i]:.3f})" for i in order[::-1][:5]]
    assert f"lowest norms: {', '.join(low)}" in text, text
    assert f"highest norms: {', '.join(high)}" in text, text


def test_index_search_prints_the_top_hits_with_text_and_writes_it(bundled_encoder, tmp_path, monkeypatch, capsys):
    from normscope.retrieval.search import brute_force_search

    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")
    docs_text = ["a small dog barks at the mailman", "the weather is sunny today", "stock markets fell sharply",
                 "a puppy plays in the park", "rain is expected tomorrow", "the cat sleeps on the sofa",
                 "interest rates rise again", "storms hit the coast overnight"]
    ids = [f"d{i}" for i in range(len(docs_text))]
    D = bundled_encoder.encode(docs_text)
    EmbeddingTable(ids=ids, texts=docs_text, vectors=D, fingerprint=bundled_encoder.fingerprint).to_parquet(
        tmp_path / "docs.parquet")
    queries = ["a small dog", "the weather today", "cats", "finance news"]
    (tmp_path / "q.txt").write_text("\n".join(queries) + "\n")
    assert run(["index", "build", str(tmp_path / "docs.parquet"), "-o", str(tmp_path / "idx"), "--kind", "flat"]) == 0
    capsys.readouterr()
    runf = tmp_path / "run.parquet"
    assert run(["index", "search", str(tmp_path / "idx"), str(tmp_path / "q.txt"), "-k", "6", "-o", str(runf)]) == 0
    out = capsys.readouterr().out
    ref = brute_force_search(bundled_encoder.encode(queries), D, query_ids=["0", "1", "2", "3"], doc_ids=ids,
                             scorer="cosine", k=6)
    lines = out.splitlines()
    for q in ("0", "1", "2"):  # the first three queries, top 5 hits each: rank, id, score, snippet
        i = lines.index(f"query {q}: {queries[int(q)]}")
        for r, (d, score) in enumerate(list(ref[q].items())[:5], start=1):
            assert lines[i + r].split() == [str(r), d, f"{score:.4f}", *docs_text[int(d[1:])].split()], lines[i + r]
    assert "query 3" not in out and "(1 more queries and ranks 6-6: -o/--out)" in out
    df = pd.read_parquet(runf)
    assert list(df.columns) == ["query_id", "rank", "doc_id", "score", "query_text", "text"]
    assert (df["text"] == [docs_text[int(d[1:])] for d in df["doc_id"]]).all()
    assert (df["query_text"] == [queries[int(q)] for q in df["query_id"]]).all()


@pytest.fixture
def planted_cli(tmp_path, rng, monkeypatch):
    import normscope.encoders as encs
    import normscope.retrieval.evaluate as ev

    ddir, enc = planted(tmp_path / "ds", rng, n_test=40)
    monkeypatch.setattr(encs, "load_encoder", lambda *a, **k: enc)
    monkeypatch.setattr(ev, "default_grid", lambda scorer, norms: GRIDS.get(scorer, [None]))
    return ddir


def test_retrieval_fig_writes_the_reliability_and_risk_coverage_figures(planted_cli, tmp_path, capsys):
    fig = tmp_path / "cal.png"
    assert run(["retrieval", "--dataset", str(planted_cli), "--scorer", "cosine,inverse_norm", "--n-boot", "20",
                "--fig", str(fig)]) == 0
    risk = tmp_path / "cal_risk_coverage.png"
    for p in (fig, risk):
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert f"wrote {fig}, {risk}" in capsys.readouterr().err
    # the figure path is checked before any work: a folder is refused, nothing written
    assert run(["retrieval", "--dataset", str(planted_cli), "--fig", str(tmp_path)]) == 2
