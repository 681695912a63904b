"""Property tests of morton id arithmetic, leaf naming and root-coverage parsing.

Every expected value comes from an independent oracle: mortie 1.0.0 (the format's
reference implementation of decimal ids, packed words, children, NESTED ids and
one-digit hive paths) or moczarr 0.10.0's ``convention.leaf_path`` (grouped paths).
"""

from __future__ import annotations

import json
import re

import mortie
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from moczarr import convention as moczarr_convention

from moczarr_store.hive import coverage, ids, paths
from moczarr_store.hive.coverage import UnusableCoverage, parse_root_coverage

settings.register_profile(
    "properties_ids",
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow],
)
SETTINGS = settings.get_profile("properties_ids")

POSITIVE = [str(b) for b in range(1, 7)]
NEGATIVE = [f"-{b}" for b in range(1, 7)]
BASES = POSITIVE + NEGATIVE
MAX_ORDER = 27  # mortie's area words go to 29, but 28/29 are not rank-arithmetic orders


def _u64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.uint64)


def m_word(decimal: str) -> int:
    return int(mortie.decimal_to_word(decimal))


def mortie_word_or_none(text: str) -> int | None:
    try:
        return int(mortie.decimal_to_word(text))
    except ValueError:
        return None


def m_nested(words) -> np.ndarray:
    """NESTED ids of ``words`` according to mortie (as uint64)."""
    return np.asarray(mortie.mort2healpix(_u64(words))[0]).astype(np.uint64)


def m_decimals(words) -> list[str]:
    return list(mortie.MortonIndexArray.from_words(_u64(words)).decimal_repr())


def m_hive_path(decimal: str, window: str | None) -> str:
    suffix = f"_{window}.zarr" if window is not None else ".zarr"
    arr = mortie.MortonIndexArray.from_words(_u64([m_word(decimal)]))
    return arr.hive_path(suffix=suffix)[0]


@st.composite
def decimals(draw, order=None, base=None, min_order=0, max_order=MAX_ORDER):
    base = draw(st.sampled_from(BASES)) if base is None else base
    if order is None:
        order = draw(st.integers(min_order, max_order))
    tail = draw(st.text(alphabet="1234", min_size=order, max_size=order))
    return base + tail


windows = st.from_regex(r"[0-9A-Za-z-]{1,32}", fullmatch=True).filter(lambda w: w != "all")
optional_windows = st.none() | windows


# -- decimal <-> word -------------------------------------------------------------


@SETTINGS
@given(decimals())
def test_decimal_to_word_matches_mortie(decimal):
    word = ids.decimal_to_word(decimal)
    assert word == m_word(decimal)
    assert ids.decimal_order(decimal) == int(mortie.orders_of(_u64([word]))[0])
    assert ids.word_order(word) == ids.decimal_order(decimal)


@SETTINGS
@given(decimals())
def test_word_to_decimal_round_trips_to_mortie_repr(decimal):
    word = m_word(decimal)
    assert ids.word_to_decimal(word) == m_decimals([word])[0] == decimal
    assert ids.word_to_decimal(np.uint64(word)) == decimal
    order = ids.decimal_order(decimal)
    rank = ids.decimal_to_rank(decimal)
    # K = NESTED + 4**order (mortie's NESTED is the oracle)
    assert rank == int(m_nested([word])[0]) + 4**order
    assert ids.rank_to_decimal(rank, order) == decimal
    assert int(ids.words_to_ranks(_u64([word]), order)[0]) == rank
    assert int(ids.ranks_to_words(_u64([rank]), order)[0]) == word


@settings(SETTINGS)
@given(st.text(max_size=12))
@example("1\n")
@example("4331244\n")
def test_decimal_parsers_reject_what_mortie_rejects(text):
    """A string our parser accepts is a morton id for mortie too, with the same word."""
    try:
        word = ids.decimal_to_word(text)
    except ValueError:
        return
    assert word == mortie_word_or_none(text)


@SETTINGS
@given(st.integers(0, 2**64 - 1))
def test_word_to_decimal_agrees_with_mortie_on_any_word(word):
    """Any uint64 either raises ValueError or decodes to mortie's decimal for it."""
    try:
        decimal = ids.word_to_decimal(word)
    except ValueError:
        return
    assert decimal == m_decimals([word])[0]
    # canonical re-encoding keeps base, order and digit tuples
    mask = ~((1 << ids.shift(ids.decimal_order(decimal))) - 1) & (2**64 - 1)
    assert ids.decimal_to_word(decimal) == (word & mask) | (word & 0x3F)


