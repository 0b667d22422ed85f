"""The repository API with python-gitlab: branches, tags, the tree (offset and keyset pages),
files (get, head, raw, create, update, delete), blobs, archives, and GitLab's answers to bad
input: unknown projects, refs and files, another tenant's projects, guests writing, tokens
without the scope, invalid names, paths outside the repository, a stale last_commit_id and
bodies over the limit. Commits and compare are in test_repository_commits.py.
"""

from __future__ import annotations

import base64
import hashlib
import io
import secrets
import tarfile
import urllib.parse
import zipfile

import gitlab
import pytest

from conftest import assert_json, make_user, other_tenant

PUSH_REFUSED = {"message": "403 Forbidden - You are not allowed to push into this branch"}


def enc(value: str) -> str:
    return urllib.parse.quote(value, safe="")


@pytest.fixture(scope="module")
def project(gl):
    return gl.projects.create({"name": "r" + secrets.token_hex(3), "visibility": "private",
                               "initialize_with_readme": True, "default_branch": "main"})


def new_project(gl, **attrs):
    return gl.projects.create({"name": "r" + secrets.token_hex(3),
                               "initialize_with_readme": True, "default_branch": "main", **attrs})


def create_file(project, path, content="x\n", branch="main", **extra):
    return project.files.create({"file_path": path, "branch": branch, "content": content,
                                 "commit_message": f"add {path}", **extra})


# ---- branches ------------------------------------------------------------------------------


def test_branches_list_get_create_delete(server, gl):
    p = new_project(gl)
    main = p.branches.get("main")
    # default_branch_protection 2 (GitLab's default) protects the default branch
    assert main.default is True and main.merged is False and main.protected is True
    assert main.can_push is True and main.developers_can_push is False
    assert main.web_url.endswith(f"/{p.path_with_namespace}/-/tree/main")
    assert main.commit["title"] == "Initial commit"
    assert len(main.commit["id"]) == 40 and main.commit["short_id"] == main.commit["id"][:8]

    created = p.branches.create({"branch": "feature/login", "ref": "main"})
    assert created.name == "feature/login" and created.commit["id"] == main.commit["id"]
    assert created.merged is True and created.default is False
    p.branches.create({"branch": "fix-1", "ref": main.commit["id"]})
    names = [b.name for b in p.branches.list(get_all=True)]
    assert names == ["feature/login", "fix-1", "main"]
    assert [b.name for b in p.branches.list(search="LOGIN", get_all=True)] == ["feature/login"]
    assert [b.name for b in p.branches.list(search="^fi", get_all=True)] == ["fix-1"]
    assert [b.name for b in p.branches.list(search="1$", get_all=True)] == ["fix-1"]
    assert [b.name for b in p.branches.list(regex="^(main|fix-.*)$", get_all=True)] == [
        "fix-1", "main"]
    # offset pages with GitLab's headers
    r = server.request("GET", f"/projects/{p.id}/repository/branches?per_page=2",
                       token=server.root_token)
    assert [b["name"] for b in assert_json(r, 200)] == ["feature/login", "fix-1"]
    assert r.headers["X-Total"] == "3" and r.headers["X-Next-Page"] == "2"
    # the branch name in the path is URL-encoded, as python-gitlab sends it
    p.branches.delete("feature/login")
    with pytest.raises(gitlab.GitlabGetError) as e:
        p.branches.get("feature/login")
    assert e.value.response_code == 404
    assert e.value.error_message == "404 Branch Not Found"
    # the delete is visible in a fresh clone's refs too
    assert "feature/login" not in [b.name for b in p.branches.list(get_all=True)]


