"""zarr's own Store test suite (``StoreTests``), adapted for a read-only virtual store.

``MocHiveStore`` presents a morton-hive as a Zarr hierarchy; nothing can be written
into it, so the harness cannot seed keys. Each ``StoreTests`` test that seeds keys
through ``self.set`` or ``store.set`` is either

* skipped, with a ``test_read_only_*`` test below checking the same invariant on the
  real keys of a hive, or
* overridden under its own name when the same check fits on a real key
  (``test_get_not_open``, ``test_get_raises``).

The harness differs between zarr releases (zarr 3.1.6 and 3.2 also test the private
``_get_bytes``/``_get_json`` helpers, 3.3 dropped them), so the skips apply to the tests
the installed harness has. Every other inherited test runs unchanged. Only zarr's public
API is used here; the harness itself may use more.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import pickle
import shutil
from pathlib import Path

import moczarr
import pytest
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.buffer import default_buffer_prototype
from zarr.buffer.cpu import Buffer
from zarr.testing.store import StoreTests

from moczarr_store import MocHiveStore

HIVE = Path(__file__).resolve().parents[1] / "fixtures" / "bare_versioned"
READ_ONLY = "store was opened in read-only mode and does not support writing"
SEEDS = "the store is read-only, so the harness cannot seed keys into it"
KINDS = ("root", "group", "array", "coordinate_chunk", "field_chunk")
FABRICATED = ("morton", "cell_ids", "window", "window_start", "window_end", "healpix_index",
              "lon", "lat", "healpix")
BYTE_REQUESTS = [
    None,
    RangeByteRequest(0, 1),
    RangeByteRequest(1, 4),
    RangeByteRequest(3, 3),
    OffsetByteRequest(0),
    OffsetByteRequest(1),
    SuffixByteRequest(1),
    SuffixByteRequest(4),
    SuffixByteRequest(10**9),  # clamps to the whole value
    RangeByteRequest(2, 10**9),  # an end past the value: the rest of it
    OffsetByteRequest(10**9),  # past the end: empty
]


# Inherited tests that seed keys, each skipped in favour of the read-only test below
# that checks the same invariant on a hive's real keys.
REPLACED = {
    "test_get": "test_read_only_get",
    "test_get_many": "test_read_only_get_every_key",
    "test_getsize": "test_read_only_getsize",
    "test_getsize_prefix": "test_read_only_getsize_prefix",
    "test_set": "test_read_only_writes_refused",
    "test_set_not_open": "test_read_only_writes_refused",
    "test_set_many": "test_read_only_writes_refused",
    "test_set_if_not_exists": "test_read_only_writes_refused",
    "test_clear": "test_read_only_clear_refused",
    "test_serializable_store": "test_read_only_pickle",
    "test_get_partial_values": "test_read_only_get_partial_values",
    "test_exists": "test_read_only_exists",
    "test_is_empty": "test_read_only_is_empty",
    "test_list": "test_read_only_list",
    "test_list_prefix": "test_read_only_list_prefix",
    "test_list_empty_path": "test_read_only_list",
    "test_list_dir": "test_read_only_list_dir",
    # zarr 3.1.6 and 3.2 only: its private helpers, thin wrappers of get()
    "test_get_bytes": "test_read_only_get",
    "test_get_bytes_sync": "test_read_only_get",
    "test_get_json": "test_read_only_get",
    "test_get_json_sync": "test_read_only_get",
}


def replaced_by(name: str):
    """A skipped stand-in for an inherited write-seeding test, naming its replacement."""

    def seeds_keys(self) -> None: ...

    return pytest.mark.skip(reason=f"{SEEDS}; covered by {name}")(seeds_keys)


def expected_slice(full: bytes, byte_range) -> bytes:
    if byte_range is None:
        return full
    if isinstance(byte_range, RangeByteRequest):
        return full[byte_range.start : byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return full[byte_range.offset :]
    return full[max(0, len(full) - byte_range.suffix) :]


async def read(store: MocHiveStore, key: str, byte_range=None) -> bytes | None:
    buf = await store.get(key, prototype=default_buffer_prototype(), byte_range=byte_range)
    return None if buf is None else buf.to_bytes()


async def collect(items) -> tuple:
    return tuple([item async for item in items])


async def all_keys(store: MocHiveStore) -> list[str]:
    return list(await collect(store.list()))


async def nodes(store: MocHiveStore) -> dict[str, dict]:
    """Every node's metadata by path ('' is the root), from the root's consolidated metadata."""
    root = json.loads(await read(store, "zarr.json"))
    return {"": root, **root["consolidated_metadata"]["metadata"]}


def n_chunks(meta: dict) -> int:
    """Chunks the store lists for an array: none for a scalar (the grid mapping: its one
    value is the fill value, no chunk is stored)."""
    if not meta["shape"]:
        return 0
    chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
    return math.prod(math.ceil(n / c) for n, c in zip(meta["shape"], chunks, strict=True))


async def sample_keys(store: MocHiveStore) -> dict[str, str]:
    """One real key of each kind: root, group and array metadata, two chunk kinds."""
    meta = await nodes(store)
    out = {"root": "zarr.json"}
    for key in await all_keys(store):
        node, sep, _ = key.partition("/c/")
        if key.endswith("/zarr.json"):
            kind = meta[key.removesuffix("/zarr.json")]["node_type"]
            out.setdefault("group" if kind == "group" else "array", key)
        elif sep and node.rsplit("/", 1)[-1] in FABRICATED:
            out.setdefault("coordinate_chunk", key)
        elif sep:
            out.setdefault("field_chunk", key)
    assert set(out) == set(KINDS), f"the fixture hive lacks key kinds: {set(KINDS) - set(out)}"
    return out


@functools.cache
def leaf_objects(root: Path, product: str | None) -> list[Path]:
    """The data prefix of every leaf ``moczarr.open_hive`` reads, in dataset order."""
    opened: list[dict] = []
    moczarr.open_hive(str(root), **({"product": product} if product else {}),
                      _objects_out=opened)
    manifest = json.loads((root / (product or "") / moczarr.MANIFEST_NAME).read_bytes())
    out = []
    for obj in opened:
        leaf = Path(product or "") / moczarr.leaf_path(
            obj["node"], obj["window"], path_grouping=manifest.get("path_grouping", 1)
        )
        stamp = json.loads((root / leaf / "zarr.json").read_bytes())["attributes"]
        out.append(root / moczarr.leaf_data_prefix(str(leaf), stamp[moczarr.COMMIT_ATTR]))
    return out


@pytest.fixture(scope="session")
def hive_copy(tmp_path_factory) -> Path:
    """A private copy of a fixture hive (the fixtures directory is read-only)."""
    path = tmp_path_factory.mktemp("hive") / HIVE.name
    shutil.copytree(HIVE, path)
    return path


class TestMocHiveStore(StoreTests[MocHiveStore, Buffer]):
    store_cls = MocHiveStore
    buffer_cls = Buffer

    @pytest.fixture(params=["lazy", "open"])
    def store_kwargs(self, request, hive_copy: Path) -> dict:
        # a field chunk is one leaf's object (what :meth:`get` reads without the store);
        # the stored orders only, since a computed order has no object to read it from
        return {"source": str(hive_copy), "verify": request.param, "chunking": "leaf",
                "computed_orders": "none"}

    # -- harness hooks ----------------------------------------------------------------

    async def set(self, store: MocHiveStore, key: str, value: Buffer) -> None:
        pytest.skip(f"{SEEDS} (key {key!r})")

    async def get(self, store: MocHiveStore, key: str) -> Buffer:
        """A key's bytes read without the store where a real object backs the key.

        A field-array chunk is a chunk of one leaf: find the leaf with the reference
        reader (``moczarr.open_hive``) and read the file. Metadata and fabricated
        coordinate chunks are virtual, so they come from ``store.get``.
        """
        array, sep, tail = key.partition("/c/")
        if sep and array.rsplit("/", 1)[-1] not in FABRICATED:
            root = Path(store.backend.url.removeprefix("file://"))
            product, order, name = array.split("/")
            bare = (await nodes(store))[""]["attributes"]["morton_hive_store"]["bare"]
            leaves = leaf_objects(root, None if bare else product)
            meta = json.loads((leaves[0] / order[1:] / name / "zarr.json").read_bytes())
            per_leaf = meta["shape"][0] // meta["chunk_grid"]["configuration"]["chunk_shape"][0]
            first, *rest = (int(i) for i in tail.split("/"))
            leaf, i = divmod(first, per_leaf)
            sep = meta["chunk_key_encoding"].get("configuration", {}).get("separator", "/")
            assert meta["chunk_key_encoding"]["name"] == "default"
            path = leaves[leaf] / order[1:] / name / ("c" + sep + sep.join(map(str, [i, *rest])))
            return Buffer.from_bytes(path.read_bytes())
        data = await read(store, key)
        if data is None:
            raise FileNotFoundError(key)
        return Buffer.from_bytes(data)

    # -- abstract tests ------------------------------------------------------------------

    def test_store_repr(self, store: MocHiveStore) -> None:
        options = "" if store.verify == "lazy" else f", verify={store.verify!r}"
        assert repr(store) == (f"MocHiveStore({store.backend.url!r}{options}, chunking='leaf', "
                               "computed_orders='none')")

    def test_store_supports_writes(self, store: MocHiveStore) -> None:
        assert not store.supports_writes
        assert not store.supports_deletes

    def test_store_supports_listing(self, store: MocHiveStore) -> None:
        assert store.supports_listing
        # zarr opens a group from its own documents (a misspelt one then reaches the store)
        assert not store.supports_consolidated_metadata

    # -- inherited tests overridden on real keys ----------------------------------------

    async def test_get_not_open(self, store_not_open: MocHiveStore) -> None:
        field_chunk = (await sample_keys(store_not_open))["field_chunk"]
        observed = await read(store_not_open, field_chunk)
        assert observed == (await self.get(store_not_open, field_chunk)).to_bytes()

    async def test_get_raises(self, store: MocHiveStore) -> None:
        for key in (await sample_keys(store)).values():
            with pytest.raises((ValueError, TypeError), match=r"Unexpected byte_range, got.*"):
                await store.get(key, prototype=default_buffer_prototype(), byte_range=(0, 2))

    # -- read-only replacements ------------------------------------------------------------

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("byte_range", BYTE_REQUESTS, ids=repr)
    async def test_read_only_get(self, store: MocHiveStore, kind: str, byte_range) -> None:
        """Every ByteRequest kind on every kind of key equals slicing the full value."""
        key = (await sample_keys(store))[kind]
        full = (await self.get(store, key)).to_bytes()
        assert await read(store, key) == full
        assert await read(store, key, byte_range) == expected_slice(full, byte_range)

    async def test_read_only_get_every_key(self, store: MocHiveStore) -> None:
        """Every listed key reads, concurrently, as the bytes of the object behind it."""
        keys = await all_keys(store)
        observed = await asyncio.gather(*(read(store, key) for key in keys))
        for key, data in zip(keys, observed, strict=True):
            assert data == (await self.get(store, key)).to_bytes(), key

    async def test_read_only_get_missing(self, store: MocHiveStore) -> None:
        """Missing keys, v2 probes and chunk keys off the grid read as ``None``."""
        keys = await sample_keys(store)
        array = keys["field_chunk"].rsplit("/c/", 1)[0]
        for key in (
            "foo", "c/0", ".zgroup", ".zattrs", ".zmetadata", f"{array}/.zarray",
            f"{array}/c/999999", f"{array}/c/0/0", f"{array}/c/x", f"{array}/c/-1",
            f"{array}/c/01", f"{array}/c", f"{array}/zarr.json/c/0",
        ):
            assert await read(store, key) is None, key
            assert await read(store, key, RangeByteRequest(0, 1)) is None, key

    async def test_read_only_getsize(self, store: MocHiveStore) -> None:
        for key in await all_keys(store):
            assert await store.getsize(key) == len((await self.get(store, key)).to_bytes()), key
        with pytest.raises(FileNotFoundError):
            await store.getsize("foo/zarr.json")

    async def test_read_only_getsize_prefix(self, store: MocHiveStore) -> None:
        """Sizes add up over list_prefix, with directory (not string) prefix semantics."""
        array = (await sample_keys(store))["field_chunk"].rsplit("/c/", 1)[0]
        listed = await collect(store.list_prefix(array + "/"))
        total = sum([await store.getsize(k) for k in listed])
        assert await store.getsize_prefix(array) == total > 0
        assert await store.getsize_prefix(array[:-1]) == 0  # a string prefix is no directory
        everything = sum([await store.getsize(k) for k in await all_keys(store)])
        product = array.split("/")[0]
        assert 0 < await store.getsize_prefix(product) < everything

    @pytest.mark.parametrize("not_open", [False, True])
    @pytest.mark.parametrize("read_only", [False, True])
    async def test_read_only_writes_refused(
        self, store_kwargs: dict, read_only: bool, not_open: bool
    ) -> None:
        """set / set_if_not_exists / delete raise, and nothing appears."""
        kwargs = {**store_kwargs, "read_only": read_only}
        store = MocHiveStore(**kwargs) if not_open else await MocHiveStore.open(**kwargs)
        keys = await sample_keys(store)
        before = {k: await read(store, k) for k in await all_keys(store)}
        data = Buffer.from_bytes(b"\x01\x02\x03\x04")
        for key in ["foo", "foo/zarr.json", "c/0", *keys.values()]:
            for write in (
                lambda k: store.set(k, data),
                lambda k: store.set_if_not_exists(k, data),
                store.delete,
            ):
                with pytest.raises(ValueError, match=READ_ONLY):
                    await write(key)
        assert await read(store, "foo") is None
        assert await read(store, "c/0") is None
        assert {k: await read(store, k) for k in await all_keys(store)} == before

    async def test_read_only_clear_refused(self, store: MocHiveStore) -> None:
        before = await all_keys(store)
        with pytest.raises((ValueError, NotImplementedError)):
            await store.clear()
        with pytest.raises((ValueError, NotImplementedError)):
            await store.delete_dir("")
        assert await all_keys(store) == before

    async def test_read_only_pickle(self, store: MocHiveStore) -> None:
        """A pickled store is equal, small (its recipe and, once opened, the structure it
        presents), and reads the same bytes."""
        payload = pickle.dumps(store)
        assert len(payload) < 16_384
        new_store = pickle.loads(payload)
        assert new_store == store
        assert hash(new_store) == hash(store)
        assert new_store.read_only == store.read_only
        for key in (await sample_keys(store)).values():
            assert await read(new_store, key) == await read(store, key)

    async def test_read_only_with_read_only(self, store: MocHiveStore, store_kwargs: dict) -> None:
        """with_read_only(True): a read-only copy equal to one built read-only."""
        reader = store.with_read_only(True)
        assert reader.read_only
        assert not store.read_only  # the original is untouched
        assert reader == MocHiveStore(**store_kwargs, read_only=True)
        assert reader == reader.with_read_only(True)
        assert pickle.loads(pickle.dumps(reader)) == reader
        for key in (await sample_keys(store)).values():
            assert await read(reader, key) == await read(store, key)
        with pytest.raises(ValueError, match=READ_ONLY):
            await reader.set("foo", Buffer.from_bytes(b"bar"))
        with pytest.raises(
            NotImplementedError,
            match=f"with_read_only is not implemented for the {type(store)} store type.",
        ):
            store.with_read_only(False)

    @pytest.mark.parametrize(
        "make",
        [list, iter, lambda pairs: (p for p in pairs)],
        ids=["list", "iterator", "generator"],
    )
    async def test_read_only_get_partial_values(self, store: MocHiveStore, make) -> None:
        """One result per request, in order, from a one-shot iterable; None when missing."""
        assert await store.get_partial_values(default_buffer_prototype(), make([])) == []
        keys = await sample_keys(store)
        pairs = [(k, r) for k in keys.values() for r in BYTE_REQUESTS]
        pairs += [("foo", None), (keys["field_chunk"], SuffixByteRequest(2))]
        observed = await store.get_partial_values(default_buffer_prototype(), make(pairs))
        assert len(observed) == len(pairs)
        for (key, byte_range), buf in zip(pairs, observed, strict=True):
            expected = await read(store, key, byte_range)
            assert (None if buf is None else buf.to_bytes()) == expected, (key, byte_range)
        assert observed[-2] is None

    async def test_read_only_exists(self, store: MocHiveStore) -> None:
        for key in await all_keys(store):
            assert await store.exists(key), key
        array = (await sample_keys(store))["array"].removesuffix("/zarr.json")
        for key in ("foo", "foo/zarr.json", ".zgroup", array, f"{array}/c", f"{array}/c/999999"):
            assert not await store.exists(key), key

    async def test_read_only_is_empty(self, store: MocHiveStore) -> None:
        product = (await sample_keys(store))["group"].split("/")[0]
        assert not await store.is_empty("")
        assert not await store.is_empty(product)
        assert not await store.is_empty(product + "/")
        assert await store.is_empty(product[:-1])  # a string prefix is no directory
        assert await store.is_empty("spam/")

    async def test_read_only_list(self, store: MocHiveStore) -> None:
        """list() == list_prefix(""): unique keys that all read, one zarr.json per node."""
        keys = await all_keys(store)
        assert len(keys) == len(set(keys))
        assert sorted(keys) == sorted(await collect(store.list_prefix("")))
        for key in keys:
            assert await read(store, key) is not None, key
        meta = await nodes(store)
        assert meta[""]["node_type"] == "group" and meta[""]["zarr_format"] == 3
        metadata_keys = {k.removesuffix("zarr.json").rstrip("/") for k in keys
                         if k.rsplit("/", 1)[-1] == "zarr.json"}
        assert metadata_keys == set(meta)
        for path, node in meta.items():
            if node["node_type"] == "array":
                chunks = [k for k in keys if k.startswith(f"{path}/c/")]
                assert len(chunks) == n_chunks(node), path

    async def test_read_only_list_prefix(self, store: MocHiveStore) -> None:
        keys = await all_keys(store)
        prefixes = {""} | {k.rsplit("/", i)[0] + "/" for k in keys for i in (1, 2) if "/" in k}
        for prefix in sorted(prefixes):
            observed = sorted(await collect(store.list_prefix(prefix)))
            assert observed == sorted(k for k in keys if k.startswith(prefix)), prefix
        assert await collect(store.list_prefix("spam/")) == ()

    async def _check_list_dir(self, store: MocHiveStore, chunk_dirs: bool) -> None:
        """list_dir(p) == the next path segment of every key below p, with or without '/'."""
        keys = await all_keys(store)
        meta = await nodes(store)
        dirs = {""} | {k.rsplit("/", i)[0] for k in keys for i in range(1, k.count("/") + 1)}
        for path in sorted(d for d in dirs if (d not in meta) == chunk_dirs):
            stem = f"{path}/" if path else ""
            expected = sorted({k[len(stem) :].split("/")[0] for k in keys if k.startswith(stem)})
            for prefix in {path, stem}:
                observed = await collect(store.list_dir(prefix))
                assert sorted(observed) == expected, f"list_dir({prefix!r})"
                assert len(observed) == len(set(observed))

    async def test_read_only_list_dir(self, store: MocHiveStore) -> None:
        """Groups and arrays list their children (zarr.json, members, 'c')."""
        await self._check_list_dir(store, chunk_dirs=False)
        for missing in ("spam", "spam/", "zarr.json"):
            assert await collect(store.list_dir(missing)) == ()

    async def test_read_only_list_dir_chunk_dirs(self, store: MocHiveStore) -> None:
        """Chunk directories ('<array>/c', '<array>/c/i', ...) list their chunk indices."""
        await self._check_list_dir(store, chunk_dirs=True)
        array = (await sample_keys(store))["field_chunk"].rsplit("/c/", 1)[0]
        for junk in (f"{array}/c/x", f"{array}/c/999999", f"{array}/c/0/0/0"):
            assert await collect(store.list_dir(junk)) == (), junk


for _name, _replacement in REPLACED.items():
    if hasattr(StoreTests, _name):  # the harness of the installed zarr has this test
        setattr(TestMocHiveStore, _name, replaced_by(_replacement))
