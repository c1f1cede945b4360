"""The input embedding table as a trace of the mechanism (``normscope tokens``).

- :mod:`~normscope.tokens.table`: read a model's input embedding table and vocabulary, classify rows
  (word, subword, special, unused), Zipf frequency of each token;
- :func:`run_tokens`: row norm vs frequency among used tokens (Spearman, CIs over tokens) and never-used
  vs used rows (difference and ratio of medians, CIs), returning a :class:`TokensResult`;
- :func:`plot_tokens`: its figure.
"""

from normscope.tokens.figure import plot_tokens
from normscope.tokens.result import TokensResult
from normscope.tokens.run import run_tokens, tokens_statistics
from normscope.tokens.table import KINDS, classify_tokens, embedding_table_of, token_table, token_zipf

__all__ = ["run_tokens", "tokens_statistics", "TokensResult", "plot_tokens", "KINDS", "classify_tokens",
           "embedding_table_of", "token_table", "token_zipf"]
