"""Operational endpoints: health, liveness, readiness, metrics."""

import re

from conftest import assert_json


def test_health(server):
    r = server.request("GET", "/-/health")
    assert r.status_code == 200
    assert r.text.strip() == "GitLab OK"


def test_health_needs_no_token_and_ignores_bad_one(server):
    r = server.request("GET", "/-/health", token="glpat-bogusbogusbogusbogus")
    assert r.status_code == 200
    assert r.text.strip() == "GitLab OK"


def test_liveness(server):
    assert_json(server.request("GET", "/-/liveness"), 200, {"status": "ok"})


def test_readiness(server):
    data = assert_json(server.request("GET", "/-/readiness"), 200)
    assert data["status"] == "ok"


def test_metrics_counts_user_route(server):
    assert server.request("GET", "/user", token=server.root_token).status_code == 200
    r = server.request("GET", "/-/metrics")
    assert r.status_code == 200
    assert "http_requests_total" in r.text
    lines = [l for l in r.text.splitlines()
             if l.startswith("http_requests_total") and 'route="/api/v4/user"' in l]
    assert lines, r.text[:2000]
    assert any(float(l.rsplit(" ", 1)[1]) >= 1 for l in lines)


def test_metrics_counter_increases(server):
    def count():
        text = server.request("GET", "/-/metrics").text
        total = 0.0
        for line in text.splitlines():
            if (line.startswith("http_requests_total{") and 'route="/api/v4/version"' in line
                    and 'status="200"' in line):
                total += float(line.rsplit(" ", 1)[1])
        return total

    before = count()
    for _ in range(3):
        assert server.request("GET", "/version", token=server.root_token).status_code == 200
    # the counter is recorded as the response completes; allow it a moment
    assert server.wait_for(lambda: count() == before + 3, timeout=5), (before, count())


def test_metrics_does_not_use_raw_paths_as_routes(server):
    for i in (101, 102, 103):
        server.request("GET", f"/personal_access_tokens/{i}", token=server.root_token)
    text = server.request("GET", "/-/metrics").text
    routes = set(re.findall(r'route="([^"]*)"', text))
    assert not any(r.endswith("/101") or r.endswith("/102") for r in routes), routes


def test_metrics_never_contain_token(server):
    server.request("GET", "/user", params={"access_token": server.root_token})
    text = server.request("GET", "/-/metrics").text
    assert server.root_token not in text
