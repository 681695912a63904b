"""Every code example of README.md and docs/ runs, and what it shows it prints.

The convention (also in docs/contributing.md and docs/gen/codeblocks.py, which parses it):

- ```python blocks run in order, one namespace per page, from the repository root; a
  ```output block right after a block is compared with its stdout (``...`` stands for any
  text in a line, a line of ``...`` for any number of lines).
- ```bash blocks that start with ``moczarr-store`` run as ``python -m moczarr_store.cli``,
  their stdout checked the same way. ``moczarr-store serve ...`` starts that server in the
  background on a free port of 127.0.0.1 (this module's fixture), stopped at the end of
  the page; ``127.0.0.1:8000`` in the page's later blocks names that port.
- ```javascript blocks run with Node.js in ``clients/js`` (an ES module on its standard
  input), so they import the zarrita.js its lock file pins.
- ``<!-- requires: MODULE, ... -->`` before a block: the block runs only where those
  modules import. icechunk and virtualizarr (the ``export`` extra) and xpublish_tiles
  (the ``tiles`` extra) need Python 3.12, so on Python 3.11 those blocks are skipped,
  and said so in the test's output.
- Image links after a python block name the figures it draws: their count is checked.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "gen"))
from codeblocks import Block, blocks, matches  # noqa: E402

PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")],
    key=lambda p: p.relative_to(ROOT).as_posix(),
)
RUNNABLE = [p for p in PAGES if blocks(p)]
DEFAULT_ADDRESS = "127.0.0.1:8000"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Servers:
    """The ``moczarr-store serve`` processes a page starts, each on a free loopback port."""

    def __init__(self) -> None:
        self.running: list[subprocess.Popen] = []
        self.address = DEFAULT_ADDRESS

    def start(self, args: list[str]) -> None:
        port = _free_port()
        args = [a for i, a in enumerate(args)
                if a != "--port" and (i == 0 or args[i - 1] != "--port")]
        args = [a for a in args if a not in ("--host",)]
        process = subprocess.Popen(
            [sys.executable, "-m", "moczarr_store.cli", *args, "--host", "127.0.0.1",
             "--port", str(port)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        self.running.append(process)
        self.address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://{self.address}/zarr.json", timeout=5):
                    return
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    _, err = process.communicate()
                    raise RuntimeError(f"moczarr-store {shlex.join(args)} did not start: "
                                       f"{err.decode(errors='replace')[-2000:]}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        for process in self.running:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def servers():
    running = Servers()
    yield running
    running.stop()


def _missing(block: Block) -> list[str]:
    return [name for name in block.requires if importlib.util.find_spec(name) is None]


def _run_python(block: Block, namespace: dict, where: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.code, where, "exec"), namespace)
    if block.images or "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        drawn = len(plt.get_fignums())
        plt.close("all")
        assert drawn == len(block.images), (
            f"{where}: draws {drawn} figure(s), {len(block.images)} image link(s) follow")
    return out.getvalue()


def _run_bash(block: Block, servers: Servers, where: str) -> str:
    lines = [line for line in block.code.splitlines() if line.strip()]
    printed = []
    for line in lines:
        words = shlex.split(line)
        assert words[0] == "moczarr-store", f"{where}: runs only moczarr-store: {line}"
        if words[1:2] == ["serve"]:
            servers.start(words[1:])
            continue
        done = subprocess.run(
            [sys.executable, "-m", "moczarr_store.cli", *words[1:]],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, f"{where}: {line} exited {done.returncode}: {done.stderr}"
        printed.append(done.stdout)
    return "".join(printed)


def _run_javascript(block: Block, where: str) -> str:
    from tests.support.jsclients import JS, node

    done = subprocess.run([node(), "--input-type=module"], input=block.code, cwd=JS,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{where}: node exited {done.returncode}: {done.stderr}"
    return done.stdout


CONTINUES = "# continues"  # the first line of a README block that needs the one before


def run_page(page: Path, servers: Servers, alone: bool = False) -> tuple[int, list[str]]:
    """Run a page's examples; the number run and the reasons of those skipped. ``alone``:
    each python block in a namespace of its own, unless it starts with :data:`CONTINUES`."""
    namespace: dict = {"__name__": "__docs__"}
    ran, skipped = 0, []
    name = page.relative_to(ROOT).as_posix()
    for block in blocks(page):
        if alone and not block.code.startswith(CONTINUES):
            namespace = {"__name__": "__docs__"}
        where = f"{name}:{block.line}"
        if missing := _missing(block):
            skipped.append(f"{where} needs {', '.join(missing)} (Python 3.12: the export "
                           "or tiles extra)")
            continue
        block.code = block.code.replace(DEFAULT_ADDRESS, servers.address)
        if block.kind == "python":
            printed = _run_python(block, namespace, where)
        elif block.kind == "javascript":
            printed = _run_javascript(block, where)
        else:
            printed = _run_bash(block, servers, where)
        ran += 1
        if block.output is not None:
            assert matches(block.output, printed), (
                f"{where} printed:\n{printed}\nthe page shows:\n{block.output}")
    return ran, skipped


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_examples_run_and_print_what_they_show(page, servers, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    ran, skipped = run_page(page, servers)
    assert ran + len(skipped) == len(blocks(page))
    with capsys.disabled():
        if skipped:
            print(f"\n{page.name}: skipped " + "; ".join(skipped))
    if not ran:
        pytest.skip("; ".join(skipped))


def test_readme_blocks_run_alone(servers, monkeypatch):
    """A README block pasted on its own runs, unless it says it continues the one above."""
    monkeypatch.chdir(ROOT)
    ran, skipped = run_page(ROOT / "README.md", servers, alone=True)
    assert ran and not skipped


def test_the_matcher_can_fail():
    """The output check compares: a wrong line, a missing line and extra lines fail."""
    assert matches("a\n...\nz", "a\nb\nc\nz")
    assert matches("x ... y", "x 1 2 y")
    assert not matches("a\nb", "a\nc")
    assert not matches("a\nb", "a")
    assert not matches("a", "a\nb")
    assert not matches("x ... y", "x 1\n2 y")


def test_every_page_with_code_is_collected():
    """A runnable block in a page the tests do not see would go unchecked."""
    assert ROOT / "README.md" in RUNNABLE
    assert {p.name for p in RUNNABLE} >= {"getting-started.md", "tutorial.md", "serve.md"}
