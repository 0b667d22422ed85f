"""What tests/bench/openloop.py and tests/bench/closedloop.py share: their command line
(`[--post JSON] URL NUMBER SECONDS [HEADER: value ...]`) and one request over a keep-alive
connection that is opened again after an error."""

from __future__ import annotations

import http.client
import urllib.parse
from dataclasses import dataclass


@dataclass
class Load:
    method: str
    body: bytes | None
    host: str
    port: int
    path: str
    number: float
    seconds: float
    headers: dict[str, str]

    @classmethod
    def from_args(cls, args: list[str]) -> "Load":
        method, body = "GET", None
        if args[0] == "--post":
            method, body = "POST", args[1].encode()
            args = args[2:]
        headers = dict(h.split(": ", 1) for h in args[3:])
        if body is not None:
            headers["Content-Type"] = "application/json"
        parts = urllib.parse.urlsplit(args[0])
        path = parts.path + ("?" + parts.query if parts.query else "")
        return cls(method, body, parts.hostname, parts.port, path, float(args[1]),
                   float(args[2]), headers)

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=30)

    def send(self, conn: http.client.HTTPConnection) -> tuple[http.client.HTTPConnection, int]:
        """One request; the connection to use next and the status (0: no answer)."""
        try:
            conn.request(self.method, self.path, body=self.body, headers=self.headers)
            resp = conn.getresponse()
            resp.read()
            return conn, resp.status
        except (OSError, http.client.HTTPException):
            conn.close()
            return self.connect(), 0
