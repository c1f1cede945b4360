"""TreeCut-style math word problems, answerable and unanswerable, from normscope's own seeded generator.

Written from the description of TreeCut (Ouyang, ACL 2025 Findings; arXiv 2502.13442): a problem is a
tree of linear equations over item prices. One price is given (the root), every other price follows
from its parent's through one equation (an edge), and the question asks for the price at depth
``ans_depth`` below the root. An **unanswerable** problem has the edge entering the query's path at
depth ``cut_depth`` removed: the query's subtree is then cut from the given price and its prices
have one free parameter, so the question has no answer. The knobs are the paper's: ``num_vars``
(the number of prices), ``ans_depth``, ``cut_depth``. This is not the paper's data: the wording,
item names and equation forms are normscope's. No network is used.

:func:`generate_treecut` returns :class:`TreeCutProblem`s; each problem is fixed by ``(seed, index)``
alone, so a larger ``n`` extends a smaller one.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from normscope.errors import InputError

__all__ = ["TreeCutProblem", "generate_treecut", "ITEMS"]

#: Item names (regular plurals: name + "s").
ITEMS = ("apple", "pencil", "notebook", "eraser", "ruler", "marker", "candle", "cookie", "lemon", "onion", "carrot",
         "banana", "bagel", "muffin", "sticker", "magnet", "button", "ribbon", "balloon", "napkin", "towel", "basket",
         "bucket", "kettle", "spoon", "plate", "bottle", "lamp", "mirror", "pillow")


@dataclasses.dataclass(frozen=True)
class TreeCutProblem:
    """One problem.

    Attributes
    ----------
    id : str
        ``treecut-<seed>-<index>``.
    text : str
        The problem's sentences (in a seeded order) and the question.
    answerable : bool
    answer : int or None
        The queried price (dollars) when answerable.
    query : str
        The queried item.
    equations : tuple of (dict of str -> int, int)
        The stated equations in text order, ``({item: coefficient}, right-hand side)``.
    cut : tuple of (str, str) or None
        The removed edge (parent item, child item) of an unanswerable problem; its equation is ``cut_equation``.
    cut_equation : (dict, int) or None
    num_vars, ans_depth, cut_depth : int
        The knobs (``cut_depth`` 0 for an answerable problem).
    prices : dict of str -> int
        The planted prices (for tests).
    """

    id: str
    text: str
    answerable: bool
    answer: int | None
    query: str
    equations: tuple
    cut: tuple | None
    cut_equation: tuple | None
    num_vars: int
    ans_depth: int
    cut_depth: int
    prices: dict


def _pick(rng: np.random.Generator, knob, name: str) -> int:
    if isinstance(knob, int):
        return knob
    lo, hi = knob
    if lo > hi:
        raise InputError(f"{name}: range ({lo}, {hi}) is empty")
    return int(rng.integers(lo, hi + 1))


def _usd(k: int) -> str:
    return f"{k} dollar{'' if k == 1 else 's'}"


def _a(name: str) -> str:
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _edge(rng: np.random.Generator, p: str, c: str, vp: int, vc: int) -> tuple[str, tuple]:
    """One sentence fixing ``c``'s price from ``p``'s, and its equation."""
    forms = ["sum"]
    if vc != vp:
        forms.append("more" if vc > vp else "less")
    else:
        forms.append("same")
    if vc % vp == 0 and vc // vp >= 2:
        forms.append("times")
    form = forms[int(rng.integers(len(forms)))]
    if form == "more":
        return f"{_a(c).capitalize()} costs {_usd(vc - vp)} more than {_a(p)}.", ({c: 1, p: -1}, vc - vp)
    if form == "less":
        return f"{_a(c).capitalize()} costs {_usd(vp - vc)} less than {_a(p)}.", ({c: 1, p: -1}, vc - vp)
    if form == "same":
        return f"{_a(c).capitalize()} costs as much as {_a(p)}.", ({c: 1, p: -1}, 0)
    if form == "times":
        return f"{_a(c).capitalize()} costs {vc // vp} times as much as {_a(p)}.", ({c: 1, p: -(vc // vp)}, 0)
    a, b = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    np_, nc = (f"{a} {p}s" if a > 1 else f"1 {p}"), (f"{b} {c}s" if b > 1 else f"1 {c}")
    return f"{np_} and {nc} cost {_usd(a * vp + b * vc)} in total.", ({p: a, c: b}, a * vp + b * vc)


def _one(seed: int, index: int, answerable: bool, num_vars, ans_depth, cut_depth) -> TreeCutProblem:
    rng = np.random.default_rng([int(seed), int(index), 0x7C])
    v = _pick(rng, num_vars, "num_vars")
    d = _pick(rng, ans_depth if isinstance(ans_depth, int) else (ans_depth[0], min(ans_depth[1], v - 1)),
              "ans_depth (at most num_vars - 1)")
    if d < 1 or v < d + 1:
        raise InputError(f"num_vars = {v} and ans_depth = {d}: need ans_depth >= 1 and num_vars >= ans_depth + 1")
    k = 0 if answerable else _pick(rng, cut_depth if cut_depth is not None else (1, d), "cut_depth")
    if not answerable and not 1 <= k <= d:
        raise InputError(f"cut_depth = {k} must lie in 1..ans_depth ({d})")
    names = [ITEMS[i] for i in rng.choice(len(ITEMS), size=v, replace=False)]
    prices = {nm: int(rng.integers(2, 21)) for nm in names}
    parent = {names[i]: names[i - 1] for i in range(1, d + 1)}  # the path root -> query
    for i in range(d + 1, v):
        parent[names[i]] = names[int(rng.integers(0, i))]
    query = names[d]
    sentences = [(f"{_a(names[0]).capitalize()} costs {_usd(prices[names[0]])}.", ({names[0]: 1}, prices[names[0]]))]
    cut = cut_eq = None
    for c, p in parent.items():
        s, eq = _edge(rng, p, c, prices[p], prices[c])
        if not answerable and c == names[k]:
            cut, cut_eq = (p, c), eq
            continue
        sentences.append((s, eq))
    order = rng.permutation(len(sentences))
    sentences = [sentences[i] for i in order]
    text = " ".join(s for s, _ in sentences) + f" How much does {_a(query)} cost?"
    return TreeCutProblem(id=f"treecut-{seed}-{index}", text=text, answerable=answerable,
                          answer=prices[query] if answerable else None, query=query,
                          equations=tuple(eq for _, eq in sentences), cut=cut, cut_equation=cut_eq, num_vars=v,
                          ans_depth=d, cut_depth=k, prices=prices)


def generate_treecut(n: int, *, num_vars: int | tuple[int, int] = (4, 8), ans_depth: int | tuple[int, int] = (2, 4),
                     cut_depth: int | tuple[int, int] | None = None, seed: int = 0) -> list[TreeCutProblem]:
    """``n`` TreeCut-style problems, alternately answerable (even index) and unanswerable (odd index).

    Parameters
    ----------
    n : int
        Number of problems (>= 2).
    num_vars, ans_depth : int or (low, high)
        Number of prices and depth of the queried price below the given one; a range is drawn per
        problem (inclusive; the depth's upper end is capped at ``num_vars - 1``). ``num_vars >= ans_depth + 1``.
    cut_depth : int or (low, high) or None
        Depth (1..ans_depth) of the removed edge on the query's path; default drawn in 1..ans_depth.
    seed : int

    Returns
    -------
    list of TreeCutProblem
        Problem ``i`` depends on ``(seed, i)`` only.

    Raises
    ------
    InputError
        ``n < 2`` or knobs that admit no problem.
    """
    if n < 2:
        raise InputError(f"n must be >= 2, got {n}")
    return [_one(seed, i, i % 2 == 0, num_vars, ans_depth, cut_depth) for i in range(n)]
