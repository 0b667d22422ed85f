"""Project labels and milestones APIs end to end with python-gitlab, with their bad inputs."""

from __future__ import annotations

import secrets

import pytest

from conftest import assert_json, make_user




@pytest.fixture(scope="module")
def ctx(server):
    owner, owner_token = make_user(server, "owner")
    guest, guest_token = make_user(server, "guest")
    outsider, outsider_token = make_user(server, "outsider")
    p = server.gitlab(owner_token).projects.create({"name": "lm-" + secrets.token_hex(3)})
    p.members.create({"user_id": guest.id, "access_level": 10})
    return {"project": p, "owner": owner_token, "guest": guest_token, "outsider": outsider_token}


def test_labels_crud(server, ctx):
    p = server.gitlab(ctx["owner"]).projects.get(ctx["project"].id)
    label = p.labels.create({"name": "Critical", "color": "#FF0000", "description": "fire", "priority": 1})
    assert (label.name, label.color, label.description, label.priority) == ("Critical", "#FF0000", "fire", 1)
    assert label.text_color == "#FFFFFF"
    light = p.labels.create({"name": "Light", "color": "#eeeeee"})
    assert light.text_color == "#333333"
    assert {lbl.name for lbl in p.labels.list(get_all=True)} >= {"Critical", "Light"}
    assert p.labels.get("critical").id == label.id
    assert p.labels.get(label.id).name == "Critical"
    label.new_name = "Blocker"
    label.color = "#00FF00"
    label.save()
    got = p.labels.get(label.id)
    assert (got.name, got.color) == ("Blocker", "#00FF00")
    issue = p.issues.create({"title": "labelled", "labels": "blocker"})
    assert issue.labels == ["Blocker"]
    counted = server.request("GET", f"/projects/{p.id}/labels/{label.id}", token=ctx["owner"],
                             params={"with_counts": "true"}).json()
    assert counted["open_issues_count"] == 1 and counted["closed_issues_count"] == 0
    searched = server.request("GET", f"/projects/{p.id}/labels", token=ctx["owner"],
                              params={"search": "blo"}).json()
    assert [lbl["name"] for lbl in searched] == ["Blocker"]
    p.labels.delete(light.id)
    assert "Light" not in {lbl.name for lbl in p.labels.list(get_all=True)}
    # deleting a label takes it off its issues
    p.labels.delete(label.id)
    assert p.issues.get(issue.iid).labels == []


def test_label_bad_inputs(server, ctx):
    url = f"/projects/{ctx['project'].id}/labels"
    token = ctx["owner"]
    assert_json(server.request("POST", url, token=token, json={"color": "#fff"}), 400,
                {"error": "name is missing"})
    assert_json(server.request("POST", url, token=token, json={"name": "x"}), 400,
                {"error": "color is missing"})
    assert_json(server.request("POST", url, token=token, json={"name": "x", "color": "nocolor"}), 400,
                {"message": {"color": ["must be a valid color code"]}})
    assert_json(server.request("POST", url, token=token, json={"name": "Dup", "color": "#fff"}), 201)
    assert_json(server.request("POST", url, token=token, json={"name": "dup", "color": "#fff"}), 409,
                {"message": "Label already exists"})
    assert_json(server.request("GET", f"{url}/999999", token=token), 404, {"message": "404 Label Not Found"})
    assert_json(server.request("PUT", f"{url}/dup", token=token, json={}), 400)
    assert_json(server.request("POST", url, token=ctx["guest"], json={"name": "g", "color": "#fff"}), 403)
    assert_json(server.request("GET", url, token=ctx["outsider"]), 404, {"message": "404 Project Not Found"})
    assert_json(server.request("POST", url, json={"name": "g", "color": "#fff"}), 401)


def test_milestones_crud_and_filters(server, ctx):
    p = server.gitlab(ctx["owner"]).projects.get(ctx["project"].id)
    a = p.milestones.create({"title": "Alpha", "description": "first", "due_date": "2020-01-01",
                             "start_date": "2019-12-01"})
    b = p.milestones.create({"title": "Beta"})
    assert (a.title, a.state, a.due_date, a.start_date) == ("Alpha", "active", "2020-01-01", "2019-12-01")
    assert a.iid + 1 == b.iid and a.expired is True and b.expired is False
    assert a.web_url.endswith(f"/-/milestones/{a.iid}")
    a.state_event = "close"
    a.save()
    assert p.milestones.get(a.id).state == "closed"
    assert [m.title for m in p.milestones.list(state="closed", get_all=True)] == ["Alpha"]
    assert [m.title for m in p.milestones.list(state="active", get_all=True)] == ["Beta"]
    assert [m.title for m in p.milestones.list(iids=[b.iid], get_all=True)] == ["Beta"]
    assert [m.title for m in p.milestones.list(title="Alpha", get_all=True)] == ["Alpha"]
    assert [m.title for m in p.milestones.list(search="alp", get_all=True)] == ["Alpha"]
    a.state_event = "activate"
    a.title = "Alpha 2"
    a.save()
    got = p.milestones.get(a.id)
    assert (got.state, got.title) == ("active", "Alpha 2")
    issue = p.issues.create({"title": "m", "milestone_id": b.id})
    found = p.issues.list(milestone="Beta", get_all=True)
    assert [i.iid for i in found] == [issue.iid]


def test_milestone_bad_inputs(server, ctx):
    url = f"/projects/{ctx['project'].id}/milestones"
    token = ctx["owner"]
    assert_json(server.request("POST", url, token=token, json={}), 400, {"error": "title is missing"})
    assert_json(server.request("POST", url, token=token, json={"title": "Dated", "due_date": "soon"}), 400,
                {"error": "due_date is invalid"})
    assert_json(server.request("POST", url, token=token, json={"title": "Same"}), 201)
    assert_json(server.request("POST", url, token=token, json={"title": "Same"}), 400,
                {"message": {"title": ["has already been taken"]}})
    assert_json(server.request("GET", f"{url}/999999", token=token), 404, {"message": "404 Milestone Not Found"})
    assert_json(server.request("GET", url, token=token, params={"state": "open"}), 400,
                {"error": "state does not have a valid value"})
    assert_json(server.request("POST", url, token=ctx["guest"], json={"title": "g"}), 403)
    assert_json(server.request("GET", url, token=ctx["outsider"]), 404, {"message": "404 Project Not Found"})
