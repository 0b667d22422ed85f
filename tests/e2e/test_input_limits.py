"""Limits on what one request may carry: description lengths (GitLab's model validations),
page numbers that would overflow an offset, and avatars whose content is not the image their
name says."""

import pytest

from conftest import assert_json

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
AVATAR_FORMATS = ("file format is not supported. Please try one of the following supported "
                  "formats: png, jpg, jpeg, gif, bmp, tiff, ico, webp")


def too_long(field: str, maximum: int) -> dict:
    return {"message": {field: [f"is too long (maximum is {maximum} characters)"]}}


@pytest.fixture(scope="module")
def project(server):
    r = server.request("POST", "/projects", token=server.root_token, json={"name": "Limited"})
    return assert_json(r, 201)


def test_project_description_is_capped_at_2000(server, project):
    r = server.request("POST", "/projects", token=server.root_token,
                       json={"name": "Verbose", "description": "x" * 2001})
    assert_json(r, 400, too_long("description", 2000))
    assert server.request("GET", "/projects/root%2Fverbose", token=server.root_token).status_code == 404
    r = server.request("PUT", f"/projects/{project['id']}", token=server.root_token,
                       json={"description": "é" * 2001})
    assert_json(r, 400, too_long("description", 2000))
    r = server.request("PUT", f"/projects/{project['id']}", token=server.root_token,
                       json={"description": "é" * 2000})
    assert assert_json(r, 200)["description"] == "é" * 2000


def test_group_description_is_capped_at_255(server):
    r = server.request("POST", "/groups", token=server.root_token,
                       json={"name": "Wordy", "path": "wordy", "description": "x" * 256})
    assert_json(r, 400, too_long("description", 255))
    r = server.request("POST", "/groups", token=server.root_token,
                       json={"name": "Wordy", "path": "wordy", "description": "x" * 255})
    group = assert_json(r, 201)
    r = server.request("PUT", f"/groups/{group['id']}", token=server.root_token,
                       json={"description": "y" * 256})
    assert_json(r, 400, too_long("description", 255))
    got = assert_json(server.request("GET", f"/groups/{group['id']}", token=server.root_token), 200)
    assert got["description"] == "x" * 255


def test_label_and_milestone_descriptions_are_capped(server, project):
    base = f"/projects/{project['id']}"
    long = "z" * 1_000_001
    r = server.request("POST", f"{base}/labels", token=server.root_token,
                       json={"name": "big", "color": "#ff0000", "description": long})
    assert_json(r, 400, too_long("description", 1_000_000))
    label = assert_json(server.request("POST", f"{base}/labels", token=server.root_token,
                                       json={"name": "big", "color": "#ff0000"}), 201)
    r = server.request("PUT", f"{base}/labels/{label['id']}", token=server.root_token,
                       json={"description": long})
    assert_json(r, 400, too_long("description", 1_000_000))
    r = server.request("POST", f"{base}/milestones", token=server.root_token,
                       json={"title": "big", "description": long})
    assert_json(r, 400, too_long("description", 1_000_000))
    milestone = assert_json(server.request("POST", f"{base}/milestones", token=server.root_token,
                                           json={"title": "big"}), 201)
    r = server.request("PUT", f"{base}/milestones/{milestone['id']}", token=server.root_token,
                       json={"description": long})
    assert_json(r, 400, too_long("description", 1_000_000))


@pytest.mark.parametrize("path", ["/users", "/groups", "/personal_access_tokens"])
def test_huge_page_numbers_answer_an_empty_page(server, path):
    r = server.request("GET", path, token=server.root_token,
                       params={"page": 2**63 - 1, "per_page": 100})
    assert assert_json(r, 200) == []
    assert r.headers["X-Page"] == str(2**63 - 1)
    assert r.headers["X-Next-Page"] == ""


def test_huge_project_page_is_beyond_the_offset_cap(server):
    r = server.request("GET", "/projects", token=server.root_token,
                       params={"page": 2**63 - 1, "per_page": 100})
    assert r.status_code == 405, r.text
    assert "maximum allowed offset" in r.json()["error"]


@pytest.mark.parametrize("name,content", [
    ("face.png", b"<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>"),
    ("face.png", b"<html><script>alert(1)</script></html>"),
    ("face.jpg", PNG),
    ("face.gif", b"GIF8"),
])
def test_avatars_are_checked_by_content(server, project, name, content):
    r = server.request("PUT", f"/projects/{project['id']}", token=server.root_token,
                       files={"avatar": (name, content)})
    assert_json(r, 400, {"message": {"avatar": [AVATAR_FORMATS]}})
    r = server.request("PUT", "/users/1", token=server.root_token,
                       files={"avatar": (name, content)})
    assert r.status_code == 400, r.text


def test_real_images_are_accepted_as_avatars(server, project):
    r = server.request("PUT", f"/projects/{project['id']}", token=server.root_token,
                       files={"avatar": ("face.png", PNG)})
    assert assert_json(r, 200)["avatar_url"].endswith("/face.png")
