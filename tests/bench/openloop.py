#!/usr/bin/env python3
"""Open-loop load at a fixed rate (oha/wrk2 style) with the standard library only.

    openloop.py [--post JSON] URL RATE SECONDS [HEADER: value ...]

A dispatcher schedules one request every 1/RATE s; worker threads with keep-alive connections
send them. Latency is measured from the scheduled start (latency correction: a request that
waits for a free worker counts its wait), so a server that falls behind shows it. Prints the
achieved rate, p50/p90/p99/max in ms and the status counts. The client adds ~0.2 ms.
With `--post JSON`, every request is a POST of that JSON body (creates).
"""

from __future__ import annotations

import http.client
import queue
import sys
import threading
import time
import urllib.parse


def main() -> None:
    args = sys.argv[1:]
    method, body = "GET", None
    if args[0] == "--post":
        method, body = "POST", args[1].encode()
        args = args[2:]
    url, rate, seconds = args[0], float(args[1]), float(args[2])
    headers = dict(h.split(": ", 1) for h in args[3:])
    if body is not None:
        headers["Content-Type"] = "application/json"
    parts = urllib.parse.urlsplit(url)
    path = parts.path + ("?" + parts.query if parts.query else "")
    jobs: queue.Queue = queue.Queue()
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def worker() -> None:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        while True:
            due = jobs.get()
            if due is None:
                return
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
                status = resp.status
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
                status = 0
            took = time.perf_counter() - due
            with lock:
                latencies.append(took)
                statuses[status] = statuses.get(status, 0) + 1

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(32)]
    for w in workers:
        w.start()
    start = time.perf_counter() + 0.1
    total = int(rate * seconds)
    for n in range(total):
        jobs.put(start + n / rate)
    for _ in workers:
        jobs.put(None)
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    print(f"  requests {len(latencies)} in {elapsed:.1f}s ({len(latencies) / elapsed:.0f}/s); "
          f"p50 {pct(0.50):.2f} ms, p90 {pct(0.90):.2f} ms, p99 {pct(0.99):.2f} ms, "
          f"max {latencies[-1] * 1000:.2f} ms; status {dict(sorted(statuses.items()))}")


if __name__ == "__main__":
    main()
