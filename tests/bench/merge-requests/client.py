#!/usr/bin/env python3
"""The API side of tests/bench/merge-requests/run, with the standard library only (keep-alive
connections, no process per request).

    client.py seed BASE TOKEN PROJECT MRS CLIENTS
        Opens MRS merge requests from branches b0..b<MRS-1> into main with CLIENTS threads;
        every 10th (n % 10 == 0) is labelled `bug`, every 5th (n % 5 == 4) is then closed.
        Prints the time taken and the status counts; exits 1 when any answer was not 2xx.
    client.py fetch BASE TOKEN PATH
        GETs PATH (`.../changes` or `.../diffs?per_page=N`), following `X-Next-Page`, and prints
        "<seconds> <files> <bytes> <requests>"; exits 1 when any answer was not 200.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
import urllib.parse


def connect(base: str) -> tuple[http.client.HTTPConnection, str]:
    parts = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=120), parts.path


def call(conn, method, path, token, body=None):
    headers = {"PRIVATE-TOKEN": token}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.getheader("X-Next-Page") or "", resp.read()


def seed(base: str, token: str, project: str, mrs: int, clients: int) -> int:
    statuses: dict[str, int] = {}
    errors: list[str] = []
    lock = threading.Lock()
    next_n = iter(range(mrs))

    def count(what: str, status: int, body: bytes) -> None:
        with lock:
            key = f"{what} {status}"
            statuses[key] = statuses.get(key, 0) + 1
            if not 200 <= status < 300 and len(errors) < 5:
                errors.append(f"{what} {status}: {body[:300]!r}")

    def client() -> None:
        conn, prefix = connect(base)
        while True:
            with lock:
                n = next(next_n, None)
            if n is None:
                return
            mr = {"source_branch": f"b{n}", "target_branch": "main", "title": f"Change {n}",
                  "description": f"Seeded merge request number {n}"}
            if n % 10 == 0:
                mr["labels"] = "bug"
            status, _, body = call(conn, "POST", f"{prefix}/projects/{project}/merge_requests",
                                   token, mr)
            count("POST", status, body)
            if status == 201 and n % 5 == 4:
                iid = json.loads(body)["iid"]
                status, _, body = call(conn, "PUT",
                                       f"{prefix}/projects/{project}/merge_requests/{iid}",
                                       token, {"state_event": "close"})
                count("PUT close", status, body)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - started
    print(f"  seeded {mrs} merge requests with {clients} clients in {took:.1f} s "
          f"({mrs / took:.1f}/s); status {dict(sorted(statuses.items()))}")
    for e in errors:
        print(f"  error: {e}")
    ok = all(k.split()[-1].startswith("2") for k in statuses)
    return 0 if ok else 1


def fetch(base: str, token: str, path: str) -> int:
    conn, prefix = connect(base)
    files = size = requests = 0
    page = ""
    started = time.perf_counter()
    while True:
        url = prefix + path + ((("&" if "?" in path else "?") + f"page={page}") if page else "")
        status, page, body = call(conn, "GET", url, token)
        requests += 1
        size += len(body)
        if status != 200:
            print(f"GET {url}: {status} {body[:300]!r}", file=sys.stderr)
            return 1
        data = json.loads(body)
        files += len(data["changes"] if isinstance(data, dict) else data)
        if not page:
            break
    print(f"{time.perf_counter() - started:.4f} {files} {size} {requests}")
    return 0


def main() -> int:
    if sys.argv[1] == "seed":
        _, _, base, token, project, mrs, clients = sys.argv
        return seed(base, token, project, int(mrs), int(clients))
    if sys.argv[1] == "fetch":
        _, _, base, token, path = sys.argv
        return fetch(base, token, path)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
