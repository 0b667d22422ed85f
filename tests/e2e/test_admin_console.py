"""The admin console (/admin): the whole administrator's path in headless Chromium
(tests/browser/admin_console.mjs, playwright-core as the OAuth browser test), and its bad
inputs over plain HTTP with a signed-in requests session: 404 for everyone but
administrators, CSRF, an invalid component, a configuration the plugin refuses, another
tenant's plugin ids, admin mode, and settings errors worded as PUT /application/settings
words them.

Screenshots: the browser test writes one per page to a temporary directory, or to the
directory named by TRELLIS_SCREENSHOTS (the README's pictures: TRELLIS_SCREENSHOTS=docs/images)."""

from __future__ import annotations

import html as markup
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import pytest
import requests

from conftest import (PASSWORD, ROOT, assert_json, bind, csrf_of, mail_body, mails_for, make_user,
                      other_tenant, sign_in, upload)

TESTS = Path(__file__).resolve().parent.parent
SCRIPT = TESTS / "browser" / "admin_console.mjs"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

# Every console page and form, with a placeholder id (`{plugin}`, `{user}`).
PAGES = [
    ("GET", "/admin"),
    ("GET", "/admin/plugins"),
    ("POST", "/admin/plugins"),
    ("GET", "/admin/plugins/{plugin}"),
    ("POST", "/admin/plugins/{plugin}/bind"),
    ("POST", "/admin/plugins/{plugin}/try"),
    ("POST", "/admin/plugins/{plugin}/delete"),
    ("GET", "/admin/hooks/spam_check"),
    ("POST", "/admin/hooks/spam_check/try"),
    ("POST", "/admin/hooks/spam_check/unbind"),
    ("GET", "/admin/settings"),
    ("GET", "/admin/settings/general"),
    ("POST", "/admin/settings/general"),
    ("GET", "/admin/usage"),
    ("GET", "/admin/users"),
    ("POST", "/admin/users"),
    ("GET", "/admin/users/new"),
    ("GET", "/admin/users/{user}"),
    ("POST", "/admin/users/{user}/block"),
    ("GET", "/admin/session/new"),
    ("POST", "/admin/session"),
    ("POST", "/admin/session/destroy"),
]


def browser_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (TESTS / "node_modules" / "playwright-core").is_dir():
        return "tests/node_modules is missing (run `npm ci` in tests/)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    return None


@pytest.fixture(scope="module")
def admin(server):
    """An administrator with a password, and a web session of theirs."""
    user, token = make_user(server, "adm", admin=True)
    return {"user": user, "token": token, "web": sign_in(server, user.username)}


@pytest.fixture(scope="module")
def keyword_plugin(server, keyword_wasm) -> dict:
    r = upload(server, keyword_wasm, name="keyword-spam-filter.wasm")
    assert r.status_code in (200, 201), r.text
    return r.json()


def page_form(web, url: str) -> str:
    """The CSRF token of a console page's forms."""
    r = web.get(url, allow_redirects=False)
    assert r.status_code == 200, (url, r.status_code, r.text[:500])
    return csrf_of(r.text)


def alerts(html: str) -> str:
    """The text of a page without its markup (for looking for messages)."""
    return markup.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


# ---- the whole path in a browser ----------------------------------------------------------


def test_admin_console_in_a_browser(server, admin, keyword_wasm, tmp_path):
    reason = browser_missing()
    if reason:
        warnings.warn(f"NOTICE: browser test skipped: {reason}", stacklevel=1)
        pytest.skip(reason)
    # The browser binds spam_check and changes a setting: both are undone at the end, since
    # the other tests here expect them as they were.
    author, author_token = make_user(server, "author")
    gl = server.gitlab(author_token)
    project = gl.projects.create({"name": "console-" + author.username})
    wasm = tmp_path / "keyword_spam_filter.wasm"
    wasm.write_bytes(keyword_wasm)
    shots = os.environ.get("TRELLIS_SCREENSHOTS") or str(tmp_path / "shots")
    if not os.path.isabs(shots):
        shots = str(ROOT / shots)
    try:
        proc = subprocess.run(
            ["node", str(SCRIPT), server.url, admin["user"].username, PASSWORD, str(wasm),
             str(project.id), author_token, str(author.id), shots],
            capture_output=True, text=True, timeout=300, cwd=TESTS,
        )
        print(proc.stdout)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "all steps passed" in proc.stdout
        for name in ("admin-plugins", "admin-plugin", "admin-hook", "admin-settings",
                     "admin-users", "admin-user-new", "admin-user", "admin-phone"):
            assert (Path(shots) / f"{name}.png").stat().st_size > 10_000, name
    finally:
        server.request("DELETE", "/application/plugin_hooks/spam_check", token=server.root_token)
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"default_projects_limit": 100000, "default_project_visibility": "private"})


