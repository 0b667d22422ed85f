#!/usr/bin/env python3
"""Hostile git and HTTP clients against tenant A while tenant B is measured (issue 36), for
docs/performance.md. Run through tests/bench/hostile-clients, which starts the server.

    hostile_clients.py BASE_URL SSH_PORT_A A_TOKEN A_PROJECT_PATH A_PROJECT_ID A_BLAME_FILE
                       B_HOST B_TOKEN B_PROJECT_ID B_PROJECT_PATH SERVER_PID SECONDS RATE

Tenant B's API (an open loop of `GET /projects/:id` at RATE/s, tests/bench/openloop.py) and
`git clone` of B's project are measured alone, then while A's attackers run, each from loopback
addresses of its own (127.0.0.x):
- HTTP slowloris: connections that send a request head one byte every few seconds;
- SSH slowloris: connections that send their banner and nothing else;
- stalled clones and pushes: git RPCs whose announced body never comes;
- archive and blame floods: anonymous loops of `repository/archive.tar.bz2` and of blame.
The server's open file descriptors and resident memory are sampled throughout. The goal: B's
p99 within 2x of alone, none of B's requests failing, descriptors and memory bounded.
Not a timed test: it reports.
"""

from __future__ import annotations

import ast
import base64
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))

(BASE, SSH_PORT_A, A_TOKEN, A_PATH, A_ID, A_BLAME, B_HOST, B_TOKEN, B_ID, B_PATH, SERVER_PID,
 SECONDS, RATE) = sys.argv[1:14]
SECONDS, RATE = float(SECONDS), float(RATE)
ROOT = BASE.removesuffix("/api/v4")
HOST, PORT = urllib.parse.urlsplit(ROOT).hostname, urllib.parse.urlsplit(ROOT).port

stop = threading.Event()
counts: dict[str, int] = {}
counts_lock = threading.Lock()


def count(name: str, n: int = 1) -> None:
    with counts_lock:
        counts[name] = counts.get(name, 0) + n