# -- children, NESTED, ordering ---------------------------------------------------


@st.composite
def node_sets(draw):
    order = draw(st.integers(0, MAX_ORDER))
    depth = draw(st.integers(0, min(5, MAX_ORDER - order)))
    nodes = draw(st.lists(decimals(order=order), min_size=1, max_size=4))
    total = len(nodes) * 4**depth
    start = draw(st.integers(0, total))
    stop = draw(st.integers(start, total))
    return order, depth, nodes, start, stop


SENTINEL = np.uint64(0xDEADBEEF)


@SETTINGS
@given(node_sets(), st.booleans())
@example((5, 5, ["411113", "-411111"], 3, 40), False)  # a part of one subtree
@example((5, 2, ["411113", "-411111", "-411112"], 5, 47), True)  # head, whole ones, tail
@example((7, 0, ["-41111111", "21111111", "61111111"], 0, 3), False)  # one-cell subtrees
def test_child_values_into_match_mortie_children(case, nested):
    order, depth, nodes, start, stop = case
    node_words = _u64([m_word(s) for s in nodes])
    expected = np.concatenate(
        [np.atleast_1d(mortie.generate_morton_children(w, order + depth)) for w in node_words]
    ).astype(np.uint64)[start:stop]
    if nested and expected.size:
        expected = m_nested(expected)
    out = np.full(stop - start + 3, SENTINEL, dtype="<u8")  # rows past stop stay untouched
    got = ids.child_values_into(out, ids.words_to_ranks(node_words, order), depth, start,
                                stop, order + depth, nested)
    assert got.dtype == np.uint64 and (not got.size or np.shares_memory(got, out))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(out[stop - start :], [SENTINEL] * 3)


@SETTINGS
@given(st.integers(0, 10).flatmap(lambda o: st.tuples(
    st.just(o), st.integers(11, MAX_ORDER - o), st.lists(decimals(order=o), min_size=1,
                                                         max_size=2))),
    st.integers(0, 2**40), st.integers(0, 64), st.booleans())