# ---- who may see the console -------------------------------------------------------------


def test_everyone_but_administrators_gets_404_on_every_page(server, admin, keyword_plugin):
    ids = {"plugin": keyword_plugin["id"], "user": admin["user"].id}
    user, _ = make_user(server, "plain")
    visitors = {"anonymous": None, "non-admin": sign_in(server, user.username)}
    for who, web in visitors.items():
        for method, path in PAGES:
            url = server.url + path.format(**ids)
            if web is None:
                r = requests.request(method, url, allow_redirects=False, timeout=30)
            else:
                token = page_form(web, server.url + "/profile/applications")
                form = {"authenticity_token": token} if method == "POST" else None
                r = web.request(method, url, allow_redirects=False, data=form)
            assert r.status_code == 404, (who, method, path, r.status_code)
            assert "The page could not be found." in r.text, (who, path)
            assert "keyword" not in r.text and "Plugins" not in r.text
    # The administrator sees them.
    assert admin["web"].get(server.url + "/admin/plugins").status_code == 200


def test_posts_need_the_session_csrf_token(server, admin):
    victim, _ = make_user(server, "victim")
    url = f"{server.url}/admin/users/{victim.id}/block"
    r = admin["web"].post(url, allow_redirects=False)
    assert r.status_code == 422 and "authenticity token is invalid" in r.text
    r = admin["web"].post(url, data={"authenticity_token": "0" * 64}, allow_redirects=False)
    assert r.status_code == 422
    # Another signed-in administrator's token is no good either.
    other, _ = make_user(server, "adm2", admin=True)
    other_web = sign_in(server, other.username)
    foreign = page_form(other_web, server.url + "/admin/users")
    r = admin["web"].post(url, data={"authenticity_token": foreign}, allow_redirects=False)
    assert r.status_code == 422
    assert server.gitlab().users.get(victim.id).state == "active"
    token = page_form(admin["web"], f"{server.url}/admin/users/{victim.id}")
    r = admin["web"].post(url, data={"authenticity_token": token}, allow_redirects=False)
    assert r.status_code == 302 and r.headers["Location"] == f"/admin/users/{victim.id}?done=block"
    assert server.gitlab().users.get(victim.id).state == "blocked"


# ---- plugins -------------------------------------------------------------------------------


def test_an_invalid_component_shows_why(server, admin):
    web = admin["web"]
    token = page_form(web, server.url + "/admin/plugins")
    r = web.post(server.url + "/admin/plugins", data={"authenticity_token": token},
                 files={"file": ("broken.wasm", b"\0asm-not-really", "application/wasm")},
                 allow_redirects=False)
    assert r.status_code == 422
    text = alerts(r.text)
    assert 'id="field_file_error"' in r.text, text
    api = upload(server, b"\0asm-not-really", name="broken.wasm")
    reason = api.json()["message"].removeprefix("400 Bad request - ")
    assert reason in text, (reason, text)
    # No file at all.
    r = web.post(server.url + "/admin/plugins", data={"authenticity_token": token},
                 files={"name": (None, "x")}, allow_redirects=False)
    assert r.status_code == 422 and "file must be a .wasm file to upload" in alerts(r.text)


def test_an_invalid_config_is_refused_with_the_plugins_reason(server, admin, keyword_plugin):
    web = admin["web"]
    page = f"{server.url}/admin/plugins/{keyword_plugin['id']}"
    token = page_form(web, page)
    form = {"authenticity_token": token, "hook": "spam_check", "failure_policy": "fail_open"}
    r = web.post(page + "/bind", data={**form, "config": '{"keywords": []}'}, allow_redirects=False)
    assert r.status_code == 422
    assert "config is invalid: keywords must list at least one keyword" in alerts(r.text)
    assert 'aria-invalid="true"' in r.text
    r = web.post(page + "/bind", data={**form, "config": "[1, 2"}, allow_redirects=False)
    assert r.status_code == 422 and "config must be a JSON object" in alerts(r.text)
    r = web.post(page + "/bind", data={**form, "config": '{"keywords": ["x"]}',
                                       "timeout_ms": "10000000"}, allow_redirects=False)
    assert r.status_code == 422 and "timeout_ms" in alerts(r.text)
    r = web.post(page + "/bind", data={**form, "config": '{"keywords": ["x"]}',
                                       "fuel": "lots"}, allow_redirects=False)
    assert r.status_code == 422 and "fuel is invalid" in alerts(r.text)
    hooks = assert_json(server.request("GET", "/application/plugin_hooks",
                                       token=server.root_token), 200)
    assert hooks[0]["plugin"] is None, hooks[0]
    # A hook the plugin does not implement.
    r = web.post(page + "/bind", data={**form, "hook": "external_authorization",
                                       "config": '{"keywords": ["x"]}'}, allow_redirects=False)
    assert r.status_code == 422
    assert "but the external_authorization hook needs" in alerts(r.text)
    r = web.post(page + "/bind", data={**form, "hook": "nope"}, allow_redirects=False)
    assert r.status_code == 400