def connect(source: str, port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((source, 0))
        sock.settimeout(5)
        sock.connect((HOST, port))
        return sock
    except OSError:
        sock.close()
        return None


def keep_open(name: str, sources: list[str], port: int, opening: bytes, drip: bytes | None,
              per_source: int) -> None:
    """Holds `per_source` connections from each source address open, sending `opening` then,
    every 5 s, `drip`; reopens what the server closes."""
    held: list[tuple[socket.socket, str]] = []
    while not stop.is_set():
        wanted = {s: per_source for s in sources}
        for _, source in held:
            wanted[source] -= 1
        for source, missing in wanted.items():
            for _ in range(missing):
                sock = connect(source, port)
                count(f"{name} opened" if sock else f"{name} refused")
                if sock is None:
                    continue
                try:
                    sock.sendall(opening)
                    held.append((sock, source))
                except OSError:
                    sock.close()
        alive = []
        for sock, source in held:
            try:
                sock.setblocking(False)
                try:
                    if sock.recv(65536) == b"":
                        raise ConnectionError
                except BlockingIOError:
                    pass
                if drip:
                    sock.sendall(drip)
                alive.append((sock, source))
            except OSError:
                count(f"{name} closed by the server")
                sock.close()
        held = alive
        stop.wait(5)
    for sock, _ in held:
        sock.close()


def stalled_rpc_opening(service: str, auth: str | None) -> bytes:
    head = (f"POST /{A_PATH}.git/{service} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\n"
            f"Content-Type: application/x-{service}-request\r\nContent-Length: 100000\r\n")
    if auth:
        head += f"Authorization: Basic {auth}\r\n"
    return head.encode() + b"\r\n0032want"


def flood(name: str, url: str, source_index: int) -> None:
    """A closed loop of anonymous GETs (read to the end)."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                while response.read(1 << 16):
                    pass
            count(f"{name} ok")
        except Exception as error:  # noqa: BLE001 - a refusal is an outcome here
            code = getattr(error, "code", None)
            count(f"{name} {code or 'error'}")
            # A refused request costs the attacker nothing: do not spin.
            stop.wait(max(0.0, 0.2 - (time.monotonic() - started)))


def sample(pid: int, samples: list[tuple[int, int, int]]) -> None:
    while not stop.is_set():
        try:
            fds = len(os.listdir(f"/proc/{pid}/fd"))
            rss = 0
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) // 1024
            children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                      text=True).stdout.split()
            samples.append((fds, rss, len(children)))
        except OSError:
            pass
        stop.wait(0.5)


def b_api(seconds: float) -> dict:
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "openloop.py"), f"{BASE}/projects/{B_ID}",
         str(RATE), str(seconds), f"PRIVATE-TOKEN: {B_TOKEN}", f"Host: {B_HOST}"],
        capture_output=True, text=True, check=True).stdout.strip()
    p99 = float(out.split("p99 ")[1].split(" ms")[0])
    statuses = ast.literal_eval(out.split("status ", 1)[1])
    failed = sum(n for status, n in statuses.items() if status != 200)
    return {"line": out.strip(), "p99": p99, "failed": failed}


def b_clones(seconds: float) -> dict:
    """`git clone` of B's project, one after another, for `seconds`."""
    times, failures = [], 0
    url = f"http://oauth2:{B_TOKEN}@{HOST}:{PORT}/{B_PATH}.git"
    deadline = time.monotonic() + seconds
    with tempfile.TemporaryDirectory() as scratch:
        n = 0
        while time.monotonic() < deadline:
            n += 1
            started = time.monotonic()
            done = subprocess.run(
                ["git", "-c", f"http.extraHeader=Host: {B_HOST}", "clone", "-q", url,
                 os.path.join(scratch, str(n))],
                capture_output=True, text=True, timeout=120,
                env={"PATH": os.environ["PATH"], "HOME": scratch, "GIT_CONFIG_NOSYSTEM": "1",
                     "GIT_TERMINAL_PROMPT": "0"})
            if done.returncode == 0:
                times.append((time.monotonic() - started) * 1000)
            else:
                failures += 1
    return {"clones": len(times), "failed": failures,
            "median_ms": statistics.median(times) if times else None}


def measure(label: str) -> tuple[dict, dict]:
    results: dict = {}
    clones = threading.Thread(target=lambda: results.update(clone=b_clones(SECONDS)))
    clones.start()
    api = b_api(SECONDS)
    clones.join()
    clone = results["clone"]
    median = f"{clone['median_ms']:.0f} ms" if clone["median_ms"] is not None else "-"
    print(f"  {label}: B's API {api['line']}")
    print(f"  {label}: B's clones: {clone['clones']} done, {clone['failed']} failed, median {median}")
    return api, clone


def main() -> None:
    pid = int(SERVER_PID)
    print(f"# {os.cpu_count()} cores; B's API open loop at {RATE:.0f}/s and back-to-back clones, "
          f"{SECONDS:.0f}s a phase")
    print("## tenant B alone")
    alone, alone_clones = measure("alone")

    samples: list[tuple[int, int, int]] = []
    auth = base64.b64encode(f"oauth2:{A_TOKEN}".encode()).decode()
    attackers = [
        threading.Thread(target=keep_open, args=(
            "HTTP slowloris", [f"127.0.0.{n}" for n in range(10, 14)], PORT,
            f"GET /api/v4/version HTTP/1.1\r\nHost: {HOST}\r\n".encode(), b"X", 60)),
        threading.Thread(target=keep_open, args=(
            "SSH slowloris", [f"127.0.0.{n}" for n in range(20, 24)], int(SSH_PORT_A),
            b"SSH-2.0-OpenSSH_9.2\r\n", None, 60)),
        threading.Thread(target=keep_open, args=(
            "stalled clones", ["127.0.0.30", "127.0.0.31"], PORT,
            stalled_rpc_opening("git-upload-pack", None), None, 10)),
        threading.Thread(target=keep_open, args=(
            "stalled pushes", ["127.0.0.32"], PORT,
            stalled_rpc_opening("git-receive-pack", auth), None, 10)),
        threading.Thread(target=sample, args=(pid, samples)),
    ]
    for n in range(4):
        attackers.append(threading.Thread(target=flood, args=(
            "archives", f"{BASE}/projects/{A_ID}/repository/archive.tar.bz2", n)))
        blame = urllib.parse.quote(A_BLAME, safe="")
        attackers.append(threading.Thread(target=flood, args=(
            "blames", f"{BASE}/projects/{A_ID}/repository/files/{blame}/blame?ref=main", n)))
    for thread in attackers:
        thread.daemon = True
        thread.start()
    time.sleep(2)
    print("## tenant B while tenant A's attackers run")
    loaded, loaded_clones = measure("loaded")
    stop.set()
    time.sleep(1)
    print("  attackers: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if samples:
        fds = [s[0] for s in samples]
        rss = [s[1] for s in samples]
        children = [s[2] for s in samples]
        print(f"  server: open files max {max(fds)} (median {statistics.median(fds):.0f}), "
              f"RSS max {max(rss)} MiB, child processes max {max(children)}")
    ratio = loaded["p99"] / alone["p99"]
    failed = loaded_clones["failed"] + loaded["failed"]
    verdict = "within 2x" if ratio <= 2 else "ABOVE 2x"
    print(f"## B's p99: alone {alone['p99']} ms, loaded {loaded['p99']} ms: ratio {ratio:.2f} "
          f"({verdict}); B's failed requests while loaded: {failed}")


if __name__ == "__main__":
    main()
