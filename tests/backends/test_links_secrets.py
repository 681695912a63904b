"""Local hives and links; credentials never printed; the command line escapes names.

Links: by default an object whose real path lies outside the hive root is refused with
``OutsideRootError`` naming it by its hive-relative path, and the digit-tree walk never
lists through a link out of the root; ``follow_links=True`` reads through such links.
Links that stay inside the root read either way.

Secrets: URL user-info, signed query strings and storage options never appear in a store's
``repr``/``str``, in an error (its chain included), a warning, a log record or the command
line's output, against loopback S3 (moto) and HTTP servers made to fail.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import pickle
import shutil
import time
import traceback
import warnings
from asyncio import run as sync

import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES, rename_count
from support.servers import CLIENT, RETRY, Fault, LoopbackServer, StaticFiles, s3_options
from zarr.buffer import default_buffer_prototype

from moczarr_store import HiveWarning, MocHiveStore, OptionError, OutsideRootError
from moczarr_store.cli import escape, main
from moczarr_store.io import local as local_module
from moczarr_store.io.backend import Backend
from moczarr_store.io.redact import redact, scrub

pytest_plugins = ["support.servers"]

GROUP = "atl06/o7"
LEAF = "4/4/4/1/1/2/444112.zarr"


def _values(store: MocHiveStore, name: str = "h_mean") -> np.ndarray:
    return xr.open_zarr(store, group=GROUP)[name].values


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    ds = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned"), group=GROUP)
    return {name: ds[name].values for name in ("h_mean", "count")}


def _outside(tmp_path, root, rel: str):
    """Move ``root/rel`` out of the hive and leave a link to it in its place."""
    target = tmp_path / "elsewhere" / rel.replace("/", "_")
    target.parent.mkdir(exist_ok=True)
    shutil.move(root / rel, target)
    os.symlink(target, root / rel)
    return target


# where the system has no openat2 (Linux 5.6) or no /proc/self/fd, the reader checks in
# the ways left to it
LINK_CHECKS = (["openat2"] * (local_module._OPEN_NO_LINKS is not None)
               + ["kernel"] * local_module._HAS_FD_PATHS + ["lstat"])


@pytest.fixture(params=LINK_CHECKS)
def link_checks(request, monkeypatch):
    """Each way a local reader checks where an object really is: an open that fails on any
    link (``openat2``; the other ways where it does), the kernel's real path of the open
    file (``/proc/self/fd``), and one ``lstat`` per directory (no ``/proc``)."""
    if request.param != "openat2":
        monkeypatch.setattr(local_module, "_OPEN_NO_LINKS", None)
        monkeypatch.setattr(local_module, "_HAS_FD_PATHS", request.param == "kernel")
    return request.param


def _chunk(root, field: str = "h_mean") -> str:
    stamp = json.loads((root / LEAF / "zarr.json").read_text())["attributes"]
    return f"{LEAF}/{stamp['morton_hive_commit']['current']}/7/{field}/c/0"


# -- links ----------------------------------------------------------------------------------


def _refused(err: pytest.ExceptionInfo, rel: str, outside) -> None:
    message = str(err.value)
    assert rel in message and "out of the hive root" in message
    assert str(outside) not in message  # the hive-relative path only


@pytest.mark.parametrize("page_cache", [True, False])
def test_a_chunk_linked_out_of_the_root_is_refused_unless_links_are_followed(
        hive_copy, tmp_path, reference, monkeypatch, page_cache, link_checks):
    if not page_cache:  # every read waits on a worker thread
        monkeypatch.setattr(local_module, "_NOWAIT", None)
    root = hive_copy("bare_versioned")
    key = _chunk(root)
    outside = _outside(tmp_path, root, key)
    with pytest.raises(OutsideRootError) as err:
        _values(MocHiveStore(root))
    _refused(err, key, outside)
    np.testing.assert_array_equal(_values(MocHiveStore(root), "count"), reference["count"])
    followed = MocHiveStore(root, follow_links=True)
    np.testing.assert_array_equal(_values(followed), reference["h_mean"])
    clone = pickle.loads(pickle.dumps(followed))
    assert clone == followed and clone != MocHiveStore(root)
    np.testing.assert_array_equal(_values(clone), reference["h_mean"])


@pytest.mark.parametrize("chunking", ["shard", "leaf", "inner"])
def test_a_shard_linked_out_of_the_root_is_refused_in_every_mode(hive_copy, tmp_path,
                                                                   chunking, link_checks):
    root = hive_copy("sharded")
    stamp = json.loads((root / "4/4/4/1/1/44411.zarr/zarr.json").read_text())["attributes"]
    key = f"4/4/4/1/1/44411.zarr/{stamp['morton_hive_commit']['current']}/7/count/c/0"
    outside = _outside(tmp_path, root, key)
    ds = xr.open_zarr(MocHiveStore(root, chunking=chunking), group=GROUP)
    for selection in (slice(None), slice(0, 4)):
        with pytest.raises(OutsideRootError) as err:
            ds["count"][selection].values  # noqa: B018
        _refused(err, key, outside)


def _leaf_rows(root) -> np.ndarray:
    """The rows of ``LEAF`` in the group (its 16 cells), by the store's ``morton``."""
    morton = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned"), group=GROUP)["morton"]
    leaf = xr.open_zarr(MocHiveStore(FIXTURES / "bare_versioned", aoi=["444112"]),
                        group=GROUP)["morton"].values
    return np.isin(morton.values, leaf)