def test_child_values_into_parts_of_large_subtrees_match_mortie(case, at, count, nested):
    """Subtrees of more than 4**10 cells (computed per row, no table): rows are the
    node's decimal followed by the child's base-4 digits, as mortie reads them."""
    order, depth, nodes = case
    per = 4**depth
    start = at % (len(nodes) * per)
    stop = min(start + count, len(nodes) * per)
    digits = [nodes[r // per] + paths_digits(r % per, depth) for r in range(start, stop)]
    expected = _u64([m_word(d) for d in digits])
    if nested and expected.size:
        expected = m_nested(expected)
    out = np.full(stop - start, SENTINEL, dtype="<u8")
    node_ranks = ids.words_to_ranks(_u64([m_word(s) for s in nodes]), order)
    got = ids.child_values_into(out, node_ranks, depth, start, stop, order + depth, nested)
    np.testing.assert_array_equal(got, expected)


def paths_digits(child: int, depth: int) -> str:
    """``child`` (0 .. 4**depth - 1) as ``depth`` morton digits 1-4, most significant first."""
    return "".join("1234"[(child >> (2 * (depth - 1 - i))) & 3] for i in range(depth))


@SETTINGS
@given(st.integers(0, MAX_ORDER).flatmap(
    lambda o: st.tuples(st.just(o), st.integers(0, o),
                        st.lists(decimals(order=o), min_size=1, max_size=8))))
def test_ancestor_ranks_match_mortie_clip2order(case):
    order, depth, cells = case
    words = _u64([m_word(d) for d in cells])
    got = ids.ancestor_ranks(ids.words_to_ranks(words, order), depth)
    assert got.dtype == np.uint64
    expected = np.atleast_1d(mortie.clip2order(order - depth, words)).astype(np.uint64)
    np.testing.assert_array_equal(ids.ranks_to_words(got, order - depth), expected)


@SETTINGS
@given(st.integers(0, MAX_ORDER).flatmap(lambda o: st.lists(decimals(order=o), min_size=2,
                                                              max_size=30, unique=True)))
def test_word_order_is_rank_order_is_nested_order(decimals_at_one_order):
    order = ids.decimal_order(decimals_at_one_order[0])
    words = [m_word(d) for d in decimals_at_one_order]
    ranks = [ids.decimal_to_rank(d) for d in decimals_at_one_order]
    nested = m_nested(words).tolist()
    by_word = sorted(range(len(words)), key=words.__getitem__)
    assert by_word == sorted(range(len(words)), key=ranks.__getitem__)
    assert by_word == sorted(range(len(words)), key=nested.__getitem__)
    # the packed words of our ranks are mortie's words
    assert ids.ranks_to_words(_u64(ranks), order).tolist() == words


@SETTINGS
@given(st.sampled_from(POSITIVE).flatmap(lambda b: decimals(base=b)),
       st.sampled_from(NEGATIVE).flatmap(lambda b: decimals(base=b)))
def test_every_positive_base_word_is_below_every_negative_base_word(pos, neg):
    assert ids.decimal_to_word(pos) < ids.decimal_to_word(neg)
    assert m_word(pos) < m_word(neg)


# -- leaf paths -------------------------------------------------------------------


@SETTINGS
@given(decimals(), optional_windows)
def test_leaf_path_pg1_equals_mortie_hive_path(decimal, window):
    assert paths.leaf_path(decimal, window, 1) == m_hive_path(decimal, window)
    assert paths.leaf_path(decimal, window) == m_hive_path(decimal, window)


@SETTINGS
@given(decimals(), optional_windows, st.integers(1, 30))
def test_grouped_leaf_path_structure(decimal, window, pg):
    path = paths.leaf_path(decimal, window, pg)
    *components, basename = path.split("/")
    base_len = 2 if decimal.startswith("-") else 1
    base, tail = decimal[:base_len], decimal[base_len:]
    assert components[0] == base
    digits = components[1:]
    assert "".join(digits) == tail
    assert all(len(c) == pg for c in digits[:-1])
    if digits:
        assert 1 <= len(digits[-1]) <= pg
        assert len(digits[-1]) == (len(tail) % pg or pg)
    assert basename == (f"{decimal}_{window}.zarr" if window else f"{decimal}.zarr")
    assert ".." not in path and "//" not in path and not path.startswith("/")
    # moczarr 0.10.0 is the reference reader for grouped paths
    assert path == moczarr_convention.leaf_path(decimal, window, path_grouping=pg)


@SETTINGS
@given(decimals(), optional_windows, st.integers(1, 30))
def test_split_leaf_name_inverts_leaf_naming(decimal, window, pg):
    basename = paths.leaf_path(decimal, window, pg).rsplit("/", 1)[-1]
    assert paths.split_leaf_name(basename) == (decimal, window)
    assert moczarr_convention.split_leaf_name(basename) == (decimal, window)


@settings(SETTINGS)
@given(
    st.one_of(
        st.text(max_size=40),
        st.text(max_size=40).map(lambda s: s + ".zarr"),
        st.tuples(decimals(max_order=6), st.text(max_size=8)).map(lambda t: f"{t[0]}{t[1]}.zarr"),
        st.tuples(decimals(max_order=6), st.text(max_size=8)).map(lambda t: f"{t[0]}_{t[1]}.zarr"),
    )
)
@example("1_.zarr")
@example("4331244\n.zarr")
def test_split_leaf_name_accepts_only_leaf_names(name):
    """Whatever ``split_leaf_name`` accepts is exactly the name leaf naming would give."""
    found = paths.split_leaf_name(name)
    if found is None:
        return
    decimal, window = found
    assert mortie_word_or_none(decimal) == ids.decimal_to_word(decimal)
    assert window is None or re.fullmatch(r"[0-9A-Za-z-]{1,32}", window)
    assert paths.leaf_path(decimal, window).rsplit("/", 1)[-1] == name


def test_pyramid_columns_are_never_leaves():
    assert paths.split_leaf_name("4331244.pyramid.zarr") is None
    assert paths.split_leaf_name("4331244_w1.pyramid.zarr") is None


# -- root coverage ------------------------------------------------------------------


def _ranges_of(words: np.ndarray, order: int) -> list[list[str]]:
    """Inclusive ranges (decimal strings) of consecutive nodes within one base cell.

    Ranks come from mortie's NESTED ids, decimals from mortie's ``decimal_repr``.
    """
    nested = m_nested(words).tolist()
    labels = m_decimals(words)
    out: list[list[int]] = []
    for i, n in enumerate(nested):
        base = n >> (2 * order)
        if out and nested[out[-1][1]] + 1 == n and nested[out[-1][1]] >> (2 * order) == base:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [[labels[a], labels[b]] for a, b in out]


def _parse(payload: bytes, order: int) -> np.ndarray:
    """The node ranks ``parse_root_coverage`` returns (newer versions add the envelope)."""
    got = parse_root_coverage(payload, order, "coverage.moc")
    return got[0] if isinstance(got, tuple) else got


def _envelope(ranges, order, **extra) -> bytes:
    env = {"spec": "morton-moc/1", "encoding": "ranges", "order": order, "source": "builder",
           "generated_at": "2026-01-01T00:00:00+00:00", "ranges": ranges, **extra}
    return json.dumps(env, indent=1).encode()


@st.composite
def coverages(draw, min_size=0):
    order = draw(st.integers(0, 10))
    # cluster nodes so that multi-node ranges are common
    seeds = draw(st.lists(decimals(order=order), min_size=min_size, max_size=8))
    words = []
    for seed in seeds:
        run = draw(st.integers(1, 6))
        first = ids.decimal_to_rank(seed)
        base1 = first >> (2 * order)
        for k in range(run):
            rank = first + k
            if rank >> (2 * order) != base1:
                break
            words.append(m_word(ids.rank_to_decimal(rank, order)))
    words = np.unique(_u64(words))
    return order, words


@SETTINGS
@given(coverages(), st.randoms(use_true_random=False))
def test_parse_root_coverage_returns_exactly_the_nodes(case, rnd):
    order, words = case
    ranges = _ranges_of(words, order)
    expected = m_nested(words) + np.uint64(4**order) if words.size else _u64([])
    got = _parse(_envelope(ranges, order), order)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(ids.ranks_to_words(got, order), words)
    # well-formed ranges take the one-matrix parse, and it equals the per-range one
    if ranges:
        fast = coverage._bounds_at_once(ranges, order)
        assert fast is not None
        slow = [coverage._range_ranks(pair, order, "coverage.moc") for pair in ranges]
        np.testing.assert_array_equal(fast, np.array(slow, dtype=np.uint64))
    # the reference decoder (moczarr 0.10.0) agrees
    from moczarr.coverage import ranges_words

    np.testing.assert_array_equal(ranges_words({"order": order, "ranges": ranges}), words)
    # range order and range splitting do not matter to the decoded set
    singles = [[d, d] for d in m_decimals(words)]
    rnd.shuffle(singles)
    got2 = _parse(_envelope(singles, order), order)
    np.testing.assert_array_equal(got2, expected)


def _other_base(decimal: str, rnd) -> str:
    base = decimal[:2] if decimal.startswith("-") else decimal[:1]
    other = rnd.choice([b for b in BASES if b != base])
    return other + decimal[len(base):]


MALFORMATIONS = ["cross_base", "descending", "endpoint_order", "number", "bad_pair", "bad_id"]


@SETTINGS
@given(coverages(min_size=1), st.sampled_from(MALFORMATIONS), st.randoms(use_true_random=False))
def test_malformed_ranges_raise_value_error(case, how, rnd):
    order, words = case
    ranges = _ranges_of(words, order)
    i = rnd.randrange(len(ranges))
    lo, hi = ranges[i]
    if how == "cross_base":
        bad = [lo, _other_base(hi, rnd)]
    elif how == "descending":
        assume(lo != hi)
        bad = [hi, lo]
    elif how == "endpoint_order":
        bad = [lo + "1", hi + "1"] if order < MAX_ORDER and rnd.random() < 0.5 else [lo, hi + "2"]
    elif how == "number":
        bad = [int(m_word(lo)), int(m_word(hi))] if rnd.random() < 0.5 else [lo, int(m_word(hi))]
    elif how == "bad_pair":
        bad = rnd.choice([[lo], [lo, hi, hi], lo, {"lo": lo, "hi": hi}, None])
    else:
        bad = [lo, rnd.choice(["", "7" + hi[1:], hi + "p", hi + "5", hi.replace(hi[-1], "0")])]
        assume(bad[1] != hi)
    ranges[i] = bad
    with pytest.raises(ValueError, match="coverage.moc") as err:
        _parse(_envelope(ranges, order), order)
    # a malformed range is an error, not an "absent" cache to walk around
    assert not isinstance(err.value, UnusableCoverage)


@SETTINGS
@given(coverages(), st.integers(0, 12))
def test_envelope_of_another_order_is_unusable(case, other):
    order, words = case
    assume(other != order)
    payload = _envelope(_ranges_of(words, order), other)
    with pytest.raises(UnusableCoverage):
        _parse(payload, order)


def _outcome(payload: bytes, order: int) -> tuple[str, object]:
    """What ``parse_root_coverage`` gives: its ranks and envelope, or its error."""
    try:
        ranks, env = parse_root_coverage(payload, order, "coverage.moc")
    except ValueError as err:
        return type(err).__name__, str(err)
    return "parsed", (ranks.tolist(), str(ranks.dtype), env)


LAYOUTS = ["compact", "tabs", "escaped digit", "comma in a string", "three deep", "a triple",
           "ranges twice", "no ranges", "an empty pair", "a number", "unicode"]


def _layout(ranges: list, order: int, how: str) -> bytes:
    """A root MOC holding ``ranges`` as ``how`` lays it out, well-formed or not."""
    env = {"spec": "morton-moc/1", "encoding": "ranges", "order": order, "ranges": ranges}
    text = json.dumps(env)
    first = json.dumps(ranges[0][0])  # the first endpoint, quoted
    wrapped = json.dumps(ranges)
    if how == "tabs":
        text = json.dumps(env, indent="\t")
    elif how == "escaped digit":  # its last digit as a \u escape: the same string
        text = text.replace(first, f'{first[:-2]}\\u003{first[-2]}"', 1)
    elif how == "comma in a string":
        text = text.replace(first, f'{first[:-1]},1"', 1)
    elif how == "three deep":
        text = text.replace(wrapped, f"[{wrapped}]", 1)
    elif how == "a triple":
        text = text.replace(first, f"{first}, {first}", 1)
    elif how == "ranges twice":  # the last one counts
        text = text[:-1] + ', "ranges": [["1", "1"]]}'
    elif how == "no ranges":
        text = json.dumps({k: v for k, v in env.items() if k != "ranges"})
    elif how == "an empty pair":
        text = text.replace(wrapped, "[[], " + wrapped[1:], 1)
    elif how == "a number":
        text = text.replace(first, "1", 1)
    elif how == "unicode":
        text = text.replace(first, f'{first[:-1]}\u00e9"', 1)
    return text.encode()


@SETTINGS
@given(coverages(min_size=1), st.sampled_from(LAYOUTS))
def test_the_bytes_parse_of_a_coverage_agrees_with_the_json_parse(case, how):
    """A root MOC is read from its bytes where msgspec is installed (its ranges never
    become strings): for every layout, well-formed or not, the answer — ranks, envelope or
    error — is the one the JSON path gives alone."""
    from moczarr_store.hive import jsonio

    if jsonio._FAST is None:
        pytest.skip("msgspec is not installed here (zarr < 3.4): the JSON path alone reads")
    order, words = case
    payload = _layout(_ranges_of(words, order), order, how)
    fast = _outcome(payload, order)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonio, "_FAST", None)
        slow = _outcome(payload, order)
    assert fast == slow


@SETTINGS
@given(st.one_of(st.binary(max_size=64), st.text(max_size=64).map(str.encode),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                              lambda c: st.lists(c, max_size=4)
                              | st.dictionaries(st.text(max_size=8), c, max_size=4),
                              max_leaves=12).map(lambda v: json.dumps(v).encode())))
