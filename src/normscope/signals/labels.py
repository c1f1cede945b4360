"""Names shared by the correlate modules: signals, controls, covariate labels, the minimum item count."""

from __future__ import annotations

from normscope.requests.correlate import SIGNALS, Signal  # the signals, in the report's order: defined with the request

__all__ = ["Signal", "SIGNALS", "LENGTH_DESIGNS", "SIGNAL_DATASETS", "SIGNAL_WORDS", "CONTROLS", "MIN_VALID", "COVARIATE_LABEL",
           "covariate_label", "model_name"]

#: The length-matched designs the report runs beside the signals (``report --signals`` names them too):
#: generated TreeCut-style and RuleTaker-style items, WordNet hypernym chains, the FEVEROUS dev sample, SciFact
#: titles against their word-shuffled copies.
LENGTH_DESIGNS: tuple[str, ...] = ("treecut", "ruletaker", "wordnet_chains", "feverous", "shuffle")
#: The dataset (:mod:`normscope.data` name) each signal reads by default (frequency: wordfreq, a package).
SIGNAL_DATASETS = {"specificity": "wordnet", "concreteness": "concreteness", "uncertainty": "chaosnli"}
#: How a sentence names each signal's covariate.
SIGNAL_WORDS = {
    "frequency": "Zipf frequency",
    "specificity": "WordNet specificity (hypernym depth)",
    "concreteness": "concreteness rating",
    "uncertainty": "human label entropy",
    "ambiguity": "the number of WordNet noun senses (ambiguity)",
}
CONTROLS = ("frequency", "length", "words")
#: Fewest items with a covariate value (per source too) for a correlation.
MIN_VALID = 10
COVARIATE_LABEL = {
    "specificity": "WordNet hypernym depth of first noun sense (edges)",
    "frequency": "Zipf frequency, wordfreq (log10 per 10^9 words)",
    "concreteness": "concreteness, Brysbaert et al. 2014 (1 abstract - 5 concrete)",
    "uncertainty": "human label entropy (bits)",
}
_MEASURE_UNIT = {"min_depth": "hypernym edges to entity.n.01", "max_depth": "hypernym edges to entity.n.01",
                 "n_hyponyms": "transitive hyponym count", "n_senses": "noun senses, all of them"}


def model_name(encoder, model: str) -> str:
    """The encoder's fingerprint name (``model`` without an encoder; the class name without a fingerprint)."""
    if encoder is None:
        return model
    fp = getattr(encoder, "fingerprint", None)
    return str(getattr(fp, "name", None) or type(encoder).__name__)


def covariate_label(signal: str, measure: str, *, user: bool, subtlex: bool) -> str:
    """Axis and table label of the covariate (``user``: from a covariate file; ``subtlex``: SUBTLEX-US frequency)."""
    if user:
        return f"values of the user covariate file (read as {signal})"
    if signal == "specificity" and measure == "n_senses":
        return "WordNet noun senses of the word (all of them: ambiguity)"
    if signal == "specificity":
        return f"WordNet {measure} of the first noun sense ({_MEASURE_UNIT[measure]})"
    if signal == "frequency" and subtlex:
        return "Zipf frequency, SUBTLEX-US (van Heuven et al. 2014; log10 per 10^9 words)"
    return COVARIATE_LABEL[signal]
