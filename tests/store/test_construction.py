"""Constructing a store: storage options as zarr's and xarray's users write them, keywords
checked at construction, windows and AOIs checked against the hive, ``repr``, and what
``zarr.open_group(store).info`` says about writing."""

from __future__ import annotations

import asyncio
import copy
import warnings

import moczarr
import numpy as np
import pytest
import xarray as xr
import zarr
from support.hives import FIXTURES
from support.servers import CREDENTIALS, REGION, RETRY, assert_same_read, s3_url

from moczarr_store import HiveWarning, MocHiveStore, OptionError
from moczarr_store.hive.ids import decimal_to_word
from moczarr_store.io.storage import obstore_options

pytest_plugins = ["support.servers"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HiveWarning)
        yield


# -- storage options ----------------------------------------------------------------------------


def test_fsspec_storage_options_read_over_s3(s3_server):
    """s3fs's spellings (``anon``, ``client_kwargs``, ``key``/``secret``), through
    ``from_url`` and the ``storage_options=`` keyword; obstore's own keys pass through."""
    local = MocHiveStore(FIXTURES / "bare_versioned")
    client = {"endpoint_url": s3_server.url, "region_name": REGION}
    anonymous = MocHiveStore.from_url(
        s3_url("bare_versioned"),
        storage_options={"anon": True, "client_kwargs": client, "retry_config": RETRY},
    )
    signed = MocHiveStore(
        s3_url("bare_versioned"),
        storage_options={"key": CREDENTIALS["access_key_id"],
                         "secret": CREDENTIALS["secret_access_key"],
                         "endpoint_url": s3_server.url, "region_name": REGION},
        chunking="shard",
    )
    for remote in (anonymous, signed):
        assert_same_read(remote, local, "atl06/o7")
    assert anonymous.backend.options["skip_signature"] is True
    assert signed.backend.options["client_options"] == {"allow_http": True}  # http endpoint


def test_plain_http_sets_allow_http(http_server):
    remote = MocHiveStore(f"{http_server.url}/bare_versioned")
    assert remote.backend.options == {"client_options": {"allow_http": True}}
    assert_same_read(remote, MocHiveStore(FIXTURES / "bare_versioned"), "atl06/o7")
    explicit = MocHiveStore(f"{http_server.url}/x",
                            storage_options={"client_options": {"allow_http": False}})
    assert explicit.backend.options["client_options"] == {"allow_http": False}  # as given


@pytest.mark.parametrize("url,given,want", [
    ("s3://b/h", {"anon": False, "token": "T", "requester_pays": True},
     {"session_token": "T", "request_payer": True}),
    ("s3://b/h", {"use_ssl": False, "endpoint_url": "x"},
     {"endpoint": "x", "client_options": {"allow_http": True}}),
    ("gs://b/h", {"token": "anon"}, {"skip_signature": True}),
    ("gs://b/h", {"token": {"type": "service_account"}},
     {"service_account_key": '{"type": "service_account"}'}),
    ("gs://b/h", {"token": "google_default", "endpoint_url": "http://g"},
     {"base_url": "http://g", "client_options": {"allow_http": True}}),  # a plain http endpoint
    ("gs://b/h", {"base_url": "https://g"}, {"base_url": "https://g"}),
    ("az://c/h", {"endpoint": "http://127.0.0.1:10000/a"},
     {"endpoint": "http://127.0.0.1:10000/a", "client_options": {"allow_http": True}}),
    ("az://c/h", {"azure_storage_endpoint": "HTTP://a", "client_options": {"allow_http": False}},
     {"azure_storage_endpoint": "HTTP://a", "client_options": {"allow_http": False}}),  # as given
    ("https://h/x", {"headers": {"X-A": "1"}},
     {"client_options": {"default_headers": {"X-A": "1"}}}),
])
def test_fsspec_spellings_map_to_obstore(url, given, want):
    before = copy.deepcopy(given)
    assert obstore_options(url, given) == want
    assert given == before  # the caller's dict is not changed


@pytest.mark.parametrize("given", [{"config_kwargs": {}}, {"project": "p"}])
def test_fsspec_options_without_an_obstore_meaning_are_refused(given):
    with pytest.raises(OptionError, match="no obstore equivalent"):
        MocHiveStore("gs://b/h", storage_options=given)