def test_garbage_payload_raises_only_value_error(payload):
    try:
        got = _parse(payload, 3)
    except ValueError:
        return
    # only a real morton-moc/1 envelope may parse
    env = json.loads(payload)
    assert env["spec"] == "morton-moc/1" and env["encoding"] == "ranges" and env["order"] == 3
    assert got.dtype == np.uint64


@SETTINGS
@given(st.sets(st.integers(0, 2**64 - 1), max_size=200),
       st.sets(st.integers(0, 2**20), max_size=50))
def test_node_ranks_pickle_as_runs_and_come_back_exactly(scattered, dense):
    """A pickled level's node ranks travel as runs (a covered region is a few runs):
    ascending unique ranks, scattered anywhere in uint64 or in long consecutive stretches,
    come back with their values and dtype."""
    from moczarr_store.hive.level import ranks_to_runs, runs_to_ranks

    stretches = {start + i for start in dense for i in range(start % 7)}
    ranks = np.array(sorted(scattered | stretches), dtype=np.uint64)
    starts, lengths = ranks_to_runs(ranks)
    back = runs_to_ranks(starts, lengths)
    assert back.dtype == ranks.dtype and back.tolist() == ranks.tolist()
    assert starts.size == (0 if ranks.size == 0 else 1 + int(np.sum(np.diff(ranks) != 1)))
