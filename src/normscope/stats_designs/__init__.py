"""Correlation statistics for designs beyond one sample of independent pairs: strata and paired comparisons.

- :func:`stratified_partial_spearman`: items pooled from several sources, with the source as a
  control and resampling / permutation **within** sources (exchangeability blocks);
- :func:`correlation_difference`: the difference of two correlations with one reference (e.g.
  Spearman of a norm-aware score and of cosine with the same human ratings), with a **paired**
  bootstrap CI;
- :func:`length_matched_pairs` / :func:`matched_comparison`: two groups of items (e.g. general vs
  specific captions, answerable vs unanswerable problems) paired **at equal token count**, the
  within-pair share with a Wilson CI and a sign test beside the pooled (unmatched) share, so that
  an effect of length alone shows as a pooled effect and a null matched one;
- :func:`within_length_spearman`, :func:`length_matched_within`, :func:`matched_concordance`: the
  same design for a continuous covariate of one item set: the partial Spearman rho **within strata
  of equal token count** (items compared only with items of their own length), and disjoint
  equal-length pairs with the share in which the item with the larger covariate has the larger norm;
- :func:`cluster_resamples`, :func:`cluster_bootstrap_ci`: a cluster (block) bootstrap for items that are
  not independent (texts of one hierarchy): whole clusters resampled with replacement;
- :func:`wilson_interval`, :func:`sign_test_p`: a binomial share's Wilson score interval and the
  exact two-sided sign test.

The kernels (row-wise Pearson, ranks, SVD design bases, bootstrap and permutation blocks) are those
of :mod:`normscope.stats`, with the conventions stated there (percentile intervals, two-sided
permutation p-values ``(1 + count)/(1 + n_perm)``, memory bounded by row blocks). This package is
separate only to keep :mod:`normscope.stats` under the 600-line module limit; its two modules,
:mod:`~normscope.stats_designs.strata` and :mod:`~normscope.stats_designs.matched`, keep each part under it too.
"""

from normscope.stats_designs.matched import (
    MatchedPairs,
    cluster_bootstrap_ci,
    cluster_codes,
    cluster_resamples,
    length_matched_pairs,
    length_matched_within,
    matched_comparison,
    matched_concordance,
    sign_test_p,
    wilson_interval,
    within_length_spearman,
)
from normscope.stats_designs.strata import DifferenceResult, correlation_difference, stratified_partial_spearman

__all__ = ["stratified_partial_spearman", "DifferenceResult", "correlation_difference", "wilson_interval", "sign_test_p",
           "MatchedPairs", "length_matched_pairs", "matched_comparison", "length_matched_within",
           "matched_concordance", "within_length_spearman", "cluster_codes", "cluster_resamples", "cluster_bootstrap_ci"]