@pytest.mark.parametrize("url,keyword,hint", [
    ("s3://b/h", {"chunkng": "inner"}, "chunking"),
    ("s3://b/h", {"endpont": "http://x"}, "endpoint"),
    ("gs://b/h", {"veriffy": "open"}, "verify"),
    (str(FIXTURES / "sharded"), {"windw": "2019"}, "window"),
    ("https://h/x", {"region": "x"}, None),
])
def test_a_misspelt_keyword_is_refused_at_construction_naming_the_valid_ones(url, keyword, hint):
    with pytest.raises(OptionError) as err:
        MocHiveStore(url, **keyword)
    message = str(err.value)
    assert f"unknown keyword {next(iter(keyword))!r}" in message
    assert "MocHiveStore takes verify, chunking, window, aoi" in message
    if hint:
        assert f"did you mean {hint!r}?" in message
    if url.startswith("s3"):
        assert "skip_signature" in message and "region" in message  # obstore's keys listed


def test_an_obstore_instance_takes_no_storage_options():
    from obstore.store import LocalStore

    with pytest.raises(OptionError, match="'chunkng' .did you mean 'chunking'.*obstore store "
                                          "instance takes no storage options"):
        MocHiveStore(LocalStore(str(FIXTURES / "sharded")), chunkng="leaf")


def test_storage_options_given_twice_are_refused():
    with pytest.raises(OptionError, match="both"):
        MocHiveStore("s3://b/h", storage_options={"region": "a"}, region="b")
    with pytest.raises(OptionError, match="expected a dict"):
        MocHiveStore("s3://b/h", storage_options=["region"])


def test_storage_option_names_are_strings():
    with pytest.raises(OptionError, match="option names are strings, got 1"):
        MocHiveStore("s3://b/h", storage_options={1: "x"})


# -- arguments of the wrong type ------------------------------------------------------------------


@pytest.mark.parametrize("keyword,value,want", [
    ("max_concurrency", None, "max_concurrency=None: expected an int >= 1"),
    ("max_concurrency", "8", "max_concurrency='8': expected an int >= 1"),
    ("max_concurrency", 1.5, "max_concurrency=1.5: expected an int >= 1"),
    ("max_concurrency", True, "max_concurrency=True: expected an int >= 1"),
    ("max_concurrency", 0, "max_concurrency=0: expected an int >= 1"),
    ("follow_links", "no", "follow_links='no': expected True or False"),
    ("follow_links", 1, "follow_links=1: expected True or False"),
    ("read_only", "no", "read_only='no': expected True or False"),
])
def test_an_argument_of_the_wrong_type_is_refused_naming_it(keyword, value, want):
    """``bool("no")`` is ``True`` and ``int(1.5)`` is 1: such values are refused, not
    coerced (``follow_links="no"`` would read through links out of the root)."""
    with pytest.raises(OptionError) as err:
        MocHiveStore(FIXTURES / "sharded", **{keyword: value})
    assert str(err.value) == want


def test_numpy_scalars_are_taken_as_their_python_values():
    store = MocHiveStore(FIXTURES / "sharded", max_concurrency=np.int64(3),
                         follow_links=np.bool_(False))
    assert store.backend.max_concurrency == 3 and store.backend.follow_links is False


@pytest.mark.parametrize("source,want", [
    ("file://", "'file://' names no hive: the URL has nothing after '://'"),
    ("s3://", "'s3://' names no hive: the URL has nothing after '://'"),
    ("s3://user:secret@b/h\0", "the URL or path holds a NUL character"),
    (FIXTURES / "sharded\0", "the URL or path holds a NUL character"),
])
def test_a_source_naming_nothing_is_refused(source, want):
    with pytest.raises(OptionError) as err:
        MocHiveStore(source)
    assert str(err.value) == want


def test_the_file_system_root_stays_the_root():
    """``file:///`` is the root directory, read by the local reader (its link checks)."""
    store = MocHiveStore("file:///")
    assert store.backend.url == "file:///" and store.backend.store is None
    assert MocHiveStore(f"file://{FIXTURES / 'sharded'}/").backend.url == (
        f"file://{FIXTURES / 'sharded'}")


def test_a_key_prefix_that_is_not_a_string_is_a_clear_type_error():
    store = MocHiveStore(FIXTURES / "sharded")

    async def listed(method, prefix):
        return [key async for key in getattr(store, method)(prefix)]

    for method in ("list_dir", "list_prefix"):
        with pytest.raises(TypeError, match="a key prefix is a str, got NoneType"):
            asyncio.run(listed(method, None))


def test_construction_makes_no_request():
    store = MocHiveStore("s3://bucket/hive",
                         storage_options={"anon": True, "endpoint": "http://127.0.0.1:9"})
    assert store.request_stats.total == 0 and store.backend.store is not None


# -- windows and AOIs ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,window,listed", [
    ("windowed", "2031", "2 window(s): 2019, 2020"),
    ("windowed_explicit", "2019", "2 window(s): early, late"),
])
def test_a_window_the_product_lacks_is_an_error_listing_its_windows(name, window, listed):
    store = MocHiveStore(FIXTURES / name, window=window)
    with pytest.raises(OptionError, match=f"window='{window}': product 'atl06' has no such"):
        zarr.open_group(store, mode="r")
    with pytest.raises(OptionError) as err:
        asyncio.run(MocHiveStore(FIXTURES / name, window=window).view())
    assert listed in str(err.value)