def test_bind_try_and_unbind_without_javascript(server, admin, keyword_plugin):
    web = admin["web"]
    page = f"{server.url}/admin/plugins/{keyword_plugin['id']}"
    token = page_form(web, page)
    sample = ('{"title": "Win the lottery", "author": {"id": 5, "username": "bob", '
              '"created_at": "2024-01-01T00:00:00Z"}}')
    r = web.post(page + "/try", data={"authenticity_token": token, "input": sample,
                                      "config": '{"keywords": ["lottery"]}'})
    assert r.status_code == 200
    text = alerts(r.text)
    assert "verdict: disallow" in text and 'keyword "lottery" found' in text, text
    r = web.post(page + "/try", data={"authenticity_token": token, "input": "{",
                                      "config": '{"keywords": ["lottery"]}'})
    assert r.status_code == 422 and "input is invalid" in alerts(r.text)
    r = web.post(page + "/bind", data={"authenticity_token": token, "hook": "spam_check",
                                       "config": '{"keywords": ["lottery"]}',
                                       "failure_policy": "fail_closed", "memory_bytes": "8388608"},
                 allow_redirects=False)
    assert r.status_code == 302 and r.headers["Location"] == "/admin/hooks/spam_check?done=bound"
    hooks = assert_json(server.request("GET", "/application/plugin_hooks",
                                       token=server.root_token), 200)
    assert hooks[0]["plugin"]["id"] == keyword_plugin["id"]
    assert hooks[0]["failure_policy"] == "fail_closed" and hooks[0]["memory_bytes"] == 8388608
    # Trying the bound plugin neither writes nor counts.
    def calls() -> int:
        page = web.get(server.url + "/admin/hooks/spam_check").text
        return int(re.search(r'id="watch-calls">(\d+)<', page).group(1))
    before = calls()
    r = web.post(server.url + "/admin/hooks/spam_check/try",
                 data={"authenticity_token": token, "input": sample})
    assert r.status_code == 200 and "verdict: disallow" in alerts(r.text)
    assert calls() == before
    # A bound plugin cannot be deleted; unbinding frees it.
    r = web.post(page + "/delete", data={"authenticity_token": token})
    assert r.status_code == 400 and "unbind it first" in r.text
    r = web.post(server.url + "/admin/hooks/spam_check/unbind",
                 data={"authenticity_token": token}, allow_redirects=False)
    assert r.status_code == 302
    hooks = assert_json(server.request("GET", "/application/plugin_hooks",
                                       token=server.root_token), 200)
    assert hooks[0]["plugin"] is None
    assert web.get(server.url + "/admin/hooks/nope").status_code == 404


def prefilled_input(html: str) -> str:
    """The "Try it" form's input as the page prefills it."""
    found = re.search(r'<textarea[^>]*name="input"[^>]*>(.*?)</textarea>', html, re.S)
    assert found, html[:500]
    return markup.unescape(found.group(1))


def built_in_id(server, name: str) -> int:
    # The first catalog read compiles the built-in plugins: slow on a loaded debug build.
    rows = assert_json(server.request("GET", "/application/plugins", token=server.root_token,
                                      timeout=300), 200)
    return next(p["id"] for p in rows if p["name"] == name and p["built_in"])


# built-in plugin -> (configuration, what the report of its sample says)
TRIALS = {
    "spam-filter": ('{"blocked_words": ["watches"]}', "verdict: disallow"),
    "external-authorization": ('{"url": "http://192.0.2.1/"}',
                               "outbound HTTP is not granted to this plugin binding"),
    "push-rules": ("{}", "verdict: refuse reason: Commit message does not follow the pattern "
                         "'^(feat|fix): '"),
    "webhook-formatter": ('{"format": "chat"}', "verdict: deliver"),
}