def test_branch_errors(server, gl, project):
    base = f"/projects/{project.id}/repository/branches"
    tok = server.root_token
    assert_json(server.request("POST", base, token=tok, json={"ref": "main"}), 400,
                {"error": "branch is missing"})
    assert_json(server.request("POST", base, token=tok, json={"branch": "x"}), 400,
                {"error": "ref is missing"})
    for bad in ["-x", "a..b", "a b", "a~1", "x.lock", "HEAD", "a\x01b", "--upload-pack=x"]:
        assert_json(server.request("POST", base, token=tok, json={"branch": bad, "ref": "main"}),
                    400, {"message": "Branch name is invalid"})
    assert_json(server.request("POST", base, token=tok, json={"branch": "ok", "ref": "nope"}),
                400, {"message": "Invalid reference name: nope"})
    assert_json(server.request("POST", base, token=tok,
                               json={"branch": "ok", "ref": "--output=/tmp/x"}),
                400, {"message": "Invalid reference name: --output=/tmp/x"})
    assert_json(server.request("POST", base, token=tok, json={"branch": "main", "ref": "main"}),
                400, {"message": "Branch already exists"})
    assert_json(server.request("DELETE", f"{base}/main", token=tok), 405,
                {"message": "The default branch of a project cannot be deleted."})
    assert_json(server.request("DELETE", f"{base}/nope", token=tok), 404,
                {"message": "404 Branch Not Found"})
    assert_json(server.request("GET", f"{base}/{enc('../../etc')}", token=tok), 404,
                {"message": "404 Branch Not Found"})
    assert_json(server.request("GET", f"{base}?regex=(", token=tok), 400,
                {"error": "regex is invalid"})
    assert_json(server.request("GET", "/projects/999999/repository/branches", token=tok), 404,
                {"message": "404 Project Not Found"})


def test_delete_merged_branches(gl):
    p = new_project(gl)
    p.branches.create({"branch": "merged-one", "ref": "main"})
    create_file(p, "ahead.txt", branch="ahead", start_branch="main")
    p.delete_merged_branches()
    assert sorted(b.name for b in p.branches.list(get_all=True)) == ["ahead", "main"]


# ---- tags ----------------------------------------------------------------------------------


def test_tags_lightweight_and_annotated(gl):
    p = new_project(gl)
    head = p.branches.get("main").commit["id"]
    light = p.tags.create({"tag_name": "v1.9", "ref": "main"})
    assert light.message == "" and light.target == head and light.created_at is None
    assert light.commit["id"] == head and light.release is None and light.protected is False
    create_file(p, "two.txt")
    annotated = p.tags.create({"tag_name": "v1.10", "ref": "main", "message": "Release 1.10"})
    assert annotated.message == "Release 1.10"
    assert annotated.target != annotated.commit["id"]  # the tag object
    assert annotated.created_at is not None
    got = p.tags.get("v1.10")
    assert got.target == annotated.target and got.commit["title"] == "add two.txt"
    # newest commit first by default; by version numbers; by name
    assert [t.name for t in p.tags.list(get_all=True)] == ["v1.10", "v1.9"]
    assert [t.name for t in p.tags.list(order_by="version", sort="asc", get_all=True)] == [
        "v1.9", "v1.10"]
    assert [t.name for t in p.tags.list(order_by="name", sort="asc", get_all=True)] == [
        "v1.10", "v1.9"]
    assert [t.name for t in p.tags.list(search="^v1.1", get_all=True)] == ["v1.10"]
    p.tags.delete("v1.9")
    with pytest.raises(gitlab.GitlabGetError) as e:
        p.tags.get("v1.9")
    assert e.value.error_message == "404 Tag Not Found"


def test_tag_errors(server, project):
    base = f"/projects/{project.id}/repository/tags"
    tok = server.root_token
    assert_json(server.request("POST", base, token=tok, json={"ref": "main"}), 400,
                {"error": "tag_name is missing"})
    assert_json(server.request("POST", base, token=tok, json={"tag_name": "-v", "ref": "main"}),
                400, {"message": "Tag name invalid"})
    assert_json(server.request("POST", base, token=tok, json={"tag_name": "v", "ref": "nope"}),
                400, {"message": "Target nope is invalid"})
    assert_json(server.request("POST", base, token=tok, json={"tag_name": "dup", "ref": "main"}),
                201)
    assert_json(server.request("POST", base, token=tok, json={"tag_name": "dup", "ref": "main"}),
                409, {"message": "Tag dup already exists"})
    assert_json(server.request("DELETE", f"{base}/nope", token=tok), 404,
                {"message": "404 Tag Not Found"})
    assert_json(server.request("GET", f"{base}?order_by=size", token=tok), 400,
                {"error": "order_by does not have a valid value"})


