"""``moczarr-store serve`` under hostile clients, measured on loopback.

    python -m benchmarks.serve_hardening [--hive PATH] [--nofile 1024] [--seconds 15]
        [--phases quiet,idle,slowloris,headers,crowd,slowread] [--readers 1000,3000]
        [--workers 1,2]

Each phase starts a fresh server (a subprocess, its descriptor limit set to ``--nofile``
soft and hard, its log kept in a file) and runs for ``--seconds`` (at most 60):

- ``quiet``: ordinary clients only (the reference latency);
- ``idle``: 2 x ``--nofile`` connections that send nothing; each one the server closes is
  opened again at once;
- ``slowloris``: as many connections sending a request head one byte per second;
- ``headers``: 20 clients sending, over and over, a 1 MiB header, 20,000 headers, a
  100,000-digit range and 1,000 ranges;
- ``crowd``: 500 concurrent ordinary clients;
- ``slowread``: ``--readers`` connections (1,000 and 3,000), each pipelining 16 GETs of the
  hive's largest chunks (``--geometry sphere``: 512 KiB coordinate chunks) and reading one
  byte a second (its socket's buffer 4 KiB, nothing read ahead); each one the server
  closes is opened again once its client sees the close. Run once per count
  of ``--readers`` and of ``--workers`` (1 and 2); the ordinary clients GET such a chunk.

The attackers run in a process of their own, from 3 s before the ordinary clients start
until these stop. Ordinary clients (8 in every phase but ``crowd``, where they are the
500) each send ``GET`` of a chunk on a new connection, one after the other; a request not
answered within 10 s counts as failed. Reported per phase: the ordinary requests answered and
failed, their latency p50/p99/max, the server's peak RSS and descriptors, the CPU time
it used (on a loaded machine the latencies grow, its CPU time much less), and what the
server logged (lines, bytes, lines other than the access log). Every task stops by the
phase's end; the run stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import resource
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from tests.support.processes import limited_server as server

REPO = Path(__file__).resolve().parents[1]
PHASES = ("quiet", "idle", "slowloris", "headers", "crowd", "slowread")
CHUNK = "atl06/o7/h_mean/c/0"
LARGE = "atl06/o7/cell_ids/c/{}"  # with --geometry sphere: 512 KiB, chunks 0 to 2
PIPELINED = 16  # GETs a slow reader sends at once: 8 MiB, more than the kernel buffers
PATIENCE = 10.0  # seconds an ordinary request may take before it counts as failed
MAX_SECONDS = 60.0
ACCESS = "moczarr_store.serve.access"


@dataclass
class Phase:
    name: str
    readers: int = 0  # slowread: slow readers
    workers: int = 1
    latencies: list[float] = field(default_factory=list)
    failed: int = 0
    attacks: int = 0  # connections (or hostile requests) the attackers made
    rss_mb: float = 0.0
    fds: int = 0
    cpu_s: float = 0.0  # the server's CPU time (its workers' too) over the phase
    log_lines: int = 0
    log_bytes: int = 0
    other_lines: int = 0  # log lines that are not one request's access line

    def quantile(self, q: float) -> float:
        """Of every ordinary request's latency, a failed one counted as ``PATIENCE``."""
        ordered = sorted(self.latencies + [PATIENCE] * self.failed)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


# -- clients -----------------------------------------------------------------------------


async def _exchange(port: int, request: bytes, timeout: float) -> int:
    """Send ``request`` on a new connection, read the answer to its end: the status."""
    async def go() -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(request)
            await writer.drain()
            answer = await reader.read()  # Connection: close
        finally:
            writer.close()
        return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0

    return await asyncio.wait_for(go(), timeout)


async def ordinary(port: int, phase: Phase, stop: float) -> None:
    key = LARGE.format(1) if phase.name == "slowread" else CHUNK
    request = f"GET /{key} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    while time.monotonic() < stop:
        start = time.perf_counter()
        try:
            status = await _exchange(port, request, PATIENCE)
        except (OSError, TimeoutError, IndexError, ValueError):
            status = 0
        if status == 200:
            phase.latencies.append(time.perf_counter() - start)
        else:
            phase.failed += 1
            await asyncio.sleep(0.1)