@pytest.mark.parametrize("name", list(TRIALS))
def test_try_it_runs_every_hooks_sample(server, admin, name):
    web = admin["web"]
    page = f"{server.url}/admin/plugins/{built_in_id(server, name)}"
    html = web.get(page).text
    token, sample = csrf_of(html), prefilled_input(html)
    config, expected = TRIALS[name]
    r = web.post(page + "/try", data={"authenticity_token": token, "input": sample,
                                      "config": config})
    assert r.status_code == 200, alerts(r.text)
    text = alerts(r.text)
    assert expected in text, text
    assert "time:" in text and "fuel:" in text and "bytes peak" in text, text
    # An input the hook does not read.
    r = web.post(page + "/try", data={"authenticity_token": token, "config": config,
                                      "input": sample.replace("{", '{"nope": 1, ', 1)})
    assert r.status_code == 422 and "input is invalid" in alerts(r.text), alerts(r.text)


def test_try_it_checks_a_sample_push_through_the_bound_plugin(server, admin):
    """The bound push-rules plugin tried on edited sample pushes: an allowed one, a refused
    file name (its content read from the sample), and no repository touched."""
    web = admin["web"]
    assert_json(bind(server, "push_rules", plugin_id=built_in_id(server, "push-rules"),
                     config={}), 200)
    page = server.url + "/admin/hooks/push_rules"
    html = web.get(page).text
    token, sample = csrf_of(html), prefilled_input(html)
    projects = assert_json(server.request("GET", "/projects", token=server.root_token), 200)
    good = sample.replace("update the readme", "feat: update the readme")
    r = web.post(page + "/try", data={"authenticity_token": token, "input": good})
    assert r.status_code == 200 and "verdict: allow" in alerts(r.text), alerts(r.text)
    bad = good.replace('"README.md"', '"tool.exe"')
    r = web.post(page + "/try", data={"authenticity_token": token, "input": bad})
    text = alerts(r.text)
    assert r.status_code == 200 and "verdict: refuse" in text, text
    assert 'File name tool.exe was prohibited by the pattern "\\\\.exe$"' in text, text
    assert assert_json(server.request("GET", "/projects", token=server.root_token),
                       200) == projects
    server.request("DELETE", "/application/plugin_hooks/push_rules", token=server.root_token)


def test_another_tenants_plugin_ids_are_404(server, admin, keyword_wasm, hostile_wasm):
    host, token = other_tenant(server, "cons")
    assert upload(server, keyword_wasm, token=token, host=host).status_code == 201
    theirs = upload(server, hostile_wasm, token=token, host=host).json()
    ours = {p["id"] for p in assert_json(
        server.request("GET", "/application/plugins", token=server.root_token), 200)}
    assert theirs["id"] not in ours
    web = admin["web"]
    csrf = page_form(web, server.url + "/admin/plugins")
    base = f"{server.url}/admin/plugins/{theirs['id']}"
    assert web.get(base).status_code == 404
    for action in ("bind", "try", "delete"):
        r = web.post(f"{base}/{action}", data={"authenticity_token": csrf, "hook": "spam_check",
                                               "config": "{}", "input": "{}"})
        assert r.status_code == 404, action
    assert web.get(server.url + "/admin/plugins/not-a-number").status_code == 404
    # Still there for its tenant.
    rows = assert_json(server.request("GET", "/application/plugins", token=token, host=host), 200)
    assert theirs["id"] in {p["id"] for p in rows}


# ---- settings and users ----------------------------------------------------------------------