# ---- tree ----------------------------------------------------------------------------------


def test_tree_paths_recursion_and_pages(server, gl):
    p = new_project(gl)
    p.commits.create({"branch": "main", "commit_message": "files", "actions": [
        {"action": "create", "file_path": f"dir/f{i}.txt", "content": str(i)} for i in range(5)
    ] + [{"action": "create", "file_path": "dir/sub/deep.txt", "content": "d"}]})
    root = p.repository_tree(get_all=True)
    assert [(e["name"], e["type"]) for e in root] == [("README.md", "blob"), ("dir", "tree")]
    assert root[1]["mode"] == "040000" and root[1]["path"] == "dir"
    inside = p.repository_tree(path="dir", get_all=True)
    assert [e["path"] for e in inside] == [f"dir/f{i}.txt" for i in range(5)] + ["dir/sub"]
    everything = p.repository_tree(recursive=True, get_all=True)
    assert "dir/sub/deep.txt" in [e["path"] for e in everything]
    assert len(everything) == 9
    below = p.repository_tree(path="dir", recursive=True, get_all=True)
    assert [e["path"] for e in below] == [e["path"] for e in inside] + ["dir/sub/deep.txt"]
    # offset pages, followed by python-gitlab's iterator through Link headers
    paged = list(p.repository_tree(path="dir", per_page=2, iterator=True))
    assert [e["path"] for e in paged] == [e["path"] for e in inside]
    # keyset pages continue from page_token
    r = server.request("GET", f"/projects/{p.id}/repository/tree",
                       params={"path": "dir", "pagination": "keyset", "per_page": 4},
                       token=server.root_token)
    first = assert_json(r, 200)
    assert len(first) == 4 and 'rel="next"' in r.headers["Link"]
    next_url = r.headers["Link"].split(">")[0].lstrip("<")
    assert "page_token=" + first[-1]["id"] in next_url
    rest = assert_json(server.follow(next_url, token=server.root_token), 200)
    assert [e["path"] for e in first + rest] == [e["path"] for e in inside]
    assert "Link" not in server.follow(next_url, token=server.root_token).headers
    keyset = list(p.repository_tree(path="dir", pagination="keyset", per_page=2, iterator=True))
    assert len(keyset) == 6
    # an older ref, unknown refs and paths
    first_commit = p.commits.list(ref_name="main", get_all=True)[-1].id
    assert [e["name"] for e in p.repository_tree(ref=first_commit, get_all=True)] == ["README.md"]
    for params, in [({"ref": "nope"},), ({"path": "missing"},), ({"path": "README.md"},)]:
        r = server.request("GET", f"/projects/{p.id}/repository/tree", params=params,
                           token=server.root_token)
        assert_json(r, 404, {"message": "404 Tree Not Found"})
    r = server.request("GET", f"/projects/{p.id}/repository/tree", params={"path": "../x"},
                       token=server.root_token)
    assert_json(r, 400, {"error": "path should be a valid file path"})


# ---- files ---------------------------------------------------------------------------------


