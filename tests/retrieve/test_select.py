"""Selection (order, ties, per-document cap) against a plain sort-and-count reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evidex.retrieve import _select, select_top


def rows_of(scores: list[float], documents: int) -> st.SearchStrategy[list[tuple[float, int, int]]]:
    """Candidates as (score, document key, passage number), at most one per passage."""
    return st.lists(st.tuples(st.sampled_from(scores), st.integers(0, documents - 1), st.integers(1, 5)),
                    max_size=150, unique_by=lambda r: (r[1], r[2]))


def columns(rows: list[tuple[float, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, document keys and passage numbers of ``rows``, one array each."""
    return (np.array([r[0] for r in rows], dtype=np.float64), np.array([r[1] for r in rows], dtype=np.int32),
            np.array([r[2] for r in rows], dtype=np.int32))


@pytest.fixture(params=["python", "numpy", "sampled"])
def prefix_path(request):  # type: ignore[no-untyped-def]
    """Each test below runs with short prefixes ordered in Python (the default) and in numpy,
    and with every prefix cut at a sampled score (as thousands of candidates are)."""
    small, sample_from = _select._SMALL, _select._SAMPLE_FROM
    _select._SMALL = -1 if request.param == "numpy" else small
    _select._SAMPLE_FROM = 1 if request.param == "sampled" else sample_from
    yield request.param
    _select._SMALL, _select._SAMPLE_FROM = small, sample_from


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=rows_of([0.5, 1.0, 1.5, 2.0, 3.25], 7),
    limit=st.integers(1, 40),
    cap=st.sampled_from([None, 1, 2, 3]),
)
def test_select_top_matches_reference(
    prefix_path: str, rows: list[tuple[float, int, int]], limit: int, cap: int | None
) -> None:
    scores, dkeys, numbers = columns(rows)
    names = {d: f"doc-{(7 * d) % 5}-{d}" for d in range(7)}  # id order differs from dkey order

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        return {int(k): names[int(k)] for k in keys}

    ref: list[int] = []
    used: dict[int, int] = {}
    for i in sorted(range(len(rows)), key=lambda i: (-rows[i][0], names[rows[i][1]], rows[i][2])):
        if cap is None or used.get(rows[i][1], 0) < cap:
            used[rows[i][1]] = used.get(rows[i][1], 0) + 1
            ref.append(i)
    assert select_top(scores, dkeys, numbers, limit, cap, doc_ids) == ref[:limit]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=rows_of([0.5, 1.0, 2.0], 7),
    limit=st.integers(1, 40),
    cap=st.sampled_from([None, 1, 2]),
    seed=st.integers(0, 2**16),
)
def test_select_top_by_passage_id_matches_per_candidate_arrays(
    prefix_path: str, rows: list[tuple[float, int, int]], limit: int, cap: int | None, seed: int
) -> None:
    """With ``pids``, document keys and numbers are looked up by passage id: the same choice as
    with per-candidate arrays, whatever ids the candidates have."""
    scores, dkeys, numbers = columns(rows)
    pids = np.random.default_rng(seed).permutation(4 * len(rows) + 1)[:len(rows)].astype(np.int32)
    dkey_of_pid = np.full(4 * len(rows) + 1, -7, dtype=np.int32)  # never read for a candidate
    number_of_pid = np.full(len(dkey_of_pid), -7, dtype=np.int32)
    dkey_of_pid[pids], number_of_pid[pids] = dkeys, numbers

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        return {int(k): f"doc-{(3 * int(k)) % 7}-{int(k)}" for k in keys}

    assert select_top(scores, dkey_of_pid, number_of_pid, limit, cap, doc_ids, pids) == \
        select_top(scores, dkeys, numbers, limit, cap, doc_ids)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=rows_of([0.5, 1.0, 2.0], 10),
    limit=st.integers(1, 40),
    cap=st.sampled_from([None, 1, 2]),
)
def test_selection_without_tie_breaks_has_the_same_size_and_lowest_score(
    prefix_path: str, rows: list[tuple[float, int, int]], limit: int, cap: int | None
) -> None:
    """What pruning asks of a selection (is it full, and its lowest score) does not depend on how
    ties are broken, so it may skip the document-id lookups; the chosen scores are the same,
    best first."""
    scores, dkeys, numbers = columns(rows)
    looked_up: list[int] = []

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        keys = list(keys)
        looked_up.extend(keys)
        return {int(k): f"doc-{(3 * int(k)) % 7}-{int(k)}" for k in keys}

    exact = select_top(scores, dkeys, numbers, limit, cap, doc_ids)
    looked_up.clear()
    loose = select_top(scores, dkeys, numbers, limit, cap, doc_ids, ties=False)
    assert looked_up == []
    assert scores[loose].tolist() == scores[exact].tolist()


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(300, 3000),
    distinct=st.sampled_from([3, 40, 0]),  # 0: continuous scores
    documents=st.sampled_from([5, 60, 5000]),
    limit=st.integers(1, 100),
    cap=st.sampled_from([None, 1, 2]),
    seed=st.integers(0, 2**16),
)
def test_long_candidate_lists_match_reference(
    n: int, distinct: int, documents: int, limit: int, cap: int | None, seed: int
) -> None:
    """Thousands of candidates (a keyword query over a whole collection) are cut at a sampled
    score before sorting; ties at that cut, clustered best scores and a cap that empties the
    prefix still give exactly the reference choice."""
    rng = np.random.default_rng(seed)
    scores = (rng.integers(1, distinct + 1, n) / 4 if distinct else rng.random(n)).astype(np.float64)
    if seed % 3 == 0:  # the best scores in one run of candidates, which a strided sample misses
        scores[: n // 20] += 10.0
    dkeys = rng.integers(0, documents, n).astype(np.int32)
    numbers = np.arange(n, dtype=np.int32)  # distinct, so any two candidates are ordered
    names = {d: f"doc-{(7 * d) % 11}-{d}" for d in range(documents)}

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        return {int(k): names[int(k)] for k in keys}

    ref: list[int] = []
    used: dict[int, int] = {}
    for i in sorted(range(n), key=lambda i: (-scores[i], names[int(dkeys[i])], int(numbers[i]))):
        if cap is None or used.get(int(dkeys[i]), 0) < cap:
            used[int(dkeys[i])] = used.get(int(dkeys[i]), 0) + 1
            ref.append(i)
            if len(ref) == limit:
                break
    assert select_top(scores, dkeys, numbers, limit, cap, doc_ids) == ref
