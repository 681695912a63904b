"""zagg writes a hive (new leaves, rewritten leaves, superseded versions removed) while
the in-process store reads it and ``serve`` serves it to concurrent HTTP clients: every
answer is a committed state of its leaf, never the fill value, never a mix.

The run is ``tests/support/live_write.py`` (see there), kept short here; the writer is zagg
0.61.0 in its own interpreter (``$MOCZARR_ZAGG_PYTHON``; ``.ci/run`` makes one).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.live_write import main
from support.writer import zagg_python

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 12), reason="zagg, the writer, needs Python >= 3.12"
)


def test_reads_while_zagg_commits_and_cleans_up_are_committed_states(tmp_path: Path, capsys):
    status = main(["--seconds", "12", "--zagg-python", zagg_python(), "--clients", "2",
                   "--fresh", "4", "--tmp", str(tmp_path)])
    report = capsys.readouterr().out
    assert status == 0, report
    assert '"commits": 0' not in report and '"versions_removed": 0' not in report, report
    assert '"in-process match"' in report and '"http-0 match"' in report, report


def test_leaves_rewritten_in_place_are_never_read_as_fill(tmp_path: Path, capsys):
    """``leaf_versions: false``: zagg clears a leaf and writes it again. Every stamp was
    read before the rewrites begin, so a read that meets a cleared leaf, in process, in a
    fresh store or through ``serve`` (a new generation every second), fails naming it
    (``LeafMovedError``, a 502) and never reads as fill."""
    status = main(["--seconds", "12", "--zagg-python", zagg_python(), "--clients", "1",
                   "--fresh", "2", "--stamp-ttl", "1", "--unversioned", "--tmp", str(tmp_path)])
    report = capsys.readouterr().out
    assert status == 0, report
    assert '"commits": 0' not in report, report
    assert '"in-process match"' in report and '"http-0 match"' in report, report