def test_files_create_get_update_delete(server, gl):
    p = new_project(gl)
    created = create_file(p, "docs/hello.txt", "hello\n")
    assert created.file_path == "docs/hello.txt"
    f = p.files.get(file_path="docs/hello.txt", ref="main")
    assert f.decode() == b"hello\n"
    assert f.file_name == "hello.txt" and f.size == 6 and f.encoding == "base64"
    assert f.content_sha256 == hashlib.sha256(b"hello\n").hexdigest()
    assert f.ref == "main" and f.execute_filemode is False
    head = p.branches.get("main").commit["id"]
    assert f.commit_id == head and f.last_commit_id == head and len(f.blob_id) == 40
    headers = p.files.head("docs/hello.txt", ref="main")
    assert headers["X-Gitlab-Blob-Id"] == f.blob_id
    assert headers["X-Gitlab-Last-Commit-Id"] == head
    assert headers["X-Gitlab-Size"] == "6"
    assert p.files.raw(file_path="docs/hello.txt", ref="main") == b"hello\n"
    assert p.files.raw(file_path="docs/hello.txt") == b"hello\n"  # the default branch

    # update (PUT through ProjectFile.save), with author and executable mode
    f.content = base64.b64encode(b"#!/bin/sh\necho hi\n").decode()
    f.encoding = "base64"
    f.execute_filemode = True
    f.author_name, f.author_email = "Grace", "grace@example.com"
    f.save(branch="main", commit_message="make it a script")
    updated = p.files.get(file_path="docs/hello.txt", ref="main")
    assert updated.decode() == b"#!/bin/sh\necho hi\n" and updated.execute_filemode is True
    commit = p.commits.get(updated.last_commit_id)
    assert commit.title == "make it a script"
    assert (commit.author_name, commit.author_email) == ("Grace", "grace@example.com")
    assert commit.committer_name == "Administrator" or commit.committer_name == gl.user.name
    # the earlier version is still readable at its commit
    assert p.files.raw(file_path="docs/hello.txt", ref=head) == b"hello\n"

    # a new branch from start_branch
    create_file(p, "b.txt", "b", branch="topic", start_branch="main")
    assert p.files.raw(file_path="b.txt", ref="topic") == b"b"
    assert p.branches.get("topic").commit["parent_ids"] == [updated.last_commit_id]

    p.files.delete(file_path="docs/hello.txt", branch="main", commit_message="remove")
    with pytest.raises(gitlab.GitlabGetError) as e:
        p.files.get(file_path="docs/hello.txt", ref="main")
    assert e.value.error_message == "404 File Not Found"


def test_file_errors(server, gl, project):
    tok = server.root_token
    base = f"/projects/{project.id}/repository/files"
    body = {"branch": "main", "content": "x", "commit_message": "m"}
    readme = project.files.get(file_path="README.md", ref="main")
    cases = [
        ("GET", f"{base}/README.md", {}, 400, {"error": "ref is missing"}),
        ("GET", f"{base}/nope.txt?ref=main", {}, 404, {"message": "404 File Not Found"}),
        ("GET", f"{base}/README.md?ref=nope", {}, 404, {"message": "404 Commit Not Found"}),
        ("GET", f"{base}/{enc('../../../etc/passwd')}?ref=main", {}, 400,
         {"error": "file_path should be a valid file path"}),
        ("GET", f"{base}/{enc('.git/config')}/raw", {}, 400,
         {"error": "file_path should be a valid file path"}),
        ("POST", f"{base}/README.md", body, 400,
         {"message": "A file with this name already exists"}),
        ("PUT", f"{base}/nope.txt", body, 400,
         {"message": "A file with this name doesn't exist"}),
        ("DELETE", f"{base}/nope.txt", {"branch": "main", "commit_message": "m"}, 400,
         {"message": "A file with this name doesn't exist"}),
        ("POST", f"{base}/new.txt", {**body, "branch": "a..b"}, 400,
         {"message": "Something went wrong when we tried to create 'a..b' for you: "
                     "Branch name is invalid"}),
        ("POST", f"{base}/new.txt", {**body, "branch": "elsewhere"}, 400,
         {"message": "You can only create or edit files when you are on a branch"}),
        ("POST", f"{base}/new.txt", {**body, "branch": "x", "start_branch": "nope"}, 400,
         {"message": "You can only create or edit files when you are on a branch"}),
        ("POST", f"{base}/new.txt", {"branch": "main", "content": "x"}, 400,
         {"error": "commit_message is missing"}),
        ("POST", f"{base}/new.txt", {"branch": "main", "commit_message": "m"}, 400,
         {"error": "content is missing"}),
        ("POST", f"{base}/new.txt", {**body, "encoding": "rot13"}, 400,
         {"error": "encoding does not have a valid value"}),
        ("POST", f"{base}/new.txt", {**body, "encoding": "base64", "content": "%%%"}, 400,
         {"error": "content is invalid"}),
        ("PUT", f"{base}/README.md", {**body, "last_commit_id": "0" * 40}, 400,
         {"message": "You are attempting to update a file that has changed since you "
                     "started editing it."}),
    ]
    for method, path, data, status, expected in cases:
        assert_json(server.request(method, path, token=tok, json=data), status, expected)
    # the right last_commit_id is accepted
    r = server.request("PUT", f"{base}/README.md", token=tok,
                       json={**body, "last_commit_id": readme.last_commit_id})
    assert_json(r, 200, {"file_path": "README.md", "branch": "main"})