def test_an_int_window_is_its_label():
    by_int = xr.open_zarr(MocHiveStore(FIXTURES / "windowed", window=2019), group="atl06/o7")
    by_str = xr.open_zarr(MocHiveStore(FIXTURES / "windowed", window="2019"), group="atl06/o7")
    ref = moczarr.open_hive(str(FIXTURES / "windowed"), window="2019")
    assert by_int.sizes["cells"] == ref.sizes["cells"] > 0
    np.testing.assert_array_equal(by_int["count"].values, by_str["count"].values)
    for bad in (True, 2019.0, "2019/.."):
        with pytest.raises(OptionError, match="window="):
            MocHiveStore(FIXTURES / "windowed", window=bad)


def test_a_window_on_a_hive_without_windows_is_an_error():
    with pytest.raises(OptionError, match="has no windowed product"):
        asyncio.run(MocHiveStore(FIXTURES / "bare_versioned", window="2019").view())


def test_an_int_aoi_member_is_a_packed_word():
    """README: an AOI member is a decimal id (``str``) or a packed word (``int``)."""
    root = FIXTURES / "bare_versioned"
    word = decimal_to_word("444112")
    by_word = xr.open_zarr(MocHiveStore(root, aoi=[word]), group="atl06/o7")
    by_uint64 = xr.open_zarr(MocHiveStore(root, aoi=np.array([word], np.uint64)), group="atl06/o7")
    by_decimal = xr.open_zarr(MocHiveStore(root, aoi=["444112"]), group="atl06/o7")
    assert by_word.sizes["cells"] == 16  # one order-5 shard of order-7 cells
    for got in (by_word, by_uint64):
        np.testing.assert_array_equal(got["morton"].values, by_decimal["morton"].values)


@pytest.mark.parametrize("member,hint", [(4331, "pass the decimal id as a string ('4331')"),
                                         (5, "names no base cell"), (2**64, "uint64")])
def test_an_int_that_is_no_packed_word_is_refused_saying_why(member, hint):
    with pytest.raises(OptionError, match="is an int, so a packed morton word") as err:
        MocHiveStore(FIXTURES / "bare_versioned", aoi=[member])
    assert hint in str(err.value)


def test_an_aoi_outside_the_coverage_warns_per_level():
    with pytest.warns(HiveWarning, match="atl06/o7: the AOI intersects no coverage"):
        asyncio.run(MocHiveStore(FIXTURES / "bare_versioned", aoi=["1111"]).view())


# -- repr and .info -----------------------------------------------------------------------------


def test_repr_shows_what_changes_the_view_and_never_secrets():
    plain = MocHiveStore(FIXTURES / "sharded")
    assert repr(plain) == f"MocHiveStore('file://{FIXTURES / 'sharded'}')"
    store = MocHiveStore("s3://bucket/hive?X-Amz-Signature=SIG", window="2019", verify="open",
                         chunking="inner", aoi=["4331", "4332", "4333", "4334", "4341"],
                         storage_options={"access_key_id": "AKIDVALUE",
                                          "secret_access_key": "SECRETVALUE"})
    text = repr(store)
    assert text == ("MocHiveStore('s3://bucket/hive?X-Amz-Signature=***', verify='open', "
                    "chunking='inner', window='2019', aoi=('4331', '4332', '4333', ... 5 members))")
    assert "VALUE" not in text and "SIG'" not in text


def test_info_reports_the_mode_zarr_opened_the_store_in():
    """The decision: ``read_only`` defaults to False so that ``zarr.open_group(store)``
    (mode "a") opens the store; its ``.info`` then says ``Read-only: False``, although every
    write raises. ``mode="r"`` (and ``xr.open_zarr``) say ``True``. If this test fails
    because zarr opens a read-only store in mode "a", make ``read_only=True`` the default."""
    store = MocHiveStore(FIXTURES / "sharded")
    assert "Read-only   : False" in str(zarr.open_group(store).info)
    assert "Read-only   : True" in str(zarr.open_group(store, mode="r").info)
    flagged = MocHiveStore(FIXTURES / "sharded", read_only=True)
    assert "Read-only   : True" in str(zarr.open_group(flagged, mode="r").info)
    with pytest.raises(ValueError, match="read-only"):
        zarr.open_group(flagged)  # zarr's own refusal: mode "a" on a read-only store
    with pytest.raises(ValueError, match="read-only"):
        zarr.open_group(store).create_group("new")
