"""Hostile hives: every read of every array of a mutated fixture is moczarr's values (and
dtype), or the fill value with a ``HiveWarning``, or a ``MocHiveError`` naming the object.

The mutations (``hostile.py``) are drawn by hypothesis: JSON type swaps, truncated
documents and chunks, shard indexes that lie, renamed arrays (names with ``%``, names
differing from another only in case, names that are not printable), links out of the hive
root, unversioned leaves rewritten (or cleared, as zagg does before it rewrites one) after
a first read, versioned leaves committed again
(stamp swapped, old version removed) between two reads, metadata drift between the leaves
of one writer run, deleted objects, and leaves that trade places; some cases open the
store with an AOI, some read from a loopback S3 server, some are exported in every
reference format (mdim-refs; kerchunk JSON and Icechunk on Python >= 3.12) and read back.
The explicit examples run every kind every time. Hypothesis reports the first failing
example; ``python -m tests.hostile --report 0 --violations`` lists every bad read of all
of them, and ``--report N`` adds N generated cases to the table of verdicts.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, example, given, settings
from support.hostile import cases, examples, failures, run_case

HOSTILE = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: every case is already small
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _with_explicit_examples(test):
    for case in reversed(examples()):
        test = example(case=case)(test)
    return test


@HOSTILE
@given(case=cases())
@_with_explicit_examples
def test_every_read_is_the_reference_the_fill_with_a_warning_or_a_named_error(case):
    problems = failures(case, run_case(case))
    assert not problems, f"{len(problems)} bad reads:\n" + "\n".join(problems)
