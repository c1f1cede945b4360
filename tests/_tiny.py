"""A tiny real sentence-transformers model for tests: a random 2-layer, 32-wide BERT (seed 0) with the bundled
MiniLM's tokenizer, mean pooling, max_seq_length 32. Shared by the tests that need a model which is fast but built
by the same libraries as a real one."""

from __future__ import annotations

from pathlib import Path


def tiny_sentence_transformer(d: Path) -> Path:
    """Build the model under ``d`` (``d/hf``: the BERT and tokenizer; ``d/st``: the sentence-transformers folder)
    and return ``d/st``."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    from normscope.encoders.bundled import bundled_model_path

    tok = AutoTokenizer.from_pretrained(str(bundled_model_path()))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(d / "hf")
    tok.save_pretrained(d / "hf")
    st = SentenceTransformer(modules=[models.Transformer(str(d / "hf"), max_seq_length=32), models.Pooling(32, "mean")])
    st.save(str(d / "st"))
    return d / "st"
