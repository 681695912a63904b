"""``serve``'s own options are declared once (``options.SERVE_OPTIONS``) and checked before
the hive is opened or a port bound: every bad value exits with status 2 and a message naming
the option, the value and what is allowed, with one worker or several."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from support import processes
from support.serving import FIXTURES

from moczarr_store import cli
from moczarr_store.errors import OptionError
from moczarr_store.options import SERVE_OPTIONS
from moczarr_store.serve.env import app_from_env, to_env
from moczarr_store.serve.run import serve

NO_HIVE = "/nonexistent/hive"  # opened, it would exit with status 3 (no hive at the source)

BAD = [  # flag, value, what the message says is allowed
    ("--host", "", "an IP address or a host name"),
    ("--host", "two words", "an IP address or a host name"),
    ("--host", "-leading.dash", "an IP address or a host name"),
    ("--host", "h" * 300, "an IP address or a host name"),
    ("--host", "999.1.1.1", "an IP address or a host name"),
    ("--port", "http", "expected an integer"),
    ("--port", "-1", "from 0 to 65,535"),
    ("--port", "65536", "from 0 to 65,535"),
    ("--port", "9" * 40, "from 0 to 65,535"),
    ("--port", "80.5", "expected an integer"),
    ("--workers", "0", "from 1 to 256"),
    ("--workers", "-2", "from 1 to 256"),
    ("--workers", "1000000", "from 1 to 256"),
    ("--workers", "two", "expected an integer"),
    ("--cors", "", "expected origins"),
    ("--cors", " , ", "expected origins"),
    ("--cors", "ftp//x", "is no origin"),
    ("--cors", "http://viewer.example/path", "is no origin"),
    ("--stamp-ttl", "0", "more than 0 and at most 31,536,000"),
    ("--stamp-ttl", "-5", "more than 0 and at most 31,536,000"),
    ("--stamp-ttl", "1e12", "more than 0 and at most 31,536,000"),
    ("--stamp-ttl", "inf", "more than 0 and at most 31,536,000"),
    ("--stamp-ttl", "nan", "more than 0 and at most 31,536,000"),
    ("--stamp-ttl", "soon", "expected a number of seconds"),
    ("--warm-leaves", "-1", "from 0 to 1,000,000,000"),
    ("--warm-leaves", "lots", "expected an integer"),
]


def test_every_serve_option_has_bad_values_tried():
    on_off = {"--access-log", "--tiles"}  # flags without a value
    assert {flag for flag, _, _ in BAD} | on_off == {o.flag for o in SERVE_OPTIONS}


@pytest.mark.parametrize("workers", [(), ("--workers", "2")], ids=["one", "two-workers"])
@pytest.mark.parametrize("flag,value,allowed", BAD)
def test_a_bad_value_exits_2_naming_the_option(flag, value, allowed, workers, capsys):
    argv = ["serve", NO_HIVE, *workers, f"{flag}={value}"]
    with pytest.raises(SystemExit) as end:
        cli.main(argv)
    assert end.value.code == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.startswith(f"moczarr-store serve: error: argument {flag}: {value!r}: ")
    assert allowed in message


def test_a_value_given_to_the_access_log_flag_exits_2(capsys):
    with pytest.raises(SystemExit) as end:
        cli.main(["serve", NO_HIVE, "--workers", "2", "--access-log=yes"])
    assert end.value.code == 2
    assert "argument --access-log: ignored explicit argument 'yes'" in capsys.readouterr().err


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_the_issue_command_exits_at_once_binding_nothing():
    """``serve HIVE --stamp-ttl 0 --workers 2`` bound the port, said it was running, and its
    workers failed over and over without end."""
    port = processes.free_port()
    command = [sys.executable, "-m", "moczarr_store.cli", "serve", str(FIXTURES / "sharded"),
               "--port", str(port), "--stamp-ttl", "0", "--workers", "2"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            assert not listening(port)
            time.sleep(0.05)
        assert process.poll() == 2
        err = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        process.stderr.close()
    assert "argument --stamp-ttl: '0': stamp_ttl=0.0: expected seconds" in err
    assert "uvicorn" not in err.lower() and "Traceback" not in err


@pytest.mark.parametrize("options,named", [
    ({"stamp_ttl": 0}, "stamp_ttl=0"),
    ({"workers": 0}, "workers=0"),
    ({"port": 65536}, "port=65536"),
    ({"host": "not a host"}, "host='not a host'"),
    ({"cors": ["ftp//x"]}, "'ftp//x' is no origin"),
    ({"access_log": "yes"}, "access_log='yes'"),
    ({"stamp_tll": 5}, "unknown keyword 'stamp_tll'"),
])
def test_serve_checks_its_options_before_opening_the_hive(options, named):
    """Called from Python, as from the command line: an ``OptionError``, no hive opened
    (the source does not exist), no port bound."""
    with pytest.raises(OptionError, match=named):
        serve(NO_HIVE, **options)


def test_worker_variables_are_checked_and_named():
    env = to_env(str(FIXTURES / "sharded"), cors=["*"], stamp_ttl=7)
    assert env["MOCZARR_STORE_STAMP_TTL"] == "7" and env["MOCZARR_STORE_CORS"] == "*"
    with pytest.raises(OptionError, match="MOCZARR_STORE_STAMP_TTL='0': stamp_ttl=0.0"):
        app_from_env({**env, "MOCZARR_STORE_STAMP_TTL": "0"})
    with pytest.raises(OptionError, match="MOCZARR_STORE_CORS='ftp//x': cors: 'ftp//x'"):
        app_from_env({**env, "MOCZARR_STORE_CORS": "ftp//x"})
    with pytest.raises(OptionError, match="'workers' cannot be passed to worker processes"):
        to_env(str(FIXTURES / "sharded"), workers=2)