def test_oversize_content_is_refused_before_a_commit(server, gl):
    p = new_project(gl)
    before = p.branches.get("main").commit["id"]
    r = server.request("POST", f"/projects/{p.id}/repository/files/big.bin",
                       token=server.root_token,
                       json={"branch": "main", "commit_message": "big",
                             "content": "x" * (21 * 1024 * 1024)})
    assert_json(r, 413, {"message": "413 Request Entity Too Large"})
    assert p.branches.get("main").commit["id"] == before


# ---- blobs and archives --------------------------------------------------------------------


def test_blobs_and_archives(server, gl):
    p = new_project(gl)
    create_file(p, "src/app.py", "print(1)\n")
    entry = next(e for e in p.repository_tree(path="src", get_all=True))
    blob = p.repository_blob(entry["id"])
    assert blob["size"] == 9 and base64.b64decode(blob["content"]) == b"print(1)\n"
    assert blob["sha"] == entry["id"]
    assert p.repository_raw_blob(entry["id"]) == b"print(1)\n"
    head = p.branches.get("main").commit["id"]
    for sha in ["0" * 40, "nothex", head]:  # a commit id is not a blob
        r = server.request("GET", f"/projects/{p.id}/repository/blobs/{sha}",
                           token=server.root_token)
        assert_json(r, 404, {"message": "404 Blob Not Found"})

    tgz = p.repository_archive()
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        names = tar.getnames()
    prefix = f"{p.path}-main-{head}"
    assert f"{prefix}/README.md" in names and f"{prefix}/src/app.py" in names
    z = p.repository_archive(format="zip", sha=head, path="src")
    with zipfile.ZipFile(io.BytesIO(z)) as archive:
        assert [n for n in archive.namelist() if not n.endswith("/")] == [
            f"{p.path}-{head}-{head}/src/app.py"]
    bz2 = p.repository_archive(format="tar.bz2")
    with tarfile.open(fileobj=io.BytesIO(bz2), mode="r:bz2") as tar:
        assert f"{prefix}/README.md" in tar.getnames()
    r = server.request("GET", f"/projects/{p.id}/repository/archive.zip",
                       token=server.root_token)
    assert r.headers["Content-Disposition"] == f'attachment; filename="{prefix}.zip"'
    for path in ["archive?sha=nope", "archive.rar", "archive?path=missing"]:
        r = server.request("GET", f"/projects/{p.id}/repository/{path}", token=server.root_token)
        assert r.status_code == 404, (path, r.text)


def test_raw_blob_request_limit(server, gl):
    p = new_project(gl)
    sha = p.repository_tree(get_all=True)[0]["id"]
    server.request("PUT", "/application/settings", token=server.root_token,
                   json={"raw_blob_request_limit": 2})
    try:
        path = f"/projects/{p.id}/repository/blobs/{sha}/raw"
        statuses = [server.request("GET", path, token=server.root_token).status_code
                    for _ in range(3)]
        assert statuses[:1] == [200] and 429 in statuses, statuses
        r = server.request("GET", path, token=server.root_token)
        assert r.status_code == 429 and r.text == "Retry later\n"
    finally:
        server.request("PUT", "/application/settings", token=server.root_token,
                       json={"raw_blob_request_limit": 300})


