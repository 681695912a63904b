"""Where a HEALPix cell falls on a map tile and the colour its value takes there, found
without the code under test: the cells' values from moczarr (the reference reader), their
centres from cdshealpix, the tile grid from morecantile, the colours from matplotlib.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

TILE = 256
QUAD = "WebMercatorQuad"


@dataclass(frozen=True)
class Spot:
    """A cell's centre on tile ``z/y/x`` at pixel ``(px, py)``."""

    cell: int
    lon: float
    lat: float
    value: float
    z: int
    y: int
    x: int
    px: int
    py: int


def spots(hive, field: str, order: int, z: int, count: int, window: str | None = None,
          quad: str = QUAD, where=None, size: int = TILE) -> list[Spot]:
    """``count`` cells of ``field`` at ``order`` holding a value (spread over the rows; those
    whose latitudes pass ``where`` only), as moczarr reads them, placed on tiles of zoom
    ``z`` of the tile matrix set ``quad``, ``size`` pixels square."""
    import cdshealpix.nested
    import moczarr
    import morecantile

    opened = moczarr.open_hive(str(hive), window=window)
    if opened.attrs["dggs"]["refinement_level"] != order:
        raise ValueError(f"moczarr opens {hive} at another order than {order}")
    values = np.asarray(opened[field].values, dtype="float64")
    ids = np.asarray(opened["cell_ids"].values)
    lon, lat = cdshealpix.nested.healpix_to_lonlat(ids.astype("int64"), order)
    lon = ((lon.to_value("deg") + 180) % 360) - 180
    lat = lat.to_value("deg")
    rows = np.flatnonzero(np.isfinite(values) & (True if where is None else where(lat)))
    rows = rows[np.linspace(0, rows.size - 1, count).astype(int)]
    tms = morecantile.tms.get(quad)
    found = []
    for row, x, y in zip(rows, lon[rows], lat[rows], strict=True):
        tile = tms.tile(x, y, z)
        box = tms.xy_bounds(tile)
        mx, my = tms.xy(x, y)
        px = int((mx - box.left) / (box.right - box.left) * size)
        py = int((box.top - my) / (box.top - box.bottom) * size)
        found.append(Spot(int(ids[row]), float(x), float(y), float(values[row]), z, tile.y,
                          tile.x, px, py))
    return found


def colour(value: float, lo: float, hi: float, cmap: str = "viridis") -> np.ndarray:
    """The RGB a value takes on matplotlib's ``cmap`` scaled to ``[lo, hi]``."""
    from matplotlib import colormaps

    scaled = min(max((value - lo) / (hi - lo), 0.0), 1.0)
    return np.round(np.asarray(colormaps[cmap](scaled)[:3]) * 255)


def pixels(png: bytes) -> np.ndarray:
    """A PNG's RGBA pixels, rows first."""
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def cells_under(z: int, y: int, x: int, order: int, size: int = TILE) -> np.ndarray:
    """The order-``order`` cell under each pixel centre of WebMercatorQuad tile ``z/y/x``
    (rows first; from morecantile, pyproj and cdshealpix)."""
    import astropy.units as u
    import cdshealpix.nested
    import morecantile
    from astropy.coordinates import Latitude, Longitude
    from pyproj import Transformer

    box = morecantile.tms.get(QUAD).xy_bounds(morecantile.Tile(x, y, z))
    centres = (np.arange(size) + 0.5) / size
    mx, my = np.meshgrid(box.left + centres * (box.right - box.left),
                         box.top - centres * (box.top - box.bottom))
    lon, lat = Transformer.from_crs(3857, 4326, always_xy=True).transform(mx, my)
    return cdshealpix.nested.lonlat_to_healpix(
        Longitude(lon, u.deg), Latitude(lat, u.deg), order).astype("uint64")
