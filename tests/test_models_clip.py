"""The hf-clip backend on transformers' CLIPModel, with a small randomly initialised CLIPConfig.

Pretrained CLIP weights need the hub, so the model is built here, saved to a temporary directory and
loaded through ``hf-clip:<dir>``, the path a user's local checkpoint takes. Independent references:
transformers' own ``get_text_features`` / ``get_image_features`` on a separately loaded ``CLIPModel``
(default attention implementation), pixel values computed by hand with numpy, and float64 central
differences for the probe's JVPs.
"""

from __future__ import annotations

import functools
import json
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from normscope.cli import run
from normscope.encoders import load_encoder
from normscope.errors import ModelError
from _close import assert_vectors_close

MEAN = np.array([0.48145466, 0.4578275, 0.40821073])  # OpenAI CLIP's normalisation (preprocessor_config.json)
STD = np.array([0.26862954, 0.26130258, 0.27577711])
TEXTS = ["the cat", "a dog and the cat!", "of", "the cat and the dog and the cat", "cat", "dog of the"]


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP byte-level BPE alphabet: printable bytes map to themselves, the rest above U+0100."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, extra = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return dict(zip(bs, map(chr, cs)))


def build_tiny_clip(path, *, seed: int = 0):
    """Save a random CLIPModel (text 2x32, ViT 2x32 on 32x32 images, patch 8, projection 24) with a tokenizer
    (the byte alphabet plus a few merges) and a 32x32 Pillow image processor to ``path``."""
    from transformers import CLIPConfig, CLIPModel, CLIPTokenizer

    from normscope.encoders.hf_clip import _image_processor_class

    chars = list(_bytes_to_unicode().values())
    merges = [("t", "h"), ("th", "e</w>"), ("a", "n"), ("an", "d</w>"), ("o", "f</w>"), ("c", "a"), ("ca", "t</w>"),
              ("d", "o"), ("do", "g</w>")]
    vocab = chars + [c + "</w>" for c in chars] + ["".join(m) for m in merges] + ["<|startoftext|>", "<|endoftext|>"]
    tok = CLIPTokenizer(vocab={t: i for i, t in enumerate(vocab)}, merges=merges, model_max_length=16)
    torch.manual_seed(seed)
    ids = dict(eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id)
    cfg = CLIPConfig(
        text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=16, **ids),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=32, patch_size=8),
        projection_dim=24,
    )
    CLIPModel(cfg).eval().save_pretrained(path)
    tok.save_pretrained(path)
    _image_processor_class()(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(path)
    return path


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """The towers here are tiny: extra intra-op threads only add overhead (and thrash on a busy machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    return build_tiny_clip(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture(scope="module")
def clip(clip_dir):
    return load_encoder(f"hf-clip:{clip_dir}")


@pytest.fixture(scope="module")
def reference(clip_dir):
    """transformers' own CLIPModel, loaded separately with its default attention implementation."""
    from transformers import CLIPModel

    return CLIPModel.from_pretrained(clip_dir).eval()


def _pooled(out):
    return out if isinstance(out, torch.Tensor) else out.pooler_output  # transformers 4.x: tensor; 5.x: output


def _images(n, seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)) for _ in range(n)]


def _pixels_by_hand(images) -> torch.Tensor:
    """(x / 255 - mean) / std, channels first: the processor's output for images already 32 x 32."""
    arr = np.stack([np.asarray(im, dtype=np.float64) for im in images]) / 255.0
    return torch.from_numpy(((arr - MEAN) / STD).transpose(0, 3, 1, 2)).float()


