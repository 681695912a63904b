"""One bad leaf costs only its own rows under the default chunking, ``"auto"``.

``auto`` joins up to 16 leaves in one chunk (every leaf of these fixtures shares one). For
each damage class of the hostile generator (``hostile.py``), one case damages one leaf's
object: every read is then moczarr's values, or the fill value with a warning naming the
object, never one error for the whole chunk. A stamp or an array document too large to
read is one such damage. Where the contract asks for an error (a link out of the hive
root), the error names the object.
"""

from __future__ import annotations

import pytest
from support.hostile import Case, _case, failures, run_case


def _auto(fixture: str, kind: str, needles: tuple[str, ...], **params: object) -> Case:
    return _case(fixture, kind, needles, chunking="auto", **params)


AUTO = [
    _auto("legacy", "type-swap", ("444113.zarr/7/h_mean/zarr.json",), at=("fill_value",),
          swap="list"),
    _auto("legacy", "truncate-json", ("444113.zarr/zarr.json",), keep=10),
    _auto("legacy", "truncate-chunk", ("444113.zarr/7/h_mean/c/0",), keep=30),
    _auto("sharded", "shard-index", ("44412.zarr/", "/count/c/0"), entry=3, lie="wrap",
          fix_crc=True),
    _auto("legacy", "rename-array", ("444113.zarr/7/count",), to="c", hashes=True),
    _auto("legacy", "symlink", ("444113.zarr/7/count/c/0",)),
    _auto("legacy", "rewrite-after-read", ("444113.zarr/7/h_mean",), how="dtype"),
    _auto("bare_versioned", "drift", ("-411331.zarr/", "/7/count"), how="dtype:float32"),
    _auto("legacy", "delete", ("444113.zarr/7/count",)),
    _auto("bare_versioned", "misplace", ("444112.zarr",), partner="4/4/4/1/1/1/444111.zarr"),
    _auto("bare_versioned", "commit-after-read", ("444112.zarr/", "/7/h_mean"), how="values"),
    _auto("bare_versioned", "oversize-json", ("444112.zarr/zarr.json",)),  # its stamp
    _auto("sharded", "oversize-json", ("44412.zarr/", "/7/count/zarr.json")),
]


@pytest.mark.parametrize("case", AUTO, ids=lambda c: f"{c.kind}-{c.fixture}")
def test_one_bad_leaf_costs_only_its_own_rows_under_auto(case):
    reads = run_case(case)
    problems = failures(case, reads)
    assert not problems, f"{len(problems)} bad reads:\n" + "\n".join(problems)
    if case.kind == "symlink":  # a link out of the root: an error naming it, in every chunking
        return
    refused = [f"{r.key}: {r.detail}" for r in reads if r.verdict == "package-error"]
    assert not refused, "a joined chunk refused for one leaf:\n" + "\n".join(refused)
