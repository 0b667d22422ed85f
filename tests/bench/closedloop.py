#!/usr/bin/env python3
"""Closed loops: each of LOOPS threads sends its next request as soon as the previous one is
answered, over a keep-alive connection, for SECONDS. A flood that costs the machine it runs on
next to nothing, unlike a loop of `curl` processes (one process per request: on two cores,
five such loops spent more of the machine on starting processes than the server spent
serving them).

    closedloop.py [--post JSON] URL LOOPS SECONDS [HEADER: value ...]

Prints the requests sent, their rate and their status counts.
"""

from __future__ import annotations

import sys
import threading
import time

from httpload import Load


def main() -> None:
    load = Load.from_args(sys.argv[1:])
    loops, seconds = int(load.number), load.seconds
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    end = time.perf_counter() + seconds

    def loop() -> None:
        conn = load.connect()
        while time.perf_counter() < end:
            conn, status = load.send(conn)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=loop) for _ in range(loops)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(statuses.values())
    print(f"{load.method} {load.path}: {total} requests ({total / seconds:.0f}/s) from {loops} loops; "
          f"status {dict(sorted(statuses.items()))}")


if __name__ == "__main__":
    main()