def test_settings_errors_are_the_apis(server, admin):
    web = admin["web"]
    page = server.url + "/admin/settings/visibility"
    html = web.get(page).text
    token = csrf_of(html)
    assert 'name="default_projects_limit"' in html
    r = web.post(page, data={"authenticity_token": token, "default_projects_limit": "lots"})
    assert r.status_code == 422
    api = server.request("PUT", "/application/settings", token=server.root_token,
                         data={"default_projects_limit": "lots"})
    assert api.status_code == 400
    assert api.json()["error"] in alerts(r.text)
    assert 'id="setting_default_projects_limit_error"' in r.text
    # A model rule: `{"message": {"field": ["problem"]}}`.
    r = web.post(page, data={"authenticity_token": token, "default_projects_limit": "-3"})
    assert r.status_code == 422, r.status_code
    api = server.request("PUT", "/application/settings", token=server.root_token,
                         data={"default_projects_limit": "-3"})
    field, messages = next(iter(api.json()["message"].items()))
    assert f"{field} {messages[0]}" in alerts(r.text)
    # A good value is saved, and the secrets are write-only.
    r = web.post(page, data={"authenticity_token": token, "default_projects_limit": "77"},
                 allow_redirects=False)
    assert r.status_code == 302
    assert server.gitlab().settings.get().default_projects_limit == 77
    r = web.post(server.url + "/admin/settings/spam",
                 data={"authenticity_token": token, "captcha_private_key": "s3cret-value"},
                 allow_redirects=False)
    assert r.status_code == 302
    html = web.get(server.url + "/admin/settings/spam").text
    assert "s3cret-value" not in html and "a value is set" in html
    assert "--settings-cache-seconds" in html
    assert web.get(server.url + "/admin/settings/nope").status_code == 404
    server.request("PUT", "/application/settings", token=server.root_token,
                   json={"default_projects_limit": 100000})


def test_enumerated_settings_are_selects_of_the_catalogs_values(server, admin):
    web = admin["web"]
    page = server.url + "/admin/settings/visibility"
    html = web.get(page).text
    select = re.search(r'<select[^>]*name="default_branch_protection"[^>]*>(.*?)</select>', html, re.S)
    assert select, "default_branch_protection is not a select"
    values = re.findall(r'<option value="([^"]*)"', select.group(1))
    assert values == ["0", "1", "2", "3", "4"]
    assert re.search(r'<option value="2" selected>Fully protected</option>', select.group(1))
    git = re.search(r'<select[^>]*name="enabled_git_access_protocol"[^>]*>(.*?)</select>', html, re.S)
    assert re.findall(r'<option value="([^"]*)"', git.group(1)) == ["", "ssh", "http"]
    # Flags stay checkboxes.
    assert re.search(r'<input type="checkbox"[^>]*name="project_export_enabled"', html)
    token = csrf_of(html)
    r = web.post(page, data={"authenticity_token": token, "default_branch_protection": "4",
                             "enabled_git_access_protocol": "ssh"}, allow_redirects=False)
    assert r.status_code == 302, alerts(r.text)
    settings = server.gitlab().settings.get()
    assert settings.default_branch_protection == 4 and settings.enabled_git_access_protocol == "ssh"
    # A value outside the choices (a hand-made form) gets the API's error next to the field.
    r = web.post(page, data={"authenticity_token": token, "default_branch_protection": "9"})
    assert r.status_code == 422
    assert "default_branch_protection does not have a valid value" in alerts(r.text)
    r = web.post(page, data={"authenticity_token": token, "default_branch_protection": "2",
                             "enabled_git_access_protocol": ""}, allow_redirects=False)
    assert r.status_code == 302
    settings = server.gitlab().settings.get()
    assert settings.default_branch_protection == 2 and settings.enabled_git_access_protocol is None


