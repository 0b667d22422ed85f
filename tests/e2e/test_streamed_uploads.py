"""Uploads are streamed to disk: a multipart file costs the server disk, not memory.

- an authenticated upload larger than `--max-body-bytes` (within `--max-upload-bytes` and
  `max_attachment_size`) is stored whole, and the server's peak RSS (VmHWM) does not grow by
  anything near the upload's size;
- an upload past `--max-upload-bytes`, sent without a `Content-Length` so only the streaming
  cap can stop it, gets 413, and no temporary file is left behind;
- a token that is not valid does not open the upload limit: its multipart body gets the small
  `--max-body-bytes` limit before authentication answers;
- a stored upload is served streamed, with its `Content-Length`, byte for byte;
- a `kill -9` in the middle of an upload leaves its temporary file, and the next start removes
  it.
"""

from __future__ import annotations

import secrets
import threading
import time

import pytest

from conftest import Server, assert_json

MIB = 1024 * 1024
TOO_LARGE = {"message": "413 Request Entity Too Large"}


def multipart_stream(boundary: str, filename: str, size: int, chunk: int = MIB):
    """A multipart body with one file part of `size` bytes, generated chunk by chunk (sent
    chunked, without a `Content-Length`)."""
    yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
           f"filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    block = secrets.token_bytes(chunk)
    sent = 0
    while sent < size:
        part = block[: min(chunk, size - sent)]
        sent += len(part)
        yield part
    yield f"\r\n--{boundary}--\r\n".encode()


def post_upload(server: Server, project_id: int, size: int, token: str | None):
    boundary = "trellis" + secrets.token_hex(8)
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    return server.request("POST", f"/projects/{project_id}/uploads", token=token, headers=headers,
                          data=multipart_stream(boundary, "big.bin", size), timeout=180)


def peak_rss_kib(server: Server) -> int:
    for line in open(f"/proc/{server.proc.pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


def spooled(server: Server) -> list:
    spool = server.data_dir / "tmp" / "uploads"
    return sorted(spool.iterdir()) if spool.exists() else []


@pytest.fixture(scope="module")
def big(make_server) -> Server:
    server = make_server({"TRELLIS_MAX_BODY_BYTES": str(MIB),
                          "TRELLIS_MAX_UPLOAD_BYTES": str(300 * MIB)})
    assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                               json={"max_attachment_size": 300}), 200)
    return server


def project(server: Server) -> dict:
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "up-" + secrets.token_hex(3), "visibility": "public"})
    return assert_json(r, 201)


def test_a_large_upload_is_streamed_to_disk(big):
    p = project(big)
    size = 200 * MIB
    before = peak_rss_kib(big)
    r = post_upload(big, p["id"], size, big.root_token)
    body = assert_json(r, 201)
    grown_mib = (peak_rss_kib(big) - before) / 1024
    # A generous bound: buffered in memory, the upload alone would add 200 MiB.
    assert grown_mib < 64, f"peak RSS grew by {grown_mib:.0f} MiB for a 200 MiB upload"
    assert body["alt"] == "big.bin" and body["url"].endswith("/big.bin")
    secret = body["url"].split("/")[2]
    stored = big.data_dir / "uploads" / "1" / "project" / str(p["id"]) / secret / "big.bin"
    assert stored.stat().st_size == size
    assert spooled(big) == []


def test_an_upload_past_the_limit_gets_413_and_leaves_nothing(make_server):
    server = make_server({"TRELLIS_MAX_BODY_BYTES": str(MIB),
                          "TRELLIS_MAX_UPLOAD_BYTES": str(4 * MIB)})
    p = project(server)
    r = post_upload(server, p["id"], 6 * MIB, server.root_token)
    assert_json(r, 413, TOO_LARGE)
    assert spooled(server) == []
    uploads = server.data_dir / "uploads"
    assert not uploads.exists() or not any(f.is_file() for f in uploads.rglob("*"))
    # The limit is the streaming cap, not the body limit: 3 MiB fits.
    assert_json(post_upload(server, p["id"], 3 * MIB, server.root_token), 201)
    assert spooled(server) == []


def test_an_invalid_token_does_not_open_the_upload_limit(big):
    p = project(big)
    r = post_upload(big, p["id"], 2 * MIB, "not-a-token")
    assert_json(r, 413, TOO_LARGE)
    r = post_upload(big, p["id"], 2 * MIB, None)
    assert_json(r, 413, TOO_LARGE)
    assert spooled(big) == []


def test_a_stored_upload_is_served_whole_with_its_length(big):
    p = project(big)
    body = assert_json(post_upload(big, p["id"], 3 * MIB, big.root_token), 201)
    r = big.request("GET", big.url + body["full_path"], token=big.root_token, stream=True)
    assert r.status_code == 200
    assert r.headers["Content-Length"] == str(3 * MIB)
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    secret = body["url"].split("/")[2]
    stored = big.data_dir / "uploads" / "1" / "project" / str(p["id"]) / secret / "big.bin"
    assert r.raw.read() == stored.read_bytes()


def test_a_start_removes_what_a_killed_upload_left(make_server):
    server = make_server({"TRELLIS_MAX_UPLOAD_BYTES": str(64 * MIB)})
    p = project(server)
    sent_some, hold = threading.Event(), threading.Event()

    def stalled_body():
        boundary_parts = multipart_stream("stall", "stall.bin", 32 * MIB)
        yield next(boundary_parts)
        yield next(boundary_parts)
        sent_some.set()
        hold.wait(30)

    def upload():
        headers = {"Content-Type": "multipart/form-data; boundary=stall"}
        try:
            server.request("POST", f"/projects/{p['id']}/uploads", token=server.root_token,
                           headers=headers, data=stalled_body(), timeout=30)
        except Exception:  # the server dies under it
            pass

    uploader = threading.Thread(target=upload, daemon=True)
    uploader.start()
    assert sent_some.wait(10)
    deadline = time.monotonic() + 10
    while not spooled(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spooled(server), "the upload was not being spooled"
    server.proc.kill()  # SIGKILL: the request never ends, its temporary file stays
    server.proc.wait(timeout=10)
    hold.set()
    uploader.join(timeout=15)
    assert spooled(server), "nothing was left to clean up"

    server.start()
    assert spooled(server) == []
    assert_json(post_upload(server, p["id"], MIB, server.root_token), 201)
