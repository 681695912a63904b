"""GDAL's multidimensional API through ctypes, on the libgdal rasterio's wheel bundles.

PYTEST_DONT_REWRITE (a helper of the test modules).

rasterio (>= 1.5, GDAL >= 3.12, Python >= 3.12) has no bindings for GDAL's multidimensional
API and no ``gdalmdiminfo`` is installable from PyPI, so the tests call GDAL's C API:
open a dataset (``GDALOpenEx`` with ``GDAL_OF_MULTIDIM_RASTER``), walk its groups, read
arrays (``GDALMDArrayRead``) and run the ``gdalmdimtranslate`` utility
(``GDALMultiDimTranslate``). Every message GDAL emits (``CPLError``: warnings and errors)
is collected in :attr:`Gdal.messages`. ctypes releases the GIL during each call, so a
server in a thread of the same process answers GDAL's requests.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

GDAL_OF_MULTIDIM_RASTER = 0x10
GEDTC_NUMERIC, GEDTC_STRING = 0, 1
NUMPY = {1: "uint8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32",
         7: "float64", 12: "uint64", 13: "int64", 14: "int8"}  # GDALDataType -> NumPy

_P = ctypes.c_void_p
_NAMES = ctypes.POINTER(ctypes.c_char_p)
_SIGNATURES = {
    "GDALAllRegister": (None, []),
    "GDALVersionInfo": (ctypes.c_char_p, [ctypes.c_char_p]),
    "GDALOpenEx": (_P, [ctypes.c_char_p, ctypes.c_uint, _P, _P, _P]),
    "GDALClose": (None, [_P]),
    "GDALDatasetGetRootGroup": (_P, [_P]),
    "GDALGroupGetGroupNames": (_NAMES, [_P, _P]),
    "GDALGroupGetMDArrayNames": (_NAMES, [_P, _P]),
    "GDALGroupOpenGroup": (_P, [_P, ctypes.c_char_p, _P]),
    "GDALGroupOpenMDArray": (_P, [_P, ctypes.c_char_p, _P]),
    "GDALGroupRelease": (None, [_P]),
    "GDALMDArrayRelease": (None, [_P]),
    "GDALMDArrayGetDimensions": (ctypes.POINTER(_P), [_P, ctypes.POINTER(ctypes.c_size_t)]),
    "GDALDimensionGetSize": (ctypes.c_uint64, [_P]),
    "GDALReleaseDimensions": (None, [ctypes.POINTER(_P), ctypes.c_size_t]),
    "GDALMDArrayGetDataType": (_P, [_P]),
    "GDALExtendedDataTypeGetClass": (ctypes.c_int, [_P]),
    "GDALExtendedDataTypeGetNumericDataType": (ctypes.c_int, [_P]),
    "GDALExtendedDataTypeCreate": (_P, [ctypes.c_int]),
    "GDALExtendedDataTypeRelease": (None, [_P]),
    "GDALMDArrayRead": (ctypes.c_int, [_P, _P, _P, _P, _P, _P, _P, _P, ctypes.c_size_t]),
    "GDALMultiDimTranslateOptionsNew": (_P, [_NAMES, _P]),
    "GDALMultiDimTranslateOptionsFree": (None, [_P]),
    "GDALMultiDimTranslate": (_P, [ctypes.c_char_p, _P, ctypes.c_int, ctypes.POINTER(_P), _P,
                                   ctypes.POINTER(ctypes.c_int)]),
    "CSLDestroy": (None, [_NAMES]),
    "CPLSetConfigOption": (None, [ctypes.c_char_p, ctypes.c_char_p]),
    "CPLSetErrorHandler": (_P, [_P]),
    "VSICurlClearCache": (None, []),
}
_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_char_p)


def _names(pointer) -> list[str]:
    out: list[str] = []
    while pointer and pointer[len(out)]:
        out.append(pointer[len(out)].decode())
    return out


class Gdal:
    """One loaded libgdal: open, walk, read and translate multidimensional datasets."""

    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path))
        for name, (restype, argtypes) in _SIGNATURES.items():
            function = getattr(self.lib, name)
            function.restype, function.argtypes = restype, argtypes
        self.lib.GDALAllRegister()
        self.version = self.lib.GDALVersionInfo(b"RELEASE_NAME").decode()
        self.messages: list[str] = []
        self._handler = _HANDLER(self._collect)  # kept alive as long as GDAL may call it
        self.lib.CPLSetErrorHandler(ctypes.cast(self._handler, _P))

    def _collect(self, level: int, number: int, message: bytes) -> None:
        if level >= 2:  # CE_Warning, CE_Failure, CE_Fatal
            self.messages.append(message.decode(errors="replace"))

    def config(self, **options: str) -> None:
        for key, value in options.items():
            self.lib.CPLSetConfigOption(key.encode(), value.encode())
        self.lib.VSICurlClearCache()

    @contextmanager
    def open(self, name: str) -> Iterator[int]:
        """The root group of multidimensional dataset ``name`` (fails if it cannot open)."""
        dataset = self.lib.GDALOpenEx(name.encode(), GDAL_OF_MULTIDIM_RASTER, None, None, None)
        assert dataset, f"GDAL cannot open {name}: {self.messages}"
        root = self.lib.GDALDatasetGetRootGroup(dataset)
        try:
            yield root
        finally:
            self.lib.GDALGroupRelease(root)
            self.lib.GDALClose(dataset)

    def listing(self, group: int, path: str = "") -> tuple[list[str], list[str]]:
        """Every group and every array below ``group``, as paths (depth first)."""
        groups: list[str] = []
        arrays = [f"{path}/{n}".lstrip("/") for n in self._list("Array", group)]
        for name in self._list("Group", group):
            child_path = f"{path}/{name}".lstrip("/")
            child = self.lib.GDALGroupOpenGroup(group, name.encode(), None)
            assert child, child_path
            try:
                below_groups, below_arrays = self.listing(child, child_path)
            finally:
                self.lib.GDALGroupRelease(child)
            groups += [child_path, *below_groups]
            arrays += below_arrays
        return groups, arrays

    def _list(self, kind: str, group: int) -> list[str]:
        function = (self.lib.GDALGroupGetGroupNames if kind == "Group"
                    else self.lib.GDALGroupGetMDArrayNames)
        pointer = function(group, None)
        try:
            return _names(pointer)
        finally:
            self.lib.CSLDestroy(pointer)

    def read(self, root: int, path: str) -> np.ndarray | str:
        """Array ``path``'s values, or why GDAL cannot give them (a string)."""
        *parents, name = path.split("/")
        opened = [root]
        try:
            for part in parents:
                group = self.lib.GDALGroupOpenGroup(opened[-1], part.encode(), None)
                if not group:
                    return f"no group {part}"
                opened.append(group)
            array = self.lib.GDALGroupOpenMDArray(opened[-1], name.encode(), None)
            if not array:
                return "cannot open"
            try:
                return self._values(array)
            finally:
                self.lib.GDALMDArrayRelease(array)
        finally:
            for group in opened[1:]:
                self.lib.GDALGroupRelease(group)

    def _values(self, array: int) -> np.ndarray | str:
        count = ctypes.c_size_t()
        dims = self.lib.GDALMDArrayGetDimensions(array, ctypes.byref(count))
        shape = tuple(int(self.lib.GDALDimensionGetSize(dims[i])) for i in range(count.value))
        self.lib.GDALReleaseDimensions(dims, count)
        dtype = self.lib.GDALMDArrayGetDataType(array)
        klass = self.lib.GDALExtendedDataTypeGetClass(dtype)
        numeric = self.lib.GDALExtendedDataTypeGetNumericDataType(dtype)
        self.lib.GDALExtendedDataTypeRelease(dtype)
        if klass != GEDTC_NUMERIC or numeric not in NUMPY:
            return f"data type class {klass}, numeric type {numeric}: not read here"
        out = np.empty(shape, dtype=NUMPY[numeric])
        start = (ctypes.c_uint64 * len(shape))()
        counts = (ctypes.c_size_t * len(shape))(*shape)
        buffer_type = self.lib.GDALExtendedDataTypeCreate(numeric)
        try:
            ok = self.lib.GDALMDArrayRead(array, start, counts, None, None, buffer_type,
                                          out.ctypes.data, out.ctypes.data, out.nbytes)
        finally:
            self.lib.GDALExtendedDataTypeRelease(buffer_type)
        return out if ok else "read failed"

    def translate(self, source: str, destination: str, *args: str) -> bool:
        """``gdalmdimtranslate [args] source destination``: whether it wrote a dataset."""
        dataset = self.lib.GDALOpenEx(source.encode(), GDAL_OF_MULTIDIM_RASTER, None, None, None)
        assert dataset, f"GDAL cannot open {source}: {self.messages}"
        argv = (ctypes.c_char_p * (len(args) + 1))(*(a.encode() for a in args), None)
        options = self.lib.GDALMultiDimTranslateOptionsNew(argv, None)
        usage = ctypes.c_int()
        sources = (_P * 1)(dataset)
        try:
            out = self.lib.GDALMultiDimTranslate(destination.encode(), None, 1, sources,
                                                 options, ctypes.byref(usage))
        finally:
            self.lib.GDALMultiDimTranslateOptionsFree(options)
            self.lib.GDALClose(dataset)
        if out:
            self.lib.GDALClose(out)
        return bool(out)


_LOADED: list[Gdal] = []


def gdal() -> Gdal:
    """The GDAL bundled in rasterio's wheel (loaded once per process), or skip."""
    if sys.version_info < (3, 12):
        pytest.skip("rasterio's wheels with GDAL >= 3.12 need Python >= 3.12")
    import rasterio  # in the test extra from Python 3.12: a missing one fails

    if not _LOADED:
        libs = Path(rasterio.__file__).resolve().parent.parent / "rasterio.libs"
        found = sorted(libs.glob("libgdal*.so*"))
        assert found, f"no libgdal in {libs}: rasterio's wheel layout changed"
        _LOADED.append(Gdal(found[0]))
    loaded = _LOADED[0]
    assert tuple(int(p) for p in loaded.version.split(".")[:2]) >= (3, 12), loaded.version
    loaded.messages.clear()
    return loaded
