"""Whole-request limits: a slow or oversized request costs its sender, not the process.

- `--request-timeout-seconds`: a request whose body trickles in is cut off with GitLab's 503;
- `--max-concurrent-requests`: requests beyond the limit wait for a slot, health checks never;
- a body whose `Content-Length` is over its limit is refused before a byte of it is read;
- an anonymous caller's multipart body gets the small `--max-body-bytes` limit, not the upload
  limit.
"""

from __future__ import annotations

import socket
import threading
import time

import requests

from conftest import Server, assert_json

TOO_LARGE = {"message": "413 Request Entity Too Large"}


def open_request(server: Server, head: str) -> socket.socket:
    """A connection that has sent `head` (request line and headers) and nothing more."""
    conn = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    conn.sendall(head.encode())
    return conn


def status_of(conn: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


def trickle(conn: socket.socket, stop: threading.Event):
    """Sends one byte of the body now and then, never finishing it."""
    while not stop.is_set():
        try:
            conn.sendall(b"a")
        except OSError:
            return
        stop.wait(0.2)


def slow_post(server: Server) -> socket.socket:
    return open_request(
        server,
        f"POST /api/v4/projects HTTP/1.1\r\nHost: {server.host}\r\n"
        f"PRIVATE-TOKEN: {server.root_token}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n",
    )


def test_a_trickling_body_is_cut_off_at_the_request_timeout(make_server):
    server = make_server({"TRELLIS_REQUEST_TIMEOUT_SECONDS": "2"})
    conn = slow_post(server)
    stop = threading.Event()
    threading.Thread(target=trickle, args=(conn, stop), daemon=True).start()
    try:
        assert status_of(conn) == 503
    finally:
        stop.set()
        conn.close()
    # The process serves on.
    assert server.request("GET", "/version", token=server.root_token).status_code == 200


def test_requests_beyond_the_concurrency_limit_wait_and_health_checks_do_not(make_server):
    server = make_server({"TRELLIS_MAX_CONCURRENT_REQUESTS": "1",
                          "TRELLIS_REQUEST_TIMEOUT_SECONDS": "4"})
    holder = slow_post(server)  # takes the only slot until its timeout
    stop = threading.Event()
    threading.Thread(target=trickle, args=(holder, stop), daemon=True).start()
    try:
        time.sleep(0.5)
        # A second request waits for the slot (the client gives up first)...
        try:
            requests.get(server.api_url + "/version", timeout=1,
                         headers={"PRIVATE-TOKEN": server.root_token})
            waited = False
        except requests.Timeout:
            waited = True
        assert waited, "a request beyond the limit was served at once"
        # ...but health checks skip the queue.
        assert requests.get(server.url + "/-/health", timeout=2).status_code == 200
        assert status_of(holder) == 503
    finally:
        stop.set()
        holder.close()
    # The slot is free again.
    assert server.request("GET", "/version", token=server.root_token).status_code == 200


def test_an_oversized_content_length_is_refused_before_the_body(make_server):
    server = make_server({"TRELLIS_MAX_BODY_BYTES": "1000"})
    conn = open_request(
        server,
        f"POST /api/v4/projects HTTP/1.1\r\nHost: {server.host}\r\n"
        f"PRIVATE-TOKEN: {server.root_token}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n",
    )
    try:
        # No byte of the body is sent: the answer comes from the head alone.
        assert status_of(conn) == 413
    finally:
        conn.close()


def test_anonymous_multipart_bodies_get_the_small_limit(make_server):
    server = make_server({"TRELLIS_MAX_BODY_BYTES": "2000",
                          "TRELLIS_MAX_UPLOAD_BYTES": "1000000"})
    project = server.request("POST", "/projects", token=server.root_token,
                             data={"name": "limits", "visibility": "public"}).json()
    files = {"file": ("notes.txt", b"x" * 50_000, "text/plain")}
    r = server.request("POST", f"/projects/{project['id']}/uploads", files=files)
    assert_json(r, 413, TOO_LARGE)
    r = server.request("POST", f"/projects/{project['id']}/uploads", files=files,
                       token=server.root_token)
    assert r.status_code == 201, r.text
