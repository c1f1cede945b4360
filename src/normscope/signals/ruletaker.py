"""RuleTaker-style theories (facts, rules, a statement), labelled by forward chaining, from normscope's own generator.

Written from the description of RuleTaker (Clark, Tafjord & Richardson, IJCAI 2020, "Transformers as
Soft Reasoners over Language"): a theory of facts ("Bob is big.", "Anne is not red.") and rules
("If someone is big and kind then they are green.") and a statement ("Bob is green."). Under the
open-world reading the statement is **True** (it follows by forward chaining), **False** (its negation
follows) or **Unknown** (neither follows: the question has no answer from the theory), with the proof
depth (0 = a stated fact) of a True or False statement. Unknown statements are the unanswerable
items of the abstention row. Contradictory theories are redrawn. This is not the paper's data: the
names, attributes and sizes are normscope's. No network is used.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from normscope.errors import InputError

__all__ = ["RuleTakerItem", "generate_ruletaker", "forward_chain", "ENTITIES", "ATTRIBUTES"]

ENTITIES = ("Bob", "Anne", "Charlie", "Dave", "Erin", "Fiona", "Gary", "Harry")
ATTRIBUTES = ("big", "red", "kind", "green", "cold", "round", "young", "smart", "quiet", "rough", "blue", "white",
              "nice", "furry")

#: A literal: (entity, attribute, positive).
Literal = tuple


@dataclasses.dataclass(frozen=True)
class RuleTakerItem:
    """One theory and statement.

    Attributes
    ----------
    id : str
        ``ruletaker-<seed>-<index>``.
    text : str
        The theory's sentences (seeded order), then ``"Statement: <statement>"``.
    label : {"True", "False", "Unknown"}
    answerable : bool
        ``label != "Unknown"``.
    depth : int or None
        Forward-chaining depth of the proof of the statement (True) or of its negation (False).
    facts : tuple of (str, str, bool)
    rules : tuple of (tuple of str, str, bool)
        (condition attributes, conclusion attribute, conclusion positive), for any entity ("someone").
    statement : (str, str, bool)
    """

    id: str
    text: str
    label: str
    answerable: bool
    depth: int | None
    facts: tuple
    rules: tuple
    statement: tuple


def forward_chain(facts, rules) -> dict:
    """Closure of ``facts`` under ``rules`` with each literal's minimal proof depth.

    Round ``d`` fires every rule whose conditions were all known before the round; new literals get
    depth ``d`` (breadth-first, so each depth is minimal). Returns ``{(entity, attribute, positive): depth}``.
    """
    known = {tuple(f): 0 for f in facts}
    entities = sorted({f[0] for f in facts})
    d = 0
    while True:
        d += 1
        new = {}
        for conds, attr, pos in rules:
            for e in entities:
                if all((e, c, True) in known for c in conds) and (e, attr, pos) not in known:
                    new[(e, attr, pos)] = d
        if not new:
            return known
        known.update(new)


def _sentence(lit) -> str:
    e, a, pos = lit
    return f"{e} is {'' if pos else 'not '}{a}."


def _rule_sentence(rule) -> str:
    conds, attr, pos = rule
    return f"If someone is {' and '.join(conds)} then they are {'' if pos else 'not '}{attr}."


def _theory(rng: np.random.Generator):
    ents = [ENTITIES[i] for i in rng.choice(len(ENTITIES), size=int(rng.integers(1, 4)), replace=False)]
    attrs = [ATTRIBUTES[i] for i in rng.choice(len(ATTRIBUTES), size=int(rng.integers(4, 7)), replace=False)]
    facts = {}
    for _ in range(int(rng.integers(2, 6))):
        lit = (ents[int(rng.integers(len(ents)))], attrs[int(rng.integers(len(attrs)))], bool(rng.random() < 0.8))
        facts[lit[:2]] = lit
    rules = []
    for _ in range(int(rng.integers(3, 8))):
        k = int(rng.integers(1, 3))
        idx = rng.choice(len(attrs), size=k + 1, replace=False)
        rules.append((tuple(sorted(attrs[i] for i in idx[:k])), attrs[idx[k]], bool(rng.random() < 0.8)))
    return ents, attrs, tuple(facts.values()), tuple(dict.fromkeys(rules))


def _one(seed: int, index: int, want_known: bool, max_depth: int) -> RuleTakerItem:
    rng = np.random.default_rng([int(seed), int(index), 0x5A])
    depth = int(rng.integers(0, max_depth + 1)) if want_known else None
    for _ in range(5000):
        ents, attrs, facts, rules = _theory(rng)
        closure = forward_chain(facts, rules)
        if any((e, a, not p) in closure for e, a, p in closure):
            continue  # contradictory theory: redraw
        if want_known:
            lits = sorted(lit for lit, d in closure.items() if d == depth)
            if not lits:
                continue
            lit = lits[int(rng.integers(len(lits)))]
            label = "True" if rng.random() < 0.5 else "False"
            stmt = lit if label == "True" else (lit[0], lit[1], not lit[2])
        else:
            named = sorted({f[0] for f in facts})
            free = [(e, a, p) for e in named for a in attrs for p in (True, False)
                    if (e, a, True) not in closure and (e, a, False) not in closure]
            if not free:
                continue
            stmt, label, depth = free[int(rng.integers(len(free)))], "Unknown", None
        sents = [_sentence(f) for f in facts] + [_rule_sentence(r) for r in rules]
        sents = [sents[i] for i in rng.permutation(len(sents))]
        text = " ".join(sents) + f" Statement: {_sentence(stmt)}"
        return RuleTakerItem(id=f"ruletaker-{seed}-{index}", text=text, label=label, answerable=label != "Unknown",
                             depth=depth, facts=facts, rules=rules, statement=stmt)
    raise InputError(f"no RuleTaker theory with the wanted label in 5000 draws (seed {seed}, item {index})")


def generate_ruletaker(n: int, *, max_depth: int = 3, seed: int = 0) -> list[RuleTakerItem]:
    """``n`` theories with a statement: even index answerable (True or False, proof depth drawn in
    0..``max_depth``), odd index Unknown.

    Parameters
    ----------
    n : int
        Number of items (>= 2).
    max_depth : int
        Largest proof depth of an answerable statement (0..5).
    seed : int

    Returns
    -------
    list of RuleTakerItem
        Item ``i`` depends on ``(seed, i)`` only.

    Raises
    ------
    InputError
        ``n < 2`` or ``max_depth`` outside 0..5.
    """
    if n < 2:
        raise InputError(f"n must be >= 2, got {n}")
    if not 0 <= max_depth <= 5:
        raise InputError(f"max_depth must lie in 0..5, got {max_depth}")
    return [_one(seed, i, i % 2 == 0, max_depth) for i in range(n)]