async def lingerer(port: int, phase: Phase, stop: float, dribble: bool) -> None:
    """A connection that sends nothing (or a head a byte per second), opened again
    whenever the server closes it."""
    head = b"GET /zarr.json HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100_000
    while time.monotonic() < stop:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port), max(0.01, stop - time.monotonic()))
        except (OSError, TimeoutError):
            await asyncio.sleep(0.5)
            continue
        phase.attacks += 1
        try:
            sent = 0
            while time.monotonic() < stop:
                if dribble:
                    writer.write(head[sent:sent + 1])
                    sent += 1
                with contextlib.suppress(TimeoutError):
                    if await asyncio.wait_for(reader.read(4096), 1.0) == b"":
                        break  # the server closed it
        except OSError:
            pass
        finally:
            writer.close()


async def slow_reader(port: int, phase: Phase, stop: float) -> None:
    """A connection pipelining :data:`PIPELINED` GETs of large chunks and reading a byte a
    second, opened again whenever the server closes it."""
    request = b"".join(f"GET /{LARGE.format(i % 3)} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
                       for i in range(PIPELINED))
    while time.monotonic() < stop:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the answers stay put
        sock.setblocking(False)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(
                sock, ("127.0.0.1", port)), max(0.01, stop - time.monotonic()))
            # limit: the stream stops reading the socket past a few bytes held
            reader, writer = await asyncio.open_connection(sock=sock, limit=1)
        except (OSError, TimeoutError):
            sock.close()
            await asyncio.sleep(0.5)
            continue
        phase.attacks += 1
        try:  # kept until the server closes it, however long its answers take to come
            writer.write(request)
            while time.monotonic() < stop:
                if await asyncio.wait_for(reader.read(1), stop - time.monotonic()) == b"":
                    break  # the server closed it
                await asyncio.sleep(1.0)
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()


HOSTILE = [
    b"X-Junk: " + b"a" * (1 << 20),
    b"\r\n".join(b"X-H%d: v" % i for i in range(20_000)),
    b"Range: bytes=0-" + b"1" * 100_000,
    b"Range: bytes=" + b",".join(b"%d-%d" % (i, i) for i in range(0, 2000, 2)),
]


async def hostile(port: int, phase: Phase, stop: float) -> None:
    while time.monotonic() < stop:
        for extra in HOSTILE:
            request = b"GET /" + CHUNK.encode() + b" HTTP/1.1\r\nHost: x\r\n" + extra
            request += b"\r\nConnection: close\r\n\r\n"
            with contextlib.suppress(OSError, TimeoutError, IndexError, ValueError):
                await _exchange(port, request, 5.0)
            phase.attacks += 1


RAMP = 3.0  # seconds the attackers run before the ordinary clients start


async def _attack(port: int, name: str, nofile: int, stop: float, readers: int) -> int:
    asyncio.get_running_loop().set_exception_handler(lambda *_: None)  # resets: expected
    phase = Phase(name)
    if name == "slowread":
        tasks = [slow_reader(port, phase, stop) for _ in range(readers)]
    elif name in ("idle", "slowloris"):
        tasks = [lingerer(port, phase, stop, name == "slowloris") for _ in range(2 * nofile)]
    else:
        tasks = [hostile(port, phase, stop) for _ in range(20)]
    await asyncio.wait_for(asyncio.gather(*tasks), stop - time.monotonic() + 30)
    return phase.attacks