# ---- who may read and write ----------------------------------------------------------------


def test_access_rules(server, gl):
    p = new_project(gl, visibility="private")
    guest, guest_token = make_user(server, "guest")
    dev, dev_token = make_user(server, "dev")
    stranger, stranger_token = make_user(server, "str")
    p.members.create({"user_id": guest.id, "access_level": 10})
    p.members.create({"user_id": dev.id, "access_level": 30})
    base = f"/projects/{p.id}/repository"
    body = {"branch": "main", "content": "x", "commit_message": "m"}
    # no token, a stranger: the private project does not exist for them
    for token in [None, stranger_token]:
        assert_json(server.request("GET", f"{base}/branches", token=token), 404,
                    {"message": "404 Project Not Found"})
    # a guest of a private project may not read the code, nor write
    assert_json(server.request("GET", f"{base}/tree", token=guest_token), 403,
                {"message": "403 Forbidden"})
    assert_json(server.request("POST", f"{base}/files/g.txt", token=guest_token, json=body),
                403, PUSH_REFUSED)
    assert_json(server.request("POST", f"{base}/branches", token=guest_token,
                               json={"branch": "g", "ref": "main"}), 403,
                {"message": "403 Forbidden"})
    # a developer may not write to the protected default branch, but may to another one; a
    # read_api token may only read; no scope for reads
    r = server.request("POST", f"{base}/files/d.txt", token=dev_token, json=body)
    assert_json(r, 403, PUSH_REFUSED)
    r = server.request("POST", f"{base}/files/d.txt", token=dev_token,
                       json={**body, "branch": "dev-work", "start_branch": "main"})
    assert_json(r, 201, {"file_path": "d.txt", "branch": "dev-work"})
    read_only = server.create_token_api(scopes=["read_api"], user_id=dev.id)["token"]
    assert server.request("GET", f"{base}/tree", token=read_only).status_code == 200
    r = server.request("POST", f"{base}/files/e.txt", token=read_only, json=body)
    assert r.status_code == 403 and r.json()["error"] == "insufficient_scope"
    profile_only = server.create_token_api(scopes=["read_user"], user_id=dev.id)["token"]
    r = server.request("GET", f"{base}/tree", token=profile_only)
    assert r.status_code == 403 and r.json()["error"] == "insufficient_scope"
    # archived projects are read-only
    p.archive()
    assert_json(server.request("POST", f"{base}/files/f.txt", token=dev_token, json=body),
                403, PUSH_REFUSED)
    assert_json(server.request("DELETE", f"{base}/branches/main", token=server.root_token), 403,
                {"message": "403 Forbidden"})
    assert server.request("GET", f"{base}/tree", token=dev_token).status_code == 200
    p.unarchive()
    # the repository feature turned off
    p.repository_access_level = "disabled"
    p.save()
    assert_json(server.request("GET", f"{base}/tree", token=dev_token), 403,
                {"message": "403 Forbidden"})


def test_public_project_reads_anonymously(server, gl):
    p = new_project(gl, visibility="public")
    r = server.request("GET", f"/projects/{p.id}/repository/files/README.md/raw")
    assert r.status_code == 200 and r.content.startswith(b"# ")
    assert_json(server.request("POST", f"/projects/{p.id}/repository/branches",
                               json={"branch": "x", "ref": "main"}), 401,
                {"message": "401 Unauthorized"})


def test_another_tenants_projects_are_unknown(server, gl, project):
    host, token = other_tenant(server, "repo")
    for path in ["branches", "tags", "tree", "files/README.md?ref=main", "commits",
                 "archive", "compare?from=main&to=main"]:
        r = server.request("GET", f"/projects/{project.id}/repository/{path}", token=token,
                           host=host)
        assert_json(r, 404, {"message": "404 Project Not Found"})
    r = server.request("POST", f"/projects/{enc(project.path_with_namespace)}/repository/files/x",
                       token=token, host=host,
                       json={"branch": "main", "content": "x", "commit_message": "m"})
    assert_json(r, 404, {"message": "404 Project Not Found"})