@pytest.mark.parametrize("verify", ["lazy", "open"])
def test_a_leaf_directory_linked_out_of_the_root_is_refused_not_the_hive(
        hive_copy, tmp_path, reference, link_checks, verify):
    """That object reads as missing with one warning naming it (by its hive-relative
    path), as other damage does; every other leaf reads."""
    root = hive_copy("bare_versioned")
    outside = _outside(tmp_path, root, LEAF)
    with pytest.warns(HiveWarning) as caught:
        got = _values(MocHiveStore(root, verify=verify))
    rows = _leaf_rows(root)
    assert 0 < rows.sum() < rows.size
    if verify == "open":  # every stamp read at open: the refused leaf's node is dropped
        np.testing.assert_array_equal(got, reference["h_mean"][~rows])
    else:
        np.testing.assert_array_equal(got[~rows], reference["h_mean"][~rows])
        assert np.isnan(got[rows]).all()
    said = [str(w.message) for w in caught if LEAF in str(w.message)]
    assert len(said) == 1 and "link out of the hive root" in said[0]
    assert str(outside) not in said[0]
    np.testing.assert_array_equal(_values(MocHiveStore(root, follow_links=True)),
                                  reference["h_mean"])


def test_a_leaf_linked_out_of_the_root_leaves_inspect_and_refs_working(
        hive_copy, tmp_path, capsys):
    from support.refs_read import mdim_values

    root = hive_copy("bare_versioned")
    _outside(tmp_path, root, LEAF)
    assert main(["inspect", str(root)]) == 0
    err = capsys.readouterr().err
    assert LEAF in err and "link out of the hive root" in err
    out = tmp_path / "refs.sqlite"
    assert main(["refs", str(root), "--format", "mdim-refs", str(out)]) == 0
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        want = _values(MocHiveStore(root))
    np.testing.assert_array_equal(mdim_values(out)[f"{GROUP}/h_mean"], want)


def test_the_walk_never_lists_through_a_link_out_of_the_root(hive_copy, tmp_path):
    root = hive_copy("bare_versioned")
    (root / "coverage.moc").unlink()  # the digit tree must be walked
    with pytest.warns(HiveWarning):
        walked = _values(MocHiveStore(root))
    outside = _outside(tmp_path, root, "4/4")
    backend = Backend(root)
    assert sync(backend.list_dir("4")) == (["4"], [])  # the link itself is listed
    with pytest.raises(OutsideRootError) as err:
        sync(backend.list_dir("4/4"))
    _refused(err, "4/4", outside)
    with pytest.warns(Warning), pytest.raises(ValueError, match="out of the hive root"):
        _values(MocHiveStore(root))
    assert sync(Backend(root, follow_links=True).list_dir("4/4")) == (["4"], [])
    with pytest.warns(HiveWarning):
        np.testing.assert_array_equal(_values(MocHiveStore(root, follow_links=True)), walked)


