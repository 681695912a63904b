"""The command line: storage options on every subcommand, fail-fast limits against a
silent endpoint, one-line errors with an exit status per family, summaries, progress."""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
import urllib.request
import warnings
from datetime import timedelta

import pytest
from support import processes
from support.hives import FIXTURES
from support.servers import REGION, Fault, LoopbackServer, StaticFiles, s3_url
from zarr.buffer import default_buffer_prototype

from moczarr_store import MocHiveStore, cli
from moczarr_store.cli import (
    EXIT_FORMAT,
    EXIT_INTERNAL,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_READ,
    EXIT_USAGE,
    main,
    parse_option,
    storage_options,
    storage_parser,
)

pytest_plugins = ["support.servers"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def tree(out: str) -> list[str]:
    """The inspect lines that describe the hive, not where it is or what it cost."""
    return [line for line in out.splitlines()
            if not line.startswith(("hive ", "backend requests"))]


# -- storage options, over every backend --------------------------------------------------


def test_exit_codes_are_distinct_and_documented():
    assert len(set(cli.EXIT_CODES)) == len(cli.EXIT_CODES) == 10
    help_text = cli.build_parser().format_help()
    assert all(str(code) in help_text for code in cli.EXIT_CODES)


def test_inspect_and_verify_over_s3_with_command_line_options(s3_server, capsys):
    local = run(capsys, "inspect", FIXTURES / "bare_versioned")
    assert local[0] == EXIT_OK
    url = s3_url("bare_versioned")
    anon = run(capsys, "inspect", url, "--endpoint", s3_server.url, "--region", REGION, "--anon")
    assert anon[0] == EXIT_OK, anon[2]
    assert tree(anon[1]) == tree(local[1]) and anon[1].startswith(f"hive {url}")
    signed = run(capsys, "verify", url, "--json", "--endpoint", s3_server.url,
                 "-o", f"region={REGION}", "-o", "access_key_id=testing",
                 "--option", "secret_access_key=testing")
    assert signed[0] == EXIT_OK, signed[2]
    report = json.loads(signed[1])
    want = json.loads(run(capsys, "verify", FIXTURES / "bare_versioned", "--json")[1])
    assert report["ok"] and report["objects"] == report["clean"] == want["objects"] > 0


def test_s3_over_plain_http_configured_by_the_environment(s3_server, capsys, monkeypatch):
    """AWS_ENDPOINT and AWS_ALLOW_HTTP, as obstore reads them: the command line's fail-fast
    client options must not drop the environment's (obstore then refused the http
    endpoint with "builder error")."""
    for key, value in {"AWS_ENDPOINT": s3_server.url, "AWS_ALLOW_HTTP": "true",
                       "AWS_REGION": REGION, "AWS_SKIP_SIGNATURE": "true",
                       "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(key, value)
    local = run(capsys, "inspect", FIXTURES / "bare_versioned", "--verify", "lazy")
    code, out, err = run(capsys, "inspect", s3_url("bare_versioned"), "--verify", "lazy")
    assert code == EXIT_OK, err
    assert tree(out) == tree(local[1])
    monkeypatch.setenv("AWS_ALLOW_HTTP", "false")  # and the environment is what decides
    assert run(capsys, "inspect", s3_url("bare_versioned"))[0] == EXIT_READ


def test_anonymous_reads_of_a_private_bucket_fail_as_unreadable(s3_server, capsys):
    s3_server.client.delete_bucket_policy(Bucket="hive")
    try:
        code, _, err = run(capsys, "inspect", s3_url("bare_versioned"), "--endpoint",
                           s3_server.url, "--region", REGION, "--anon")
    finally:
        s3_server.make_public()
    assert code == EXIT_READ
    assert err.count("\n") == 1 and err.startswith("error: ") and "morton_hive.json" in err


def test_plain_http_needs_no_option(http_server, capsys):
    code, out, err = run(capsys, "inspect", f"{http_server.url}/bare_versioned",
                         "--verify", "lazy")
    assert code == EXIT_OK, err
    local = run(capsys, "inspect", FIXTURES / "bare_versioned", "--verify", "lazy")[1]
    assert tree(out) == tree(local)


def test_max_concurrency_caps_the_requests_at_the_server(capsys):
    """``--max-concurrency N``: at most N requests at the server at once (``python -m
    http.server`` queues 5 connections); the default lets more through on the same hive.
    Each answer waits 20 ms, so requests the client has in flight together are seen
    together (the server counts a request from its arrival until its answer starts)."""
    most = {}
    for cap in ("2", None):
        server = LoopbackServer(StaticFiles(FIXTURES))
        server.inject(Fault("slow", times=10**6, delay=0.02, methods=("GET", "HEAD")))
        try:
            argv = ["inspect", f"{server.url}/bare_versioned", "--verify", "open"]
            code, _, err = run(capsys, *argv, *(["--max-concurrency", cap] if cap else []))
            assert code == EXIT_OK, err
            most[cap] = server.max_in_flight
        finally:
            server.stop()
    assert most["2"] <= 2 < most[None]


def test_serve_workers_get_the_storage_options(s3_server):
    """Two worker processes each build the store from the environment, storage options
    included (the anonymous endpoint would not be found without them)."""
    url = s3_url("sharded")
    with processes.served(url, "--endpoint", s3_server.url, "--region", REGION, "--anon",
                           "--workers", "2") as (served, _):
        for key in ("zarr.json", "atl06/o7/count/c/0"):
            with urllib.request.urlopen(f"{served}/{key}", timeout=30) as response:
                got = response.read()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = serve_load_bytes(key)
            assert got == want, key


def serve_load_bytes(key: str) -> bytes:
    from asyncio import run as sync

    store = MocHiveStore(FIXTURES / "sharded")
    return sync(store.get(key, default_buffer_prototype())).to_bytes()


def test_gs_options_build_a_store_without_a_request():
    args = storage_parser().parse_args(["--anon", "--endpoint", "http://127.0.0.1:9"])
    options = storage_options(args, "gs://bucket/hive")
    assert options["skip_signature"] is True and options["base_url"] == "http://127.0.0.1:9"
    store = MocHiveStore("gs://bucket/hive", storage_options=options)
    assert type(store.backend.store).__name__ == "GCSStore"
    assert store.request_stats.total == 0


def test_the_shared_parser_is_reusable_by_other_subcommands():
    """What a new subcommand (``refs``) does: take the parent, build the options."""
    parser = argparse.ArgumentParser(parents=[storage_parser()])
    parser.add_argument("source")
    args = parser.parse_args([
        "s3://b/h", "--region", "eu-west-1", "--read-timeout", "2",
        "-o", "client_options.timeout=60s", "-o", "retry_config.max_retries=5",
        "-o", "retry_config.retry_timeout=30", "-o", "skip_signature=true",
    ])
    options = storage_options(args, args.source)
    assert options["region"] == "eu-west-1" and options["skip_signature"] is True
    assert options["client_options"] == {"connect_timeout": "5.0s", "read_timeout": "2.0s",
                                         "timeout": "60s"}
    assert options["retry_config"]["max_retries"] == 5
    assert options["retry_config"]["retry_timeout"] == timedelta(seconds=30)
    MocHiveStore(args.source, storage_options=options)  # obstore takes them all
    assert storage_options(parser.parse_args(["fixtures/sharded"]), "fixtures/sharded") == {}


@pytest.mark.parametrize("item", ["novalue", "=x", "retry_config.max_retries=many"])
def test_a_malformed_option_is_a_usage_error(item, capsys):
    with pytest.raises(cli.OptionError):
        parse_option(item)
    code, _, err = run(capsys, "inspect", "s3://bucket/hive", "-o", item)
    assert code == EXIT_USAGE and err.count("\n") == 1


@pytest.mark.parametrize("url", ["ftp://host/hive", "ftp://user:pass-word@host/hive?x=1"])
def test_an_unsupported_scheme_is_named_not_an_option(url, capsys):
    """Before, ``ftp://`` blamed ``client_options`` (the fail-fast limits the command line
    sets), an option the user never gave."""
    code, _, err = run(capsys, "inspect", url)
    assert code == EXIT_USAGE and err.count("\n") == 1
    assert "'ftp' is not supported" in err and "s3://" in err and "az://" in err
    assert "client_options" not in err and "pass-word" not in err


def test_a_misspelt_option_is_refused_naming_the_valid_one(capsys):
    code, _, err = run(capsys, "inspect", "s3://bucket/hive", "-o", "endpont=http://x")
    assert code == EXIT_USAGE
    assert "did you mean 'endpoint'?" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv,want", [
    (["inspect", "s3://b/h", "--connect-timeout", "-1"], "'-1': expected seconds > 0"),
    (["inspect", "s3://b/h", "--read-timeout", "nan"], "'nan': expected seconds > 0"),
    (["inspect", "s3://b/h", "--retry-timeout", "inf"], "'inf': expected seconds > 0"),
    (["inspect", "s3://b/h", "--retries", "-1"], "'-1': expected an integer >= 0"),
    (["serve", "fixtures/sharded", "--port", "65536"],
     "'65536': port=65536: expected an integer from 0 to 65,535"),
    (["serve", "fixtures/sharded", "--workers", "0"],
     "'0': workers=0: expected an integer from 1 to 256"),
])
def test_numbers_out_of_range_are_usage_errors(argv, want, capsys):
    """Before, a negative timeout reached obstore as an unparsable duration, a port out of
    range failed as an internal error and ``--workers 0`` served with one."""
    with pytest.raises(SystemExit) as end:
        main(argv)
    assert end.value.code == EXIT_USAGE
    assert f"argument {argv[2]}: {want}" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--anon"], ["--region", "x"], ["--endpoint", "http://x"]])