def attack(port: int, name: str, nofile: int, seconds: float, attacks: Any,
           readers: int = 0) -> None:
    """The attackers of phase ``name``, in a process of their own (their event loop is
    busy; the ordinary clients' latency is the server's, not theirs)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(4 * nofile, readers + 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, want)), hard))
    attacks.value = asyncio.run(
        _attack(port, name, nofile, time.monotonic() + seconds, readers))


async def _ordinary(port: int, phase: Phase, seconds: float) -> None:
    clients = 500 if phase.name == "crowd" else 8
    stop = time.monotonic() + seconds
    tasks = [ordinary(port, phase, stop) for _ in range(clients)]
    await asyncio.wait_for(asyncio.gather(*tasks), seconds + PATIENCE + 20)


def run_phase(
    hive: Path, name: str, nofile: int, seconds: float, logs: Path | None = None,
    readers: int = 0, workers: int = 1,
) -> Phase:
    """One phase against a fresh server: its figures (its log kept in ``logs``). RSS and
    descriptors are those of the server and its workers together."""
    phase = Phase(name, readers, workers)
    more = ("--geometry", "sphere", "--workers", str(workers)) if name == "slowread" else ()
    with tempfile.TemporaryDirectory() as tmp:
        log = (logs or Path(tmp)) / f"{name}{readers or ''}-{workers}.log"
        with server(hive, nofile, log, None, *more) as (port, pid):
            process = psutil.Process(pid)
            done = threading.Event()

            def sample() -> None:
                while not done.wait(0.25):
                    with contextlib.suppress(psutil.Error):
                        tree = [process, *process.children(recursive=True)]
                        rss = sum(p.memory_info().rss for p in tree) / 2**20
                        phase.rss_mb = max(phase.rss_mb, rss)
                        phase.fds = max(phase.fds, sum(p.num_fds() for p in tree))
                        cpu = sum(sum(p.cpu_times()[:2]) for p in tree)
                        phase.cpu_s = max(phase.cpu_s, cpu - idle_cpu)

            idle_cpu = sum(sum(p.cpu_times()[:2])  # their start: not the phase's
                           for p in [process, *process.children(recursive=True)])
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            start = log.stat().st_size
            spawn = multiprocessing.get_context("spawn")
            attacks = spawn.Value("q", 0)
            attacker = None
            if name not in ("quiet", "crowd"):
                attacker = spawn.Process(
                    target=attack, daemon=True,
                    args=(port, name, nofile, RAMP + seconds, attacks, readers))
                attacker.start()
                time.sleep(RAMP)
            try:
                asyncio.run(_ordinary(port, phase, seconds))
            finally:
                if attacker is not None:
                    attacker.join(60)
                    if attacker.is_alive():
                        attacker.kill()
                phase.attacks = attacks.value
                done.set()
                sampler.join(5)
        text = log.read_bytes()[start:]
    lines = text.splitlines()
    phase.log_lines, phase.log_bytes = len(lines), len(text)
    phase.other_lines = sum(1 for line in lines if ACCESS.encode() not in line)
    return phase


def report(phases: list[Phase], nofile: int, seconds: float) -> list[str]:
    out = [
        f"descriptor limit {nofile}, {seconds:g} s per phase",
        "| phase | attacks | ordinary answered | failed | p50 ms | p99 ms | max ms (a failed "
        "request: 10,000) | "
        "RSS MB | fds | server CPU s | log lines | log bytes | non-access lines |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in phases:
        big = p.quantile(1.0)
        name = p.name if not p.readers else f"{p.name} {p.readers:,}, {p.workers} worker(s)"
        out.append(
            f"| {name} | {p.attacks} | {len(p.latencies)} | {p.failed} | "
            f"{p.quantile(0.5) * 1e3:.1f} | {p.quantile(0.99) * 1e3:.1f} | {big * 1e3:.1f} | "
            f"{p.rss_mb:.0f} | {p.fds} | {p.cpu_s:.1f} | {p.log_lines} | {p.log_bytes} | "
            f"{p.other_lines} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serve_hardening",
                                     description=__doc__)
    parser.add_argument("--hive", type=Path, default=REPO / "fixtures" / "sharded")
    parser.add_argument("--nofile", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--readers", default="1000,3000",
                        help="slowread: counts of slow readers, one run each")
    parser.add_argument("--workers", default="1,2",
                        help="slowread: counts of worker processes, one run each")
    parser.add_argument("--logs", type=Path, help="keep the server's logs in this directory")
    args = parser.parse_args(argv)
    seconds = min(args.seconds, MAX_SECONDS)
    names = [n for n in args.phases.split(",") if n]
    if unknown := set(names) - set(PHASES):
        parser.error(f"unknown phases {sorted(unknown)}: expected some of {PHASES}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * args.nofile:  # the crowd's connections
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 2 * args.nofile), hard))
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    runs = [(name, 0, 1) for name in names if name != "slowread"]
    if "slowread" in names:
        runs += [("slowread", int(r), int(w)) for w in args.workers.split(",")
                 for r in args.readers.split(",")]
    phases = [run_phase(args.hive, name, args.nofile, seconds, args.logs, readers, workers)
              for name, readers, workers in runs]
    print("\n".join(report(phases, args.nofile, seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