def test_a_manifest_linked_out_of_the_root_is_refused(hive_copy, tmp_path):
    root = hive_copy("bare_versioned")
    outside = _outside(tmp_path, root, "morton_hive.json")
    with pytest.raises(OutsideRootError) as err:
        zarr.open_group(MocHiveStore(root), mode="r")
    _refused(err, "morton_hive.json", outside)
    with pytest.raises(OutsideRootError):
        sync(Backend(root).size("morton_hive.json"))
    assert sync(Backend(root, follow_links=True).size("morton_hive.json")) > 0


def test_links_that_stay_inside_the_root_read_either_way(hive_copy, reference, link_checks):
    root = hive_copy("bare_versioned")
    key = _chunk(root)
    spare = root / "spare" / "h_mean_c_0"
    spare.parent.mkdir()
    shutil.move(root / key, spare)
    os.symlink(spare, root / key)  # an absolute link, inside
    shutil.move(root / LEAF, root / "spare" / "leaf")
    os.symlink("../../../../../../spare/leaf", root / LEAF)  # a relative link, inside
    for follow in (False, True):
        np.testing.assert_array_equal(_values(MocHiveStore(root, follow_links=follow)),
                                      reference["h_mean"])


def test_a_hive_root_that_is_itself_a_link_reads(tmp_path, reference):
    os.symlink(FIXTURES / "bare_versioned", tmp_path / "hive")
    np.testing.assert_array_equal(_values(MocHiveStore(tmp_path / "hive")), reference["h_mean"])


def test_a_directory_is_checked_once(hive_copy, monkeypatch, link_checks):
    root = hive_copy("bare_versioned")
    calls = {"readlink": 0, "islink": 0}
    for name, module in (("readlink", os), ("islink", os.path)):
        original = getattr(module, name)

        def counted(path, _original=original, _name=name):
            calls[_name] += 1
            return _original(path)

        monkeypatch.setattr(module, name, counted)
    backend = Backend(root)
    for key in (_chunk(root), _chunk(root, "count"), _chunk(root)):
        assert sync(backend.get(key)) == (root / key).read_bytes()
    new_dirs = len(_chunk(root).split("/")) - 1 + 2  # the chunk's dirs, + count and count/c
    if link_checks == "openat2":  # each open checks its whole way, in the kernel
        assert calls == {"readlink": 0, "islink": 0}
    elif link_checks == "kernel":  # one readlink per object in a directory not yet known
        assert calls == {"readlink": 2, "islink": 0}
    else:
        assert calls == {"readlink": 0, "islink": new_dirs}


def test_an_unreadable_proc_falls_back_to_the_directory_checks(hive_copy, tmp_path,
                                                                monkeypatch):
    monkeypatch.setattr(local_module, "_HAS_FD_PATHS", True)  # as on Linux, /proc refused
    root = hive_copy("bare_versioned")
    key = _chunk(root)
    want = (root / key).read_bytes()
    outside = _outside(tmp_path, root, LEAF)

    readlink = os.readlink

    def refused(path, *args, **kwargs):
        if str(path).startswith("/proc/"):
            raise PermissionError(13, "Permission denied", path)
        return readlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "readlink", refused)
    with pytest.raises(OutsideRootError) as err:
        sync(Backend(root).get(key))
    _refused(err, LEAF, outside)
    assert sync(Backend(root, follow_links=True).get(key)) == want


@pytest.mark.parametrize("refusal", [errno.ENOSYS, errno.EPERM])
def test_an_unusable_openat2_is_turned_off_and_objects_open_as_before(monkeypatch, refusal):
    """A kernel without ``openat2`` (or a filter refusing it) says so at the first open:
    that object and every later one are opened and checked as without it."""
    root = FIXTURES / "bare_versioned"
    tried: list[bytes] = []

    def refused(full: bytes, path_only: bool = False) -> int:
        tried.append(full)
        return -refusal

    monkeypatch.setattr(local_module, "_OPEN_NO_LINKS", refused)
    backend = Backend(root)
    for key in (_chunk(root), _chunk(root, "count"), "morton_hive.json"):
        assert sync(backend.get(key)) == (root / key).read_bytes()
    assert sync(backend.get("no/such/object")) is None
    assert len(tried) == 1 and local_module._OPEN_NO_LINKS is None


