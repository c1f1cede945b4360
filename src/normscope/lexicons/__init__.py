"""Lexicons shared by the stages (a core layer): word frequency (wordfreq Zipf, SUBTLEX-US).

The correlate stage reads them as covariates and the retrieval stage as a stratifier of queries, so they
live below both (neither stage imports the other).
"""

from normscope.lexicons.frequency import SUBTLEX_CORPUS_MILLIONS, load_subtlex, subtlex_zipf, zipf_frequency

__all__ = ["SUBTLEX_CORPUS_MILLIONS", "load_subtlex", "subtlex_zipf", "zipf_frequency"]
