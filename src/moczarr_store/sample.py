"""The sample hive that ships with the package: a small real hive written by zagg."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

# In the wheel, the hive is package data; in a clone (or an editable install) it is the
# fixture it is built from (pyproject.toml's force-include).
PACKAGED = "sample_hive"
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "windowed_explicit"


def sample_hive() -> str:
    """The local path of a small hive written by zagg, for trying the package out.

    One product, ``atl06``, with two time windows (``early`` and ``late``) and a pyramid:
    ``atl06/o4`` (the leaves, 48 cells), ``atl06/o2`` (an overview per window) and
    ``atl06/all_time/o2`` (both windows folded). About 440 KB on disk. Cost: a stat.

    Returns
    -------
    str
        A path that ``MocHiveStore`` and the command line (``--sample``) open.

    Raises
    ------
    FileNotFoundError
        When the package was installed without its data.

    Examples
    --------
    ``zarr.open_group(MocHiveStore(sample_hive()), mode="r")["atl06/o4/count"]``
    """
    packaged = resources.files(__package__).joinpath(PACKAGED)
    if isinstance(packaged, Path) and packaged.is_dir():
        return str(packaged)
    if FIXTURE.is_dir():
        return str(FIXTURE)
    raise FileNotFoundError(
        f"the sample hive is not installed (looked for {packaged} and {FIXTURE}): "
        "reinstall moczarr-store from its wheel")
