"""The OAuth pages in a real browser: headless Chromium (Debian's `chromium`) driven by
playwright-core (tests/package.json, installed with `npm ci`) runs tests/browser/oauth_flow.mjs
against the server. Skipped, with a notice, when node_modules or chromium are missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from conftest import PASSWORD, make_user

TESTS = Path(__file__).resolve().parent.parent
SCRIPT = TESTS / "browser" / "oauth_flow.mjs"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (TESTS / "node_modules" / "playwright-core").is_dir():
        return "tests/node_modules is missing (run `npm ci` in tests/)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    return None


def test_browser_sign_in_register_authorize(server):
    reason = missing()
    if reason:
        # pytest -q shows warnings in its summary, so the notice is seen in `cargo test` too.
        warnings.warn(f"NOTICE: browser test skipped: {reason}", stacklevel=1)
        pytest.skip(reason)
    user, _ = make_user(server)
    proc = subprocess.run(
        ["node", str(SCRIPT), server.url, user.username, PASSWORD],
        capture_output=True, text=True, timeout=180, cwd=TESTS,
    )
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all steps passed" in proc.stdout
