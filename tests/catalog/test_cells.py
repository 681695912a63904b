"""``moczarr-store cells``: one level's cells as GeoParquet (or FlatGeobuf) polygons with
their values, read back by DuckDB's spatial extension (installed from PyPI: DuckDB
downloads its extensions otherwise), pyarrow and GDAL's OGR (FlatGeobuf: no GDAL here has
the Parquet driver), and compared with moczarr (the oracle)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import duckdb
import healpix_geo.nested
import moczarr
import numpy as np
import pyarrow.parquet as pq
import pytest
import shapely
from tests.support.hives import FIXTURES
from tests.support.jsclients import missing

from moczarr_store.cli import main
from moczarr_store.polygons import cell_polygons


def spatial() -> duckdb.DuckDBPyConnection:
    """DuckDB with the spatial extension the ``duckdb-ext-spatial`` wheel carries, never
    one downloaded."""
    import duckdb_ext

    ext = next(Path(duckdb_ext.__path__[0]).glob(
        f"extensions/v{duckdb.__version__}/*/spatial.duckdb_extension"))
    con = duckdb.connect(config={"allow_unsigned_extensions": "true",
                                 "autoinstall_known_extensions": "false",
                                 "autoload_known_extensions": "false"})
    con.execute(f"LOAD '{ext}'")
    return con


def export(tmp_path: Path, name: str, group: str, *extra: str) -> Path:
    out = tmp_path / f"{name}.parquet"
    assert main(["cells", str(FIXTURES / name), str(out), "--group", group, *extra]) == 0
    return out


def expected(root: Path, window: str | None = None) -> dict[int, dict]:
    """moczarr's values of every cell where a field holds one, by cell id."""
    ds = moczarr.open_hive(str(root), **({"window": window} if window else {})).load()
    fields = list(ds.data_vars)
    held = np.zeros(ds.sizes["cells"], bool)
    for f in fields:
        v = ds[f].values
        held |= ~np.isnan(v) if v.dtype.kind == "f" else v != 0
    ids = ds["cell_ids"].values
    return {int(ids[i]): {f: ds[f].values[i].item() for f in fields}
            for i in np.flatnonzero(held)}


def test_a_windowed_level_reads_back_in_duckdb_as_moczarr_reads_it(tmp_path):
    out = export(tmp_path, "windowed", "atl06/o7")
    con = spatial()
    # the GeoParquet metadata makes DuckDB read the column as GEOMETRY, not as bytes
    assert con.execute(f"SELECT typeof(geometry) FROM read_parquet('{out}') LIMIT 1"
                       ).fetchone() == ("GEOMETRY",)
    rows = con.execute(
        f"SELECT cell_ids, \"window\", count, h_mean, ST_IsValid(geometry), "
        f"ST_X(ST_PointOnSurface(geometry)), ST_Y(ST_PointOnSurface(geometry)) "
        f"FROM read_parquet('{out}')").fetchall()
    for window in ("2019", "2020"):
        want = expected(FIXTURES / "windowed", window)
        got = {r[0]: r for r in rows if r[1] == window}
        assert set(got) == set(want)
        for cell, (_, _, count, h_mean, valid, x, y) in got.items():
            assert count == want[cell]["count"]
            assert h_mean == pytest.approx(want[cell]["h_mean"], nan_ok=True)
            assert valid
            # a point of the polygon lies in the cell it names
            assert int(healpix_geo.nested.lonlat_to_healpix(
                np.array([x]), np.array([y]), 7, ellipsoid="WGS84")[0]) == cell
    geo = json.loads(pq.read_metadata(out).metadata[b"geo"])
    assert geo["primary_column"] == "geometry"
    assert geo["columns"]["geometry"]["encoding"] == "WKB"


def test_one_window_and_some_fields(tmp_path):
    out = export(tmp_path, "windowed", "atl06/o7", "--window", "2020", "--field", "count")
    table = pq.read_table(out)
    assert table.column_names == ["cell_ids", "count", "geometry"]
    want = expected(FIXTURES / "windowed", "2020")
    assert sorted(table["cell_ids"].to_pylist()) == sorted(want)


def test_numbered_windows_export_their_labels(tmp_path):
    """Opened with ``--window-labels index`` (``window`` holds positions), the export
    still names each row's window by its label."""
    out = export(tmp_path, "windowed", "atl06/o7", "--window-labels", "index")
    assert set(pq.read_table(out)["window"].to_pylist()) == {"2019", "2020"}