def test_remote_flags_on_a_local_hive_are_usage_errors(flag, capsys):
    code, _, err = run(capsys, "inspect", FIXTURES / "sharded", *flag)
    assert code == EXIT_USAGE and flag[0] in err


# -- fail fast ------------------------------------------------------------------------------


@pytest.fixture
def silent_port():
    """A loopback port that accepts connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        server.close()


def test_a_silent_endpoint_is_reported_in_seconds(silent_port, capsys):
    """Defaults: no 5 s without a byte, at most 2 retries within 10 s (obstore's own
    defaults wait minutes)."""
    port, accepted = silent_port
    started = time.monotonic()
    code, _, err = run(capsys, "inspect", f"http://127.0.0.1:{port}/hive")
    elapsed = time.monotonic() - started
    assert code == EXIT_READ
    assert err.count("\n") == 1 and "morton_hive.json" in err
    assert accepted, "the request reached the silent port"
    assert 5 <= elapsed < 15, elapsed
    print(f"silent endpoint reported after {elapsed:.1f} s")


def test_the_limits_are_configurable(silent_port, s3_server, capsys):
    port, _ = silent_port
    started = time.monotonic()
    code, _, err = run(capsys, "inspect", "s3://hive/pre/bare_versioned", "--anon",
                       "--endpoint", f"http://127.0.0.1:{port}", "--read-timeout", "1",
                       "--retries", "0")
    assert code == EXIT_READ and "morton_hive.json" in err
    assert time.monotonic() - started < 4


# -- errors -----------------------------------------------------------------------------------


def test_error_families(tmp_path, hive_copy, capsys, monkeypatch):
    assert run(capsys, "inspect", tmp_path / "nothing")[0] == EXIT_NOT_FOUND
    assert run(capsys, "inspect", tmp_path)[0] == EXIT_NOT_FOUND  # a directory, not a hive
    root = hive_copy("bare_versioned")
    (root / "morton_hive.json").write_text('{"spec": "morton-hive/1", "cell_order": "\x1b[2J"}')
    code, out, err = run(capsys, "inspect", root)
    assert code == EXIT_FORMAT and out == ""
    assert err.count("\n") == 1 and "\x1b" not in err and "morton_hive.json" in err
    assert run(capsys, "inspect", FIXTURES / "windowed", "--window", "2031")[0] == EXIT_USAGE

    def broken(store):
        raise TypeError("a bug")

    monkeypatch.setattr(cli, "describe", broken)
    code, _, err = run(capsys, "inspect", FIXTURES / "sharded", "--verify", "lazy")
    assert code == EXIT_INTERNAL
    assert err.splitlines()[0] == "error: TypeError: a bug" and "--debug" in err
    assert "Traceback" not in err
    code, _, err = run(capsys, "inspect", FIXTURES / "sharded", "--verify", "lazy", "--debug")
    assert code == EXIT_INTERNAL and "Traceback (most recent call last)" in err
    assert 'raise TypeError("a bug")' in err


# -- summaries and progress ------------------------------------------------------------------


def test_inspect_summarises_a_hive_full_of_debris(hive_copy, capsys):
    """1,022 listed nodes without a stamped leaf (base cell 4 has 1,024 order-5 nodes;
    the fixture's two there are stamped): one line with the count and five names; they are
    missing, not debris (no directory)."""
    root = hive_copy("bare_versioned")
    assert {p.name for p in root.glob("4/*/*/*/*/*/*.zarr")} == {"444111.zarr", "444112.zarr",
                                                                 "444114.zarr"}
    moc = json.loads((root / "coverage.moc").read_text())
    moc["ranges"].append(["411111", "444444"])  # every order-5 shard of base cell 4
    (root / "coverage.moc").write_text(json.dumps(moc))
    code, out, err = run(capsys, "inspect", root)
    assert code == EXIT_OK, err
    missing = [line for line in out.splitlines() if "missing" in line]
    assert len(missing) == 1 and missing[0].strip().startswith("1,022 listed objects missing")
    assert missing[0].count(".zarr") == 5 and "dropped" not in out  # absent, not debris
    assert max(map(len, (out + err).splitlines())) <= cli.MAX_LINE + 40


def test_progress_bar_only_on_a_terminal(capsys, monkeypatch):
    code, _, err = run(capsys, "inspect", FIXTURES / "pyramid1")
    assert code == EXIT_OK and "requests" not in err and "\r" not in err
    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: True, raising=False)
    code, _, err = run(capsys, "inspect", FIXTURES / "pyramid1")
    assert code == EXIT_OK and "requests" in err and "opening" in err


def test_warnings_are_bounded(hive_copy, capsys, monkeypatch):
    monkeypatch.setattr(cli, "MAX_WARNINGS", 1)

    def noisy(store):
        for i in range(3):
            warnings.warn(f"warning number {i}", UserWarning, stacklevel=1)
        return ["ok"]

    monkeypatch.setattr(cli, "describe", noisy)
    code, out, err = run(capsys, "inspect", FIXTURES / "sharded")
    assert code == EXIT_OK and out == "ok\n"
    assert err.splitlines() == ["warning: warning number 0",
                                "warning: 2 more warning(s) not shown (--debug shows them all)"]


def test_secret_option_values_never_reach_the_terminal(capsys):
    """obstore's message names the endpoint URL, user-info included: redacted."""
    secret = "SUPERSECRET" + "VALUE"  # (not in the traceback's source lines either)
    code, out, err = run(capsys, "inspect", "s3://bucket/hive", "--endpoint",
                         f"http://user:{secret}@127.0.0.1:9", "--retries", "0",
                         "-o", "access_key_id=AKID", "-o", f"secret_access_key={secret}",
                         "--debug")
    assert code == EXIT_READ and "Traceback" in err
    assert secret not in out + err and "http://***@127.0.0.1:9/bucket/hive" in err
