"""normscope correlate: entry point, CLI, errors (exit 2), figure, on the real bundled MiniLM (small item sets)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from normscope.cli import run
from normscope.errors import InputError
from _correlate import correlate as run_correlate
from normscope.signals import plot_signal
from normscope.signals.items import read_covariate_file


def _run(*args, **kw):
    """(summary dict as --json writes it, per-item table) of run_correlate."""
    res = run_correlate(*args, **kw)
    return res.to_dict(), res.items

WORDS = ["dog", "cat", "house", "car", "tree", "idea", "truth", "justice", "water", "music", "table",
         "freedom", "apple", "river", "mountain", "theory", "chair", "hope", "window", "science", "xqzvtl", "blorptang"]


def test_frequency_matches_independent_computation(bundled_encoder):
    from wordfreq import zipf_frequency

    summary, df = _run("frequency", encoder=bundled_encoder, items=WORDS, n_boot=200, n_perm=200, seed=1)
    vecs = bundled_encoder.encode(WORDS)
    norm = np.linalg.norm(vecs.astype(np.float64), axis=1)
    np.testing.assert_allclose(df["norm"], norm, rtol=1e-5)
    z = np.array([zipf_frequency(w, "en") for w in WORDS])
    z[z == 0] = np.nan
    ok = np.isfinite(z)
    assert summary["n"] == ok.sum() and summary["n_missing"] == (~ok).sum() == 2
    assert set(summary["missing_examples"]) == {"xqzvtl", "blorptang"}
    assert abs(summary["spearman"] - stats.spearmanr(norm[ok], z[ok]).statistic) < 1e-5
    assert abs(summary["pearson"] - stats.pearsonr(norm[ok], z[ok]).statistic) < 1e-5
    # the length control counts the tokens the model saw: content tokens + [CLS] and [SEP]
    lengths = np.array([len(bundled_encoder.model.tokenizer.tokenize(w)) + 2 for w in WORDS])
    np.testing.assert_array_equal(df["control_length"], lengths)
    assert df["id"].tolist() == [str(i) for i in range(len(WORDS))] and summary["n_truncated"] == 0
    # frequency is not its own control; length is dropped when it does not vary over the valid items
    if len(np.unique(lengths[ok])) < 2:
        assert summary["controls"] == [] and summary["controls_dropped"] == ["length"]
    else:
        assert summary["controls"] == ["length"]
    assert summary["spearman_ci"][0] <= summary["spearman"] <= summary["spearman_ci"][1]
    for key in ("signal", "n", "spearman", "spearman_ci", "pearson", "pearson_ci", "p_value", "partial_spearman",
                "controls", "model", "n_missing", "dataset"):
        assert key in summary
    assert summary["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    json.dumps(summary)


def test_concreteness_partial_controls(bundled_encoder, shared_data):
    summary, df = _run("concreteness", encoder=bundled_encoder, items=WORDS, n_boot=100, n_perm=100,
                                controls=("frequency", "length"))
    ok = df["covariate"].notna() & df["control_frequency"].notna()
    from normscope.stats import partial_spearman

    # every valid item here is one token: length is constant, dropped, and the partial uses frequency only
    assert df.loc[df["covariate"].notna(), "control_length"].nunique() == 1
    ref = partial_spearman(df["covariate"], df["norm"], df[["control_frequency"]].to_numpy(), n_boot=0, n_perm=0)
    assert abs(summary["partial_spearman"]["rho"] - ref.rho) < 1e-12
    assert summary["partial_spearman"]["n"] == ok.sum()
    assert summary["partial_spearman"]["controls"] == ["frequency"] and summary["controls_dropped"] == ["length"]


def test_specificity_counts_missing_entries(bundled_encoder, shared_data):
    summary, df = _run("specificity", encoder=bundled_encoder, items=WORDS, n_boot=100, n_perm=100)
    assert summary["n_missing"] == 2 and summary["n"] == len(WORDS) - 2
    assert set(summary["measures"]) == {"min_depth", "max_depth", "n_hyponyms", "n_senses"}
    assert df.loc[df["item"] == "dog", "covariate"].item() == 8.0  # dog.n.01 min_depth


def test_uncertainty_chaosnli_sample(bundled_encoder, shared_data):
    from normscope.signals import load_chaosnli

    summary, df = _run("uncertainty", encoder=bundled_encoder, n=40, n_boot=100, n_perm=100, seed=3)
    chaos = load_chaosnli().set_index("uid")
    np.testing.assert_allclose(df["covariate"], chaos.loc[df["uid"], "entropy_file"], atol=1e-9)
    assert summary["n"] == 40 and summary["entropy_unit"] == "bits"
    assert all(" [SEP] " in t for t in df["item"])


def test_errors(bundled_encoder, tmp_path):
    with pytest.raises(InputError, match="unknown signal"):
        run_correlate("length", encoder=bundled_encoder, items=WORDS)
    with pytest.raises(InputError, match="at least 10"):
        run_correlate("frequency", encoder=bundled_encoder, items=WORDS[:9] + ["xqzvtl"])
    with pytest.raises(InputError, match="unknown control"):
        run_correlate("frequency", encoder=bundled_encoder, items=WORDS, controls=("age",))
    with pytest.raises(InputError, match="human labels"):
        run_correlate("uncertainty", encoder=bundled_encoder, items=WORDS)
    with pytest.raises(InputError, match="CIFAR-10 test images"):
        run_correlate("uncertainty", encoder=bundled_encoder, dataset="cifar10h")
    bad = tmp_path / "c.csv"
    bad.write_text("word,score\ndog,1\n")
    with pytest.raises(InputError, match="'item' and 'value'"):
        read_covariate_file(bad, "concreteness")


def test_user_covariate_file(bundled_encoder, tmp_path):
    rng = np.random.default_rng(0)
    vals = rng.normal(size=len(WORDS))
    age = rng.normal(size=len(WORDS))
    p = tmp_path / "cov.csv"
    pd.DataFrame({"item": WORDS, "concreteness": vals, "age": age}).to_csv(p, index=False)
    cov = read_covariate_file(p, "concreteness")
    summary, df = _run("concreteness", encoder=bundled_encoder, covariates=cov, controls=("age",),
                                n_boot=50, n_perm=50)
    np.testing.assert_allclose(df["covariate"], vals)
    assert summary["n"] == len(WORDS) and summary["dataset"] == "user covariate file"
    # the user's values are labelled as theirs, not as the signal's own dataset (new-user finding)
    assert summary["covariate"] == "values of the user covariate file (read as concreteness)"
    norm = np.linalg.norm(bundled_encoder.encode(WORDS).astype(np.float64), axis=1)
    assert abs(summary["spearman"] - stats.spearmanr(norm, vals).statistic) < 1e-5
    assert summary["partial_spearman"]["controls"] == ["age"]
    # items with a value but no frequency control are excluded from the partial only, and said so
    summary, _ = _run("concreteness", encoder=bundled_encoder, covariates=cov, controls=("frequency",),
                               n_boot=20, n_perm=20)
    assert summary["n"] == len(WORDS) and summary["partial_spearman"]["n"] == len(WORDS) - 2
    assert any("2 items with a value but no frequency control value are excluded" in note for note in summary["notes"])


def test_plot_signal(bundled_encoder, tmp_path):
    res = run_correlate("frequency", encoder=bundled_encoder, items=WORDS, n_boot=50, n_perm=50)
    out = plot_signal(res, tmp_path / "f.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_outputs_and_exit_codes(tmp_path, shared_data, capsys):
    items = tmp_path / "items.txt"
    items.write_text("\r\n".join(WORDS) + "\r\n")
    js, pq, fig = tmp_path / "s.json", tmp_path / "p.parquet", tmp_path / "f.png"
    rc = run(["correlate", "--signal", "concreteness", "--items", str(items), "--n-boot", "100", "--n-perm", "100",
              "--json", str(js), "-o", str(pq), "--fig", str(fig)])
    assert rc == 0
    s = json.loads(js.read_text())
    df = pd.read_parquet(pq)
    assert s["signal"] == "concreteness" and s["n"] == int(df["covariate"].notna().sum())
    assert fig.stat().st_size > 0
    assert "Spearman" in capsys.readouterr().out
    # bad input: exit 2 with a one-line error, no outputs left behind
    assert run(["correlate", "--signal", "bogus"]) == 2
    assert "unknown signal" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("word,score\ndog,1\n")
    assert run(["correlate", "--signal", "frequency", "--covariate-file", str(bad), "--json", str(tmp_path / "x.json")]) == 2
    assert "found ['word', 'score']" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    few = tmp_path / "few.txt"
    few.write_text("dog\ncat\nxqzvtl\n")
    assert run(["correlate", "--signal", "specificity", "--items", str(few)]) == 2
    assert "need at least 10" in capsys.readouterr().err
    assert run(["correlate", "--signal", "frequency", "--json", str(tmp_path / "no" / "s.json")]) == 2


class _PixelEncoder:
    """A stand-in image model: the vector of an image is its first 12 pixel values (float)."""

    fingerprint = None

    def encode_images(self, images, *, batch_size=32):
        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1)[:12] for im in images])


def test_cifar10h_plumbing(tmp_path, shared_data, bundled_encoder):
    import pickle

    from normscope.signals import cifar10h_entropy

    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, size=(10_000, 32, 32, 3), dtype=np.uint8)
    npy = tmp_path / "x.npy"
    np.save(npy, imgs)
    batch = tmp_path / "cifar-10-batches-py"
    batch.mkdir()
    with open(batch / "test_batch", "wb") as f:  # the official layout: (n, 3072) channel-major rows
        pickle.dump({b"data": imgs.transpose(0, 3, 1, 2).reshape(10_000, -1)}, f)
    ent = cifar10h_entropy()
    for images in (npy, batch):
        summary, df = _run("uncertainty", encoder=_PixelEncoder(), dataset="cifar10h", images=images,
                                    n=50, n_boot=50, n_perm=50, seed=2)
        keep = np.array([int(s.rsplit("-", 1)[1]) for s in df["item"]])
        np.testing.assert_allclose(df["norm"], np.linalg.norm(imgs[keep].reshape(50, -1)[:, :12].astype(float), axis=1))
        np.testing.assert_allclose(df["covariate"], ent[keep])
        assert summary["n"] == 50 and summary["dataset"].startswith("CIFAR-10H")
    with pytest.raises(InputError, match="text encoder"):
        run_correlate("uncertainty", encoder=bundled_encoder, dataset="cifar10h", images=npy, n=20)
    bad = tmp_path / "bad.npy"
    np.save(bad, imgs[:10])
    with pytest.raises(InputError, match="10000, 32, 32, 3"):
        run_correlate("uncertainty", encoder=_PixelEncoder(), dataset="cifar10h", images=bad)


def test_default_item_sets(bundled_encoder, shared_data):
    from normscope.datasets import wordfreq_words
    from normscope.signals import concreteness_words, wordnet_nouns

    s, df = _run("frequency", encoder=bundled_encoder, n=30, n_boot=20, n_perm=20)
    assert df["item"].tolist() == wordfreq_words(30) and s["n_items"] == 30
    s, df = _run("concreteness", encoder=bundled_encoder, n=30, seed=4, n_boot=20, n_perm=20)
    assert df["item"].tolist() == concreteness_words(n=30, seed=4) and s["n_missing"] == 0
    s, df = _run("specificity", encoder=bundled_encoder, n=25, n_boot=20, n_perm=20, controls=())
    assert df["item"].tolist() == wordnet_nouns(25) and s["partial_spearman"] is None and s["controls"] == []


def test_constant_control_is_dropped_and_said_so(bundled_encoder, tmp_path, capsys):
    """One-token items: the length control is constant, so it removes nothing and must not be claimed."""
    one_tok = ["dog", "cat", "house", "car", "tree", "water", "music", "table", "apple", "river", "chair", "hope"]
    assert all(len(bundled_encoder.model.tokenizer.tokenize(w)) == 1 for w in one_tok)
    summary, df = _run("frequency", encoder=bundled_encoder, items=one_tok, controls=("length",),
                                n_boot=50, n_perm=50)
    assert summary["partial_spearman"] is None and summary["controls"] == []
    assert summary["controls_dropped"] == ["length"] and "constant" in summary["partial_reason"]
    assert any("control 'length' is constant (every item is 3 tokens as the model saw it, special tokens "
               "included): not controlled"
               == s for s in summary["notes"])
    # with a varying control left, only that one is partialled out (same rho as an independent partial)
    rng = np.random.default_rng(0)
    age = rng.normal(size=len(one_tok))
    p = tmp_path / "cov.csv"
    z = np.array(df["covariate"])
    pd.DataFrame({"item": one_tok, "value": z, "age": age}).to_csv(p, index=False)
    s2, d2 = _run("frequency", encoder=bundled_encoder, covariates=read_covariate_file(p, "frequency"),
                           controls=("length", "age"), n_boot=0, n_perm=0)
    assert s2["controls"] == ["age"] and s2["partial_spearman"]["controls"] == ["age"]
    from normscope.stats import partial_spearman

    ref = partial_spearman(d2["covariate"], d2["norm"], d2[["age"]].to_numpy(), n_boot=0, n_perm=0)
    assert abs(s2["partial_spearman"]["rho"] - ref.rho) < 1e-12
    # the CLI says it in the table and the notes
    items = tmp_path / "items.txt"
    items.write_text("\n".join(one_tok))
    assert run(["correlate", "--signal", "frequency", "--items", str(items), "--n-boot", "20", "--n-perm", "20",
                "--json", str(tmp_path / "s.json")]) == 0
    cap = capsys.readouterr()
    assert "partial ρ | length" not in cap.out and "not computed" in cap.out
    assert "not controlled" in cap.err and "wrote " in cap.err and "s.json" in cap.err


def test_too_few_items_wording(bundled_encoder):
    with pytest.raises(InputError) as exc:
        run_correlate("frequency", encoder=bundled_encoder, items=["dog", "cat", "house"], n_boot=0, n_perm=0)
    msg = str(exc.value)
    assert "only 3 items have a frequency value" in msg and "0 of" not in msg and "e.g. []" not in msg
    assert "all 3 given items have one" in msg and "(s)" not in msg
    with pytest.raises(InputError) as exc:
        run_correlate("frequency", encoder=bundled_encoder, items=["dog"], n_boot=0, n_perm=0)
    assert str(exc.value).startswith("only 1 item has a frequency value (need at least") and "the one given item has" in str(exc.value)
