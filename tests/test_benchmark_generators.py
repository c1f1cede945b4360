"""normscope's own TreeCut and RuleTaker generators (issue 39, item 4 b/c): deterministic given a seed, and every
label checked independently from the *text*: TreeCut problems parsed back into linear equations and solved (the
query is determined exactly when answerable; the cut equation restores it); RuleTaker theories parsed back and
proved by a forward-chaining prover written here (labels and proof depths)."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from normscope.errors import InputError
from normscope.signals.ruletaker import generate_ruletaker
from normscope.signals.treecut import generate_treecut

# --- TreeCut -------------------------------------------------------------------------------------------------

_N = r"(\d+)"
_IT = r"(?:an?|1) (\w+?)"
_PATTERNS = [
    (re.compile(rf"^{_IT} costs {_N} dollars?\.$", re.I), lambda m: ({m[1]: 1}, int(m[2]))),
    (re.compile(rf"^{_IT} costs {_N} dollars? more than {_IT}\.$", re.I), lambda m: ({m[1]: 1, m[3]: -1}, int(m[2]))),
    (re.compile(rf"^{_IT} costs {_N} dollars? less than {_IT}\.$", re.I), lambda m: ({m[1]: 1, m[3]: -1}, -int(m[2]))),
    (re.compile(rf"^{_IT} costs as much as {_IT}\.$", re.I), lambda m: ({m[1]: 1, m[2]: -1}, 0)),
    (re.compile(rf"^{_IT} costs {_N} times as much as {_IT}\.$", re.I), lambda m: ({m[1]: 1, m[3]: -int(m[2])}, 0)),
]
_SUM = re.compile(r"^(\d+) (\w+?)s? and (\d+) (\w+?)s? cost (\d+) dollars? in total\.$")


def _parse_treecut(text: str):
    body, question = text.rsplit(" How much does ", 1)
    query = re.match(r"^an? (\w+) cost\?$", question)[1]
    eqs = []
    for s in re.split(r"(?<=\.) ", body):
        m = _SUM.match(s)
        if m:
            a, p, b, c, tot = int(m[1]), m[2], int(m[3]), m[4], int(m[5])
            eqs.append(({p: a, c: b} if p != c else {p: a + b}, tot))
            continue
        for pat, f in _PATTERNS:
            m = pat.match(s)
            if m:
                eqs.append(f(m))
                break
        else:
            raise AssertionError(f"unparsed sentence {s!r}")
    return eqs, query


def _determined(eqs, names, query):
    """(determined, value): the query is fixed by the equations iff e_query lies in the row space."""
    col = {n: i for i, n in enumerate(names)}
    a = np.zeros((len(eqs), len(names)))
    b = np.zeros(len(eqs))
    for r, (coef, rhs) in enumerate(eqs):
        for k, v in coef.items():
            a[r, col[k]] += v
        b[r] = rhs
    e = np.zeros(len(names))
    e[col[query]] = 1
    rank = np.linalg.matrix_rank(a)
    if np.linalg.matrix_rank(np.vstack([a, e])) != rank:
        return False, None
    return True, float(np.linalg.lstsq(a, b, rcond=None)[0][col[query]])


def test_treecut_is_deterministic_and_extends():
    a, b = generate_treecut(30, seed=3), generate_treecut(30, seed=3)
    assert [p.text for p in a] == [p.text for p in b]
    assert [p.text for p in generate_treecut(12, seed=3)] == [p.text for p in a[:12]]
    assert [p.text for p in generate_treecut(30, seed=4)] != [p.text for p in a]
    assert sum(p.answerable for p in a) == 15 and len({p.id for p in a}) == 30
    with pytest.raises(InputError):
        generate_treecut(4, num_vars=3, ans_depth=3)


@pytest.mark.parametrize("knobs", [{}, {"num_vars": 6, "ans_depth": 4, "cut_depth": 2}, {"num_vars": (3, 5), "ans_depth": 1}])
def test_treecut_labels_by_solving_the_text(knobs):
    probs = generate_treecut(60, seed=11, **knobs)
    for p in probs:
        eqs, query = _parse_treecut(p.text)
        assert query == p.query
        assert sorted(map(repr, eqs)) == sorted(map(repr, p.equations))  # the text states exactly these
        names = sorted(p.prices)
        for coef, rhs in eqs:  # every statement is true of the planted prices
            assert sum(v * p.prices[k] for k, v in coef.items()) == rhs
        ok, val = _determined(eqs, names, query)
        assert len(eqs) == p.num_vars - (0 if p.answerable else 1)
        if p.answerable:
            assert ok and val == pytest.approx(p.answer) and p.answer == p.prices[query] and p.cut is None
        else:
            assert not ok and p.answer is None
            # exactly the cut removes the answer: put back, the planted price follows
            ok2, val2 = _determined(eqs + [p.cut_equation], names, query)
            assert ok2 and val2 == pytest.approx(p.prices[query])
            assert 1 <= p.cut_depth <= p.ans_depth
            if "cut_depth" in knobs:
                assert p.cut_depth == knobs["cut_depth"]


# --- RuleTaker -----------------------------------------------------------------------------------------------

_FACT = re.compile(r"^(\w+) is (not )?(\w+)\.$")
_RULE = re.compile(r"^If someone is (.+) then they are (not )?(\w+)\.$")


def _parse_ruletaker(text: str):
    theory, stmt = text.split(" Statement: ")
    facts, rules = set(), []
    for s in re.split(r"(?<=\.) ", theory):
        m = _RULE.match(s)
        if m:
            rules.append((m[1].split(" and "), m[3], m[2] is None))
            continue
        m = _FACT.match(s)
        assert m, s
        facts.add((m[1], m[3], m[2] is None))
    m = _FACT.match(stmt)
    return facts, rules, (m[1], m[3], m[2] is None)


def _prove(facts, rules):
    """Minimal proof depth of every derivable literal by relaxation to a fixed point (not breadth-first rounds)."""
    depth = {f: 0 for f in facts}
    people = {f[0] for f in facts}
    changed = True
    while changed:
        changed = False
        for conds, attr, pos in rules:
            for e in people:
                ds = [depth.get((e, c, True)) for c in conds]
                if None in ds:
                    continue
                d = 1 + max(ds)
                if d < depth.get((e, attr, pos), 10 ** 9):
                    depth[(e, attr, pos)] = d
                    changed = True
    return depth


def test_ruletaker_is_deterministic():
    a = generate_ruletaker(40, seed=2)
    assert [x.text for x in a] == [x.text for x in generate_ruletaker(40, seed=2)]
    assert [x.text for x in generate_ruletaker(10, seed=2)] == [x.text for x in a[:10]]
    assert [x.text for x in generate_ruletaker(40, seed=5)] != [x.text for x in a]
    with pytest.raises(InputError):
        generate_ruletaker(10, max_depth=9)


def test_ruletaker_labels_by_an_independent_prover():
    items = generate_ruletaker(160, seed=7, max_depth=3)
    seen = set()
    for x in items:
        facts, rules, stmt = _parse_ruletaker(x.text)
        assert stmt == x.statement
        d = _prove(facts, rules)
        assert not any((e, a, not p) in d for e, a, p in d)  # no contradiction
        e, a, p = stmt
        if stmt in d:
            want, depth = "True", d[stmt]
        elif (e, a, not p) in d:
            want, depth = "False", d[(e, a, not p)]
        else:
            want, depth = "Unknown", None
        assert (x.label, x.depth) == (want, depth), x.text
        assert x.answerable == (want != "Unknown")
        seen.add((x.label, x.depth))
    # every proof depth 0..3 and all three labels occur
    assert {dd for lab, dd in seen if lab != "Unknown"} == {0, 1, 2, 3} and {"True", "False", "Unknown"} <= {
        lab for lab, _ in seen}


def test_fraction_free_sum_parse():
    # the parser reads "1 apple and 3 apples" style sums with one item on both sides as one coefficient
    eqs, q = _parse_treecut("A pen costs 3 dollars. 2 pens and 1 cup cost 10 dollars in total. How much does a cup cost?")
    assert eqs == [({"pen": 1}, 3), ({"pen": 2, "cup": 1}, 10)] and q == "cup"
    assert _determined(eqs, ["cup", "pen"], "cup") == (True, pytest.approx(float(Fraction(4))))