def test_a_missing_object_behind_a_link_out_of_the_root_is_refused_not_missing(
        hive_copy, tmp_path, link_checks):
    root = hive_copy("bare_versioned")
    outside = _outside(tmp_path, root, LEAF)
    key = _chunk(root).replace("/c/0", "/c/9")  # no such chunk, there or here
    with pytest.raises(OutsideRootError) as err:
        sync(Backend(root).get(key))
    _refused(err, LEAF, outside)


def test_a_directory_linked_out_beside_directories_read_is_refused(hive_copy, tmp_path,
                                                                    link_checks):
    """A read teaches the reader the directories on its way (each one step from a known
    one is then checked with one ``lstat``): a field's directory beside them that is a
    link out of the root is refused all the same, one that stays inside reads."""
    root = hive_copy("bare_versioned")
    backend = Backend(root)
    assert sync(backend.get(_chunk(root))) == (root / _chunk(root)).read_bytes()
    count = _chunk(root, "count").removesuffix("/c/0")
    outside = _outside(tmp_path, root, count)
    with pytest.raises(OutsideRootError) as err:
        sync(backend.get(f"{count}/zarr.json"))
    _refused(err, count, outside)
    h_min = _chunk(root, "h_min").removesuffix("/c/0")
    shutil.move(root / h_min, root / LEAF / "moved")
    os.symlink(root / LEAF / "moved", root / h_min)
    assert sync(backend.get(f"{h_min}/zarr.json")) == (root / h_min / "zarr.json").read_bytes()


# -- secrets -----------------------------------------------------------------------------------

SECRETS = ("AKIDSECRET", "KEYSECRET", "TOKENSECRET", "PWSECRET", "SIGSECRET", "QSECRET")


def _texts(err: BaseException | None) -> list[str]:
    """Everything an exception shows: message, repr and formatted traceback, along its
    whole chain of causes and contexts."""
    out = []
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        out += [str(err), repr(err), *traceback.format_exception(err)]
        err = err.__cause__ or err.__context__
    return out


