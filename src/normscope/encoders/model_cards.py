"""Published training values of the models normscope ships or adapts, each with its source.

The probe (:mod:`normscope.probes`) needs a checkpoint's training batch size B, temperature tau,
learning rate eta and weight decay lambda (docs/theory.md section 6, step 5). This table holds the values
for the models added next to the bundled MiniLM, in the key layout of
``normscope.probes.training.KNOWN_TRAINING`` (keyed by the last component of the hub id), so the
probe's table can import them. A value that is not published is absent, not guessed; where the
model card is silent and the value comes from the training code, ``source`` says so.
"""

from __future__ import annotations

__all__ = ["TRAINING_VALUES"]

TRAINING_VALUES: dict[str, dict] = {
    "all-mpnet-base-v2": {
        "batch_size": 1024,
        "tau": 0.05,
        "lr": 2e-5,
        "weight_decay": 0.0,
        "optimizer": "AdamW (transformers.AdamW, correct_bias=True)",
        "loss": "symmetric in-batch cross-entropy on cosine similarities scaled by 20 (tau = 1/20)",
        "steps": 100_000,
        "warmup_steps": 500,
        "train_max_seq_length": 128,
        "source": (
            "model card (README.md inside the all-mpnet-base-v2 archive of normscope[mpnet]): fine-tuned from "
            "microsoft/mpnet-base with a contrastive objective (cosine similarity of every sentence pair in the "
            "batch, cross-entropy against the true pairs), 100k steps, batch size 1024 (128 per TPU core, 8 "
            "cores), learning-rate warm-up 500 steps, sequence length 128, AdamW with learning rate 2e-5; the "
            "card names its train_script.py. Not in the card, from that training script (the 1B-pairs "
            "project's train_script.py): scale 20 (tau = 0.05), embeddings all-gathered across cores (so the "
            "1024 negatives), symmetric loss for pairs, gradient clipping at norm 1, and the optimizer built as "
            "AdamW(params, lr=2e-5, correct_bias=True) with no weight_decay argument, i.e. transformers' "
            "default 0.0"
        ),
    },
    "paraphrase-MiniLM-L3-v2": {
        "batch_size": 256,
        "tau": 0.05,
        "lr": 2e-5,
        "weight_decay": 0.01,
        "optimizer": "AdamW (transformers.AdamW, decoupled weight decay 0.01 on all weights but biases and LayerNorm)",
        "loss": "MultipleNegativesRankingLoss: in-batch cross-entropy on cosine similarities scaled by 20 (tau = 1/20)",
        "epochs": 1,
        "warmup_steps": 500,
        "schedule": "WarmupLinear: linear warm-up (500 steps) then linear decay to 0",
        "train_max_seq_length": 100,
        "gradient_clipping": "gradient-norm clipping at 1",
        "source": (
            "model card (huggingface.co/sentence-transformers/paraphrase-MiniLM-L3-v2, README.md): a 3-layer MiniLM, "
            "mean pooling, max_seq_length 128, trained on the paraphrase data sets it lists (AllNLI, "
            "sentence-compression, SimpleWiki, altlex, msmarco-triplets, quora_duplicates, coco_captions, "
            "flickr30k_captions, yahoo_answers_title_question, S2ORC_citation_pairs, "
            "stackexchange_duplicate_questions, wiki-atomic-edits); the card gives no hyperparameters. They are "
            "the recipe's published settings: sentence-transformers examples/training/paraphrases/training.py "
            "(MultipleNegativesRankingLoss, batches of 256 pairs from one data set at a time, 1 epoch, warm-up "
            "500 steps, max_seq_length 100) and the defaults of the SentenceTransformer.fit it calls "
            "(sentence-transformers 1.x/2.x: transformers.AdamW, lr 2e-5, weight_decay 0.01 except bias and "
            "LayerNorm, scheduler WarmupLinear, max_grad_norm 1) and of MultipleNegativesRankingLoss (scale 20, "
            "cosine similarity). The recipe is the published one for the paraphrase models, not a log of this "
            "checkpoint's run"
        ),
    },
    "clip-vit-base-patch32": {
        "batch_size": 32768,
        "lr": 5e-4,
        "weight_decay": 0.2,
        "optimizer": "Adam with decoupled weight decay (AdamW), beta2 0.98, eps 1e-6",
        "loss": "symmetric InfoNCE over image-text pairs with a learned temperature",
        "epochs": 32,
        "warmup_steps": 2000,
        "tau_note": (
            "tau is learned (initialised at 0.07, logit scale clipped at 100, so tau >= 0.01); the checkpoint "
            "stores it: HFClipEncoder.temperature = 1 / exp(logit_scale)"
        ),
        "source": (
            "Radford et al. 2021, 'Learning Transferable Visual Models From Natural Language Supervision', "
            "appendix F: Table 19 (batch size 32768, weight decay 0.2, warm-up 2000 iterations, 32 epochs, "
            "temperature initialised 0.07 and clipped at a logit scale of 100, Adam beta2 0.98 and eps 1e-6 "
            "for ViTs) and Table 21 (ViT-B/32 learning rate 5e-4)"
        ),
    },
}
