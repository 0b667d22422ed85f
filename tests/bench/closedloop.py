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

import http.client
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
    url, loops, seconds = args[0], int(args[1]), float(args[2])
    headers = dict(h.split(": ", 1) for h in args[3:])
    if body is not None:
        headers["Content-Type"] = "application/json"
    parts = urllib.parse.urlsplit(url)
    path = parts.path + ("?" + parts.query if parts.query else "")
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    end = time.perf_counter() + seconds

    def loop() -> None:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        while time.perf_counter() < end:
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                resp.read()
                status = resp.status
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
                status = 0
            with lock:
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=loop) for _ in range(loops)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(statuses.values())
    print(f"{method} {parts.path}: {total} requests ({total / seconds:.0f}/s) from {loops} loops; "
          f"status {dict(sorted(statuses.items()))}")


if __name__ == "__main__":
    main()
