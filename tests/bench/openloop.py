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

import queue
import sys
import threading
import time

from httpload import Load


def main() -> None:
    load = Load.from_args(sys.argv[1:])
    rate, seconds = load.number, load.seconds
    jobs: queue.Queue = queue.Queue()
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def worker() -> None:
        conn = load.connect()
        while True:
            due = jobs.get()
            if due is None:
                return
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            conn, status = load.send(conn)
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