def test_text_vectors_equal_get_text_features(clip, reference, clip_dir):
    raw = clip.encode(TEXTS, batch_size=4)
    feats = clip.tokenize(TEXTS)
    with torch.no_grad():
        ref = _pooled(reference.get_text_features(**feats)).numpy()
    np.testing.assert_allclose(raw, ref, atol=2e-5)
    assert raw.shape == (len(TEXTS), 24) and raw.dtype == np.float32 and clip.dim == 24
    norms = np.linalg.norm(raw, axis=1)
    assert np.ptp(norms) > 1e-2 * norms.mean()  # raw: not normalised
    with torch.no_grad():  # right padding without a mask changes nothing (causal attention, EOS pooling)
        np.testing.assert_allclose(clip.module(feats["input_ids"]).numpy(), ref, atol=2e-5)
    fp = clip.fingerprint
    assert fp.backend == "hf-clip" and fp.name == f"hf-clip:{clip_dir}" and fp.dropped_modules == ("normalize",)
    assert fp.pooling == "text:eos+text_projection(32x24)" and fp.revision.startswith("sha256:")
    assert clip.image_fingerprint.pooling == "image:cls+post_layernorm+visual_projection(32x24)"
    assert clip.fingerprint.key != clip.image_fingerprint.key
    assert clip.temperature == pytest.approx(1 / np.exp(reference.logit_scale.item()))  # init 1/0.07 -> 0.07
    assert clip.max_seq_length == 16
    # a text longer than 16 tokens is truncated, and counted as such, through the one path to vectors
    from normscope.encoders.embed import embed_texts

    table = embed_texts(TEXTS + ["the cat " * 20], encoder=clip, cache=False)
    assert_vectors_close(table.vectors[: len(TEXTS)], raw)  # another batch (a longer text pads it): float32 rounding
    assert table.n_truncated == 1 and table.tokens[-1] == 16 and table.junk.count == 0


def test_image_vectors_equal_get_image_features(clip, reference):
    images = _images(5)
    pixels = _pixels_by_hand(images)
    np.testing.assert_allclose(clip.pixel_values(images).numpy(), pixels.numpy(), atol=1e-5)
    raw = clip.encode_images(images, batch_size=2)
    with torch.no_grad():
        ref = _pooled(reference.get_image_features(pixel_values=pixels)).numpy()
    np.testing.assert_allclose(raw, ref, atol=2e-5)
    assert raw.shape == (5, 24) and np.ptp(np.linalg.norm(raw, axis=1)) > 0