def test_a_new_user_is_created_with_the_apis_rules(server, admin):
    web = admin["web"]
    token = page_form(web, server.url + "/admin/users/new")
    login = "made-" + os.urandom(3).hex()
    form = {"authenticity_token": token, "name": "Made Here", "username": login,
            "email": f"{login}@example.com", "password": "", "access_level": "regular"}
    r = web.post(server.url + "/admin/users", data=form, allow_redirects=False)
    assert r.status_code == 302, alerts(r.text)
    user_id = int(re.fullmatch(r"/admin/users/(\d+)\?done=created", r.headers["Location"]).group(1))
    assert "User was successfully created." in alerts(web.get(server.url + r.headers["Location"]).text)
    made = assert_json(server.request("GET", f"/users/{user_id}", token=server.root_token), 200)
    assert (made["username"], made["name"], made["is_admin"]) == (login, "Made Here", False)
    assert made["confirmed_at"] is not None
    # Without a password, the user is mailed a link to set one (GitLab's Admin Area).
    [mail] = mails_for(server, f"{login}@example.com")
    assert mail["Subject"] == "Account was created for you"
    assert "reset_password_token=" in mail_body(mail)
    assert login in web.get(server.url + "/admin/users", params={"search": login}).text
    # The API's refusals, next to their fields.
    taken = dict(form, email=f"other-{login}@example.com")
    r = web.post(server.url + "/admin/users", data=taken)
    assert r.status_code == 422
    api = server.request("POST", "/users", token=server.root_token,
                         json={"name": "X", "username": login, "email": f"api-{login}@example.com",
                               "password": "Str0ng-password!"})
    field, messages = next(iter(assert_json(api, 400)["message"].items()))
    assert field == "username"
    assert re.search(r'<p class="field-error" id="user_username_error">username ' + re.escape(messages[0]), r.text)
    assert 'aria-invalid="true"' in r.text and f'value="{login}"' in r.text
    weak = dict(form, username=login + "-2", email=f"two-{login}@example.com", password="short")
    r = web.post(server.url + "/admin/users", data=weak)
    assert r.status_code == 422
    assert "password is too short (minimum is 8 characters)" in alerts(r.text)
    assert 'id="user_password_error"' in r.text and "short" not in re.findall(r'value="([^"]*)"', r.text)
    bad = dict(form, username=login + "-3", email="not-an-email")
    r = web.post(server.url + "/admin/users", data=bad)
    assert r.status_code == 422 and 'id="user_email_error"' in r.text
    # An administrator, with a password of their own.
    boss = dict(form, username=login + "-4", email=f"four-{login}@example.com",
                password="Str0ng-password!", access_level="admin")
    r = web.post(server.url + "/admin/users", data=boss, allow_redirects=False)
    assert r.status_code == 302, alerts(r.text)
    made = server.gitlab().users.list(username=login + "-4")[0]
    assert made.is_admin is True
    assert sign_in(server, login + "-4", "Str0ng-password!") is not None


def test_user_states_follow_gitlabs_rules(server, admin):
    web = admin["web"]
    user, _ = make_user(server, "rules")
    page = f"{server.url}/admin/users/{user.id}"
    token = page_form(web, page)
    listing = web.get(server.url + "/admin/users", params={"search": user.username}).text
    assert re.findall(r'href="/admin/users/(\d+)"', listing) == [str(user.id)]
    # Recently active users are not deactivated (GitLab's message).
    server.request("GET", "/user", token=server.create_token_api(user_id=user.id)["token"])
    r = web.post(page + "/deactivate", data={"authenticity_token": token})
    assert r.status_code in (200, 403)
    r = web.post(page + "/block", data={"authenticity_token": token}, allow_redirects=False)
    assert r.status_code == 302
    r = web.post(page + "/activate", data={"authenticity_token": token})
    assert r.status_code == 403 and "A blocked user must be unblocked to be activated" in r.text
    r = web.post(page + "/unblock", data={"authenticity_token": token}, allow_redirects=True)
    assert r.status_code == 200 and "Successfully unblocked" in r.text
    # An administrator cannot block themselves.
    own = f"{server.url}/admin/users/{admin['user'].id}/block"
    r = web.post(own, data={"authenticity_token": token})
    assert r.status_code == 403 and "cannot be blocked" in r.text
    assert web.post(page + "/explode", data={"authenticity_token": token}).status_code == 404
    assert web.get(server.url + "/admin/users/99999999").status_code == 404


def test_admin_mode_asks_for_the_password_again(server):
    user, _ = make_user(server, "mode", admin=True)
    web = sign_in(server, user.username)
    assert_json(server.request("PUT", "/application/settings", token=server.root_token,
                               json={"admin_mode": True}), 200)
    try:
        r = web.get(server.url + "/admin/users", allow_redirects=False)
        assert r.status_code == 302
        assert r.headers["Location"] == "/admin/session/new?redirect_to=%2Fadmin%2Fusers"
        form = web.get(server.url + r.headers["Location"])
        token = csrf_of(form.text)
        r = web.post(server.url + "/admin/session", allow_redirects=False,
                     data={"authenticity_token": token, "password": "wrong",
                           "redirect_to": "/admin/users"})
        assert r.status_code == 401 and "Invalid login or password" in r.text
        r = web.post(server.url + "/admin/session", allow_redirects=False,
                     data={"authenticity_token": token, "password": PASSWORD,
                           "redirect_to": "https://evil.example/"})
        assert r.status_code == 302 and r.headers["Location"] == "/admin"
        assert web.get(server.url + "/admin/users", allow_redirects=False).status_code == 200
        r = web.post(server.url + "/admin/session/destroy", data={"authenticity_token": token},
                     allow_redirects=False)
        assert r.status_code == 302
        assert web.get(server.url + "/admin/users", allow_redirects=False).status_code == 302
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"admin_mode": False})