def _assert_clean(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, (secret, text)


def _attempt(store: MocHiveStore, caplog) -> tuple[list[str], Exception | None]:
    """Open and read ``store``: every message it produced along the way, and its error."""
    texts = [repr(store), str(store), repr(store.backend), str(store.backend)]
    caplog.set_level(logging.DEBUG)
    failure = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _values(store)
        except Exception as err:
            texts += _texts(err)
            failure = err
    texts += [str(w.message) for w in caught]
    texts += [record.getMessage() for record in caplog.records]
    return texts, failure


def test_redact_hides_user_info_and_every_query_value():
    text = ("GET https://user:PWSECRET@host:8/a/b?X-Amz-Signature=SIGSECRET&X-Amz-Credential"
            "=AKIDSECRET%2Fx&sig=SIGSECRET&token=TOKENSECRET&QSECRET#frag and "
            's3://AKIDSECRET:KEYSECRET@bucket/hive, HTTPStore("http://u:PWSECRET@h/x?sig=SIGSECRET")')
    clean = redact(text)
    _assert_clean(clean)
    assert "https://***@host:8/a/b?X-Amz-Signature=***&X-Amz-Credential=***&sig=***" in clean
    assert "s3://***@bucket/hive" in clean
    assert redact("file:///data/hive and plain text") == "file:///data/hive and plain text"


def test_redact_hides_a_fragment_with_or_without_a_query():
    for url in ("https://host/hive#access_token=TOKENSECRET",
                "https://host/hive#TOKENSECRET?x=1", "https://host/hive?x=1#TOKENSECRET"):
        clean = redact(f"failed: {url} (404)")
        _assert_clean(clean)
        assert clean.startswith("failed: https://host/hive") and clean.endswith("#*** (404)")


def _fastest(fn, *args, repeat: int = 7) -> float:
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("unit", ["a", "a1", "ab-1.x+"])
def test_redact_takes_time_linear_in_its_input(unit):
    """A complexity check, not a time limit: 4x the input must cost well under the 16x a
    quadratic scan costs (long runs of scheme characters made the URL regex retry every
    letter; 40,000 characters took seconds). The fastest of 9 runs of each, so that a
    busy machine does not decide."""
    small, large = unit * (12_500 // len(unit)), unit * (50_000 // len(unit))
    assert redact(small) == small and redact(large + "://k:s@h") == large + "://***@h"
    ratio = _fastest(redact, large, repeat=9) / _fastest(redact, small, repeat=9)
    assert ratio < 10, f"4x the input took {ratio:.1f}x the time"


def test_secret_storage_options_are_scrubbed_from_messages():
    options = {"secret_access_key": "KEYSECRET", "client_options": {
        "default_headers": {"Authorization": "Bearer TOKENSECRET"}}, "region": "us-east-1"}
    text = scrub("failed: KEYSECRET / Bearer TOKENSECRET / us-east-1", options)
    _assert_clean(text)
    assert text.endswith("us-east-1")  # not a secret: left for the diagnosis


@pytest.mark.parametrize("options", [{"bogus": "x"}, {"client_options": {"timeout": "soon"}}])
def test_an_unusable_configuration_is_an_error_without_credentials(options):
    """Refused at construction (the obstore store is built then, without a request)."""
    url = "s3://AKID" + "SECRET:KEY" + "SECRET@bucket/hive"  # not in the traceback's source
    secrets = {"access_key_id": "AKID" + "SECRET", "secret_access_key": "KEY" + "SECRET"}
    with pytest.raises(OptionError, match="bogus|soon") as err:
        MocHiveStore(url, storage_options={**secrets, **options})
    _assert_clean(*_texts(err.value))


@pytest.mark.parametrize("url", [
    "s3://AKIDSECRET:KEYSECRET@bucket/hive",
    "https://user:PWSECRET@example.invalid/hive?X-Amz-Signature=SIGSECRET&token=TOKENSECRET",
    "gs://bucket/hive?sig=SIGSECRET",
])
def test_a_store_never_shows_credentials_of_its_url(url):
    unsigned = {"skip_signature": True} if url.startswith("s3") else None
    store = MocHiveStore(url, storage_options=unsigned)
    _assert_clean(repr(store), str(store), repr(store.backend), repr(store.with_read_only(True)))
    assert "***" in repr(store)


def test_a_dask_token_never_holds_credentials():
    from dask.base import tokenize

    url = "s3://AKIDSECRET:KEYSECRET@bucket/hive"
    options = {"access_key_id": "AKID" + "SECRET", "secret_access_key": "OPTION" + "SECRET",
               "session_token": "TOKEN" + "SECRET"}
    store = MocHiveStore(url, **options)
    _assert_clean(repr(store.__dask_tokenize__()), tokenize(store))
    assert "OPTIONSECRET" not in repr(store.__dask_tokenize__())
    assert tokenize(store) == tokenize(store)
    other = MocHiveStore(url, **{**options, "secret_access_key": "OTHER" + "SECRET"})
    assert tokenize(store) != tokenize(other)


def test_s3_errors_never_show_credentials(s3_server, fault_proxy, caplog):
    secret = {"access_key_id": "AKIDSECRET", "secret_access_key": "KEYSECRET",
              "session_token": "TOKENSECRET"}
    stores = [
        MocHiveStore("s3://hive/pre/absent",
                     storage_options=s3_options(s3_server.url, **secret)),  # missing
        MocHiveStore("s3://hive/pre/bare_versioned",
                     storage_options=s3_options(fault_proxy.url, **secret)),
        MocHiveStore("s3://AKIDSECRET:KEYSECRET@hive/pre/bare_versioned",
                     storage_options=s3_options("http://127.0.0.1:9", **secret)),  # a dead port
    ]
    fault_proxy.inject(Fault("status", status=403, times=1000))
    for store in stores:
        texts, failure = _attempt(store, caplog)
        _assert_clean(*texts)
        assert failure is not None  # each attempt did fail


def test_http_errors_never_show_credentials(tmp_path, caplog):
    shutil.copytree(FIXTURES / "bare_versioned", tmp_path / "bare_versioned")
    server = LoopbackServer(StaticFiles(tmp_path))
    try:
        query = "?X-Amz-Signature=SIGSECRET&token=TOKENSECRET&sig=QSECRET"
        options = {"storage_options": {"client_options": CLIENT, "retry_config": RETRY}}
        base = f"http://user:PWSECRET@127.0.0.1:{server.port}/bare_versioned{query}"
        good = MocHiveStore(base, **options)
        texts = [repr(good), str(good)]
        ds = xr.open_zarr(good, group=GROUP)  # reads, credentials and all
        server.inject(Fault("status", status=403, match="/c/", times=1000))
        try:
            ds["h_mean"].values  # noqa: B018
        except Exception as err:
            texts += _texts(err)
        else:
            pytest.fail("a 403 on every chunk must fail the read")
        server.inject(Fault("reset", match="morton_hive.json", times=1000))
        dead = f"http://user:PWSECRET@127.0.0.1:9/bare_versioned{query}"
        for store in (MocHiveStore(base, **options), MocHiveStore(dead, **options)):
            more, failure = _attempt(store, caplog)
            texts += more
            assert type(failure).__name__ == "ObjectReadError", failure
        _assert_clean(*texts)
        assert any("ChunkReadError" in t for t in texts)
    finally:
        server.stop()


def test_the_command_line_never_shows_credentials(http_server, capsys):
    query = "?X-Amz-Signature=SIGSECRET&token=TOKENSECRET"
    for url in (f"http://user:PWSECRET@127.0.0.1:{http_server.port}/bare_versioned{query}",
                f"http://user:PWSECRET@127.0.0.1:9/bare_versioned{query}"):
        code = main(["inspect", url, "--verify", "lazy"])
        out, err = capsys.readouterr()
        _assert_clean(out, err)
        assert "***" in out + err
    assert code == 4  # the dead port: the hive cannot be read


# -- the command line escapes what the hive names ---------------------------------------------


def test_escape_leaves_no_control_or_invisible_character():
    for raw, shown in [("a\x1b[31mb", "a\\x1b[31mb"), ("x\ny", "x\\ny"),
                       ("\u202eabc", "\\u202eabc"), ("back\\slash", "back\\\\slash"),
                       ("é c.0", "é c.0")]:
        assert escape(raw) == shown
    assert all(escape(chr(i)).isprintable() for i in range(0x10000) if not 0xD800 <= i < 0xE000)


def test_the_command_line_escapes_names_from_the_hive(hive_copy, capsys):
    root = hive_copy("bare_versioned")
    name = "evil\x1b]0;title\x07\nname"
    rename_count(root, name)
    code = main(["inspect", str(root), "--verify", "lazy"])
    out, err = capsys.readouterr()
    assert "evil" in out + err
    assert not any(ch in out + err for ch in "\x1b\x07\r") and "\nname" not in out + err
    assert code == 0  # that array is refused (not presented), not the hive
    assert "x1b]0;title" in err and "not a valid zarr node name" in err  # named, escaped


def test_serve_answers_the_other_leaves_of_a_hive_with_a_leaf_linked_out(hive_copy, tmp_path):
    from support.serving import Served, fetch

    from moczarr_store.serve import create_app

    root = hive_copy("bare_versioned")
    _outside(tmp_path, root, LEAF)  # node 1 of the group's domain: chunk 1 of each field
    clean = MocHiveStore(FIXTURES / "bare_versioned", chunking="leaf")
    want = sync(clean.get(f"{GROUP}/h_mean/c/0", default_buffer_prototype())).to_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        with Served(create_app(root, stamp_ttl=600, chunking="leaf")) as server:
            status, _, body = fetch(server, f"/{GROUP}/h_mean/c/0")
            assert (status, body) == (200, want)
            assert fetch(server, f"/{GROUP}/h_mean/c/1")[0] == 404  # read as missing
            assert fetch(server, f"/{GROUP}/zarr.json")[0] == 200