def test_embed_reads_a_folder_of_images(clip, clip_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")
    images = _images(4, seed=3)
    folder = tmp_path / "imgs"
    (folder / "sub").mkdir(parents=True)
    images[0].save(folder / "b.png")
    images[1].save(folder / "a.PNG")
    images[2].save(folder / "sub" / "c.jpg", quality=95)
    images[3].save(folder / "sub" / "d.jpeg", quality=95)
    (folder / "notes.txt").write_text("not an image")
    (folder / ".hidden.png").write_bytes(b"")
    out, js = tmp_path / "o.parquet", tmp_path / "o.json"
    assert run(["embed", str(folder), "--model", f"hf-clip:{clip_dir}", "-o", str(out), "--json", str(js)]) == 0
    tbl = pq.read_table(out)
    assert tbl.column("id").to_pylist() == ["a.PNG", "b.png", "sub/c.jpg", "sub/d.jpeg"]
    from PIL import Image

    decoded = [Image.open(folder / p).convert("RGB") for p in tbl.column("id").to_pylist()]  # JPEG: lossy
    np.testing.assert_allclose(np.asarray(tbl.column("vector").to_pylist()), clip.encode_images(decoded), atol=1e-5)
    s = json.loads(js.read_text())
    assert s["n"] == 4 and s["dim"] == 24 and s["fingerprint"]["pooling"].startswith("image:")
    # the second run reads the cache (keyed by file content): the image tower is not called
    monkeypatch.setattr(clip, "encode_images", lambda *a, **k: pytest.fail("image tower called despite the cache"))
    assert run(["embed", str(folder), "--model", f"hf-clip:{clip_dir}", "-o", str(tmp_path / "again.parquet")]) == 0


def test_image_inputs_errors(clip_dir, tmp_path, capsys, bundled_encoder):
    folder = tmp_path / "imgs"
    folder.mkdir()
    (folder / "x.png").write_bytes(b"not a png")
    assert run(["embed", str(folder), "--model", f"hf-clip:{clip_dir}", "-o", str(tmp_path / "o.parquet")]) == 2
    assert "cannot read image" in capsys.readouterr().err
    _images(1)[0].save(folder / "x.png")
    assert run(["embed", str(folder), "-o", str(tmp_path / "o.parquet")]) == 2  # the text-only default model
    assert "embeds text only" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(["embed", str(empty), "--model", f"hf-clip:{clip_dir}", "-o", str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert "no PNG/JPEG images" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.parquet").exists()


def test_hf_clip_load_errors(tmp_path, clip_dir):
    from normscope.encoders.bundled import bundled_model_path

    with pytest.raises(ModelError, match="not a CLIP checkpoint"):
        load_encoder(f"hf-clip:{bundled_model_path()}", fresh=True)  # a BERT folder
    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    broken.mkdir()
    for f in clip_dir.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    weights = load_file(broken / "model.safetensors")
    del weights["visual_projection.weight"]
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelError, match="lacks 1 CLIP weights.*visual_projection.weight.*random"):
        load_encoder(f"hf-clip:{broken}", fresh=True)
    with pytest.raises(ModelError, match="HF_HUB_OFFLINE"):
        load_encoder("hf-clip:openai/clip-vit-base-patch32", fresh=True)  # no hub here, not cached


def test_open_clip_without_working_torchvision_says_so(tmp_path, monkeypatch):
    """The CPU build of torch with PyPI's torchvision: importing open_clip raises torchvision's RuntimeError."""
    from normscope import encoders

    fake = tmp_path / "site" / "open_clip"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "open_clip", raising=False)
    monkeypatch.setattr(encoders, "_build_memo", functools.lru_cache(maxsize=8)(encoders._build))
    with pytest.raises(ModelError, match=r"torchvision::nms does not exist.*hf-clip:openai/clip-vit-base-patch32"):
        load_encoder("open_clip:ViT-B-32/laion2b_s34b_b79k")


# ---- the probe differentiates through both towers ------------------------------------------------


def _fd_check(ad, m, items, pairs, tau):
    """(E8) moments of the probe against float64 central differences along the same -g (the MiniLM test's
    method, with one Richardson step: the tiny random towers are more curved than MiniLM along g)."""
    from normscope.pairs import sample_pair_batches
    from normscope.probes import symmetric_info_nce

    n_pairs = len(pairs[0])
    idx = sample_pair_batches(n_pairs, 4, 1, 1)[0]
    theta = {k: v.detach().clone().requires_grad_(True) for k, v in ad.parameters().items()}
    zl = ad.embed(theta, ad.features(pairs[0], idx, "query"), "query")
    zr = ad.embed(theta, ad.features(pairs[1], idx, "doc"), "doc")
    grads = torch.autograd.grad(symmetric_info_nce(zl, zr, tau), list(theta.values()), allow_unused=True)
    g = {k: (gr if gr is not None else torch.zeros_like(theta[k])) for k, gr in zip(theta, grads)}
    ad64 = ad.with_dtype(torch.float64)
    th64 = {k: v.double() for k, v in ad64.parameters().items()}
    f = ad64.features(items, range(len(items)), "query")
    def central(h):  # (f(theta - h g) - f(theta + h g)) / 2h = J(-g) + O(h^2)
        with torch.no_grad():
            zp = ad64.embed({k: th64[k] - h * g[k].double() for k in th64}, f, "query")
            zm = ad64.embed({k: th64[k] + h * g[k].double() for k in th64}, f, "query")
        return (zp - zm) / (2 * h)

    with torch.no_grad():
        z = ad64.embed(th64, f, "query")
    h = 1e-3 / float(torch.sqrt(sum((v.double() ** 2).sum() for v in g.values())))
    a_fd = (4 * central(h / 2) - central(h)) / 3  # Richardson: O(h^4)
    aa_fd = (a_fd**2).sum(1).numpy()
    za_fd = (z * a_fd).sum(1).numpy()
    assert aa_fd.min() > 0  # the step moves every probe item
    np.testing.assert_allclose(m.aa[0], aa_fd, rtol=1e-4)
    np.testing.assert_allclose(m.za[0], za_fd, rtol=1e-3, atol=1e-4 * np.sqrt(aa_fd.max()) * float(z.norm(dim=1).max()))
    np.testing.assert_allclose(m.r, z.norm(dim=1).numpy(), rtol=1e-5)


def test_probe_jvp_through_the_text_tower(clip):
    from normscope.probes import TextEncoderAdapter, probe_moments

    pairs = (TEXTS, ["cat", "dog", "the", "and", "a cat of the dog", "the dog"])
    ad = TextEncoderAdapter(clip)
    try:
        m = probe_moments(ad, TEXTS[:4], pairs, batch_size=4, batches=1, tau=clip.temperature, seed=1)
        _fd_check(ad, m, TEXTS[:4], pairs, clip.temperature)
        np.testing.assert_allclose(m.r, np.linalg.norm(clip.encode(TEXTS[:4]), axis=1), rtol=1e-5)
    finally:
        ad.close()


def test_probe_jvp_through_the_image_tower(clip):
    """Two towers: probe items are images (query = image tower), pairs are image-text as in CLIP training."""
    from _probe_call import run_probe
    from normscope.probes import ModuleAdapter, probe_moments

    pixels = clip.pixel_values(_images(6, seed=5))
    ids = clip.tokenize(TEXTS)["input_ids"]
    ad = ModuleAdapter(clip.image_module, clip.module, name="tiny-clip")
    m = probe_moments(ad, pixels[:4], (pixels, ids), batch_size=4, batches=1, tau=clip.temperature, seed=1)
    _fd_check(ad, m, pixels[:4], (pixels, ids), clip.temperature)
    np.testing.assert_allclose(m.r, np.linalg.norm(clip.encode_images(_images(6, seed=5)[:4]), axis=1), rtol=1e-5)
    res = run_probe(ad, pixels, (pixels, ids), batch_size=4, batches=2, tau=clip.temperature, lr=5e-4,
                    weight_decay=0.2, seed=0, n_boot=50)
    assert res.summary["n_items"] == 6
    assert np.isfinite(res.items[["d1", "s", "heat", "lambda_rad"]].to_numpy()).all()


# ---- CIFAR-10H end to end on a folder named as the CIFAR-10 test set -----------------------------


CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


@pytest.mark.slow
def test_cifar10h_on_a_folder_of_test_images(clip, clip_dir, tmp_path, shared_data, capsys):
    from PIL import Image

    from normscope.signals import cifar10h_entropy

    probs = np.load(shared_data / "cifar10h" / "cifar10h-probs.npy")
    rng = np.random.default_rng(7)
    arr = rng.integers(0, 256, size=(10_000, 32, 32, 3), dtype=np.uint8)
    folder = tmp_path / "cifar10-test"
    for c in CLASSES:
        (folder / c).mkdir(parents=True)
    for i in range(10_000):  # ImageFolder layout, files named by their position in the test set
        Image.fromarray(arr[i]).save(folder / CLASSES[int(probs[i].argmax())] / f"{i:05d}.png", compress_level=1)
    js, out = tmp_path / "c.json", tmp_path / "c.parquet"
    argv = ["correlate", "--signal", "uncertainty", "--dataset", "cifar10h", "--images", str(folder),
            "--model", f"hf-clip:{clip_dir}", "--n-items", "120", "--n-boot", "50", "--n-perm", "50", "--json", str(js), "-o", str(out)]
    assert run(argv) == 0
    s = json.loads(js.read_text())
    df = pq.read_table(out).to_pandas()
    assert s["n"] == 120 and s["dataset"].startswith("CIFAR-10H")
    keep = np.array([int(t.rsplit("-", 1)[1]) for t in df["item"]])
    ref = np.linalg.norm(clip.encode_images([Image.fromarray(a) for a in arr[keep]]), axis=1)
    np.testing.assert_allclose(df["norm"], ref, rtol=1e-5)  # image i of the folder is test image i
    np.testing.assert_allclose(df["covariate"], cifar10h_entropy()[keep])
    # per-class numbering (position repeated across class folders) is refused with a one-line reason
    home = CLASSES[int(probs[1].argmax())]
    other = next(c for c in CLASSES if c != home)
    (folder / other / "00001.png").write_bytes((folder / home / "00001.png").read_bytes())
    capsys.readouterr()
    assert run(argv) == 2
    assert "named twice" in capsys.readouterr().err