def test_ragged_digests_are_lists_of_centroids_outside_python(tmp_path):
    """The t-digest field of ``ragged`` is a list column of ``[mean, weight]`` pairs that
    DuckDB reads (a list of FLOAT[2]), each cell's centroids as moczarr decodes them; a
    cell with only a digest is kept."""
    from moczarr.ragged import decode_cell, parse_ragged_attrs

    out = export(tmp_path, "ragged", "atl06/o6")
    rows = dict(spatial().execute(
        f"SELECT cell_ids, h_tdigest FROM read_parquet('{out}')").fetchall())
    ds = moczarr.open_hive(str(FIXTURES / "ragged")).load()
    element = parse_ragged_attrs(ds["h_tdigest"].attrs, field="h_tdigest")
    want = {}
    for cell, raw, count in zip(ds["cell_ids"].values, ds["h_tdigest"].values,
                                ds["count"].values, strict=True):
        centroids = decode_cell(raw, element)
        if len(centroids) or count:
            want[int(cell)] = [list(map(float, c)) for c in centroids]
    assert any(want.values()) and rows.keys() == want.keys()
    for cell, centroids in want.items():
        assert [list(c) for c in rows[cell]] == centroids


def test_a_flatgeobuf_export_opens_in_gdal_ogr(tmp_path):
    """``.fgb``: the same rows as FlatGeobuf, written through pyogrio (GDAL 3.12) and read
    by Debian's ``ogrinfo`` (GDAL 3.6) and by pyogrio; the ragged digests have no field
    there (OGR has no list fields) and the summary says so."""
    import pyogrio

    if shutil.which("ogrinfo") is None:
        missing("GDAL's ogrinfo is not installed (apt-get install gdal-bin)")
    out = tmp_path / "o7.fgb"
    assert main(["cells", str(FIXTURES / "windowed"), str(out), "--group", "atl06/o7"]) == 0
    shown = subprocess.run(["ogrinfo", "-ro", "-al", "-so", str(out)], capture_output=True,
                           text=True, check=True).stdout
    assert "using driver `FlatGeobuf' successful" in shown and "Feature Count: 33" in shown
    assert 'ID["OGC","CRS84"]' in shown
    table = pyogrio.read_arrow(out)[1]
    for window in ("2019", "2020"):
        want = expected(FIXTURES / "windowed", window)
        got = {c: n for c, n, w in zip(table["cell_ids"].to_pylist(),
                                       table["count"].to_pylist(),
                                       table["window"].to_pylist(), strict=True)
               if w == window}
        assert got == {c: v["count"] for c, v in want.items()}
    ragged = tmp_path / "r.fgb"
    assert main(["cells", str(FIXTURES / "ragged"), str(ragged), "--group", "atl06/o6"]) == 0
    assert pyogrio.read_info(ragged)["fields"].tolist() == ["cell_ids", "count", "h_mean"]


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_every_cell_of_an_order_is_a_valid_polygon_and_they_tile_the_map(order):
    """All cells: each valid and within [-180, 180] x [-90, 90]; their areas add up to the
    map's and so does their union's (no overlap, no gap), antimeridian and poles
    included."""
    shapes = cell_polygons(np.arange(12 * 4**order, dtype=np.uint64), order, "WGS84")
    assert shapely.is_valid(shapes).all()
    lo = shapely.bounds(shapes)
    assert lo[:, 0].min() >= -180 and lo[:, 2].max() <= 180
    assert lo[:, 1].min() >= -90 and lo[:, 3].max() <= 90
    assert shapely.area(shapes).sum() == pytest.approx(360 * 180)
    assert shapely.union_all(shapes).area == pytest.approx(360 * 180)
    crossing = [s for s in shapes if s.geom_type == "MultiPolygon"]
    assert all(s.bounds[0] == -180 and s.bounds[2] == 180 for s in crossing)


def test_bad_arguments_are_named(tmp_path, capsys):
    hive = str(FIXTURES / "windowed")
    assert main(["cells", hive, str(tmp_path / "a.parquet"), "--group", "atl06/o9"]) == 2
    assert "no group 'atl06/o9'" in capsys.readouterr().err
    assert main(["cells", hive, str(tmp_path / "a.parquet"), "--group", "../../etc"]) == 2
    assert "no group '../../etc'" in capsys.readouterr().err
    assert main(["cells", hive, str(tmp_path / "a.parquet"), "--group", "atl06"]) == 2
    assert "is not a level" in capsys.readouterr().err
    assert main(["cells", hive, str(tmp_path / "a.parquet"), "--group", "atl06/o7",
                 "--field", "nope"]) == 2
    assert "no field 'nope' to export" in capsys.readouterr().err
