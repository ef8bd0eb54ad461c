"""Publishing against a local stand-in of the hub (loopback only, no network)."""

from __future__ import annotations

import json

import pytest
from fakehub import FakeHub

from vrforge.cli import main

TOKEN = "hf_vrforge_test_token_never_printed"


@pytest.fixture
def hub(monkeypatch):
    with FakeHub() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        import huggingface_hub.constants as constants

        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        yield server


def test_dry_run_lists_every_file_and_contacts_nobody(audited_copy, hub, capsys):
    assert main(["publish", str(audited_copy), "--repo-id", "org/tacit-mini", "--dry-run"]) == 0
    out = capsys.readouterr().out
    manifest = json.loads((audited_copy / "manifest.json").read_text())
    for name in manifest["files"]:
        assert name in out
    assert "manifest.json" in out and "audit.json" in out and "tag v0.0.1" in out
    assert hub.requests == []


def test_publish_uploads_every_byte_and_tags_the_version(audited_copy, hub, capsys):
    assert main(["publish", str(audited_copy), "--repo-id", "org/tacit-mini"]) == 0
    repo = hub.repos["org/tacit-mini"]
    local = {p.relative_to(audited_copy).as_posix(): p.read_bytes() for p in audited_copy.rglob("*") if p.is_file()}
    assert repo["files"] == local
    assert list(repo["tags"]) == ["v0.0.1"] and repo["tags"]["v0.0.1"] == repo["commits"][-1]
    captured = capsys.readouterr()
    assert TOKEN not in captured.out + captured.err
    # The token was read the standard way (HF_TOKEN) and sent, never shown.
    assert any(headers.get("authorization") == f"Bearer {TOKEN}" for _, _, headers in hub.requests)
    # The same version again: the tag exists, nothing is uploaded.
    commits = len(repo["commits"])
    assert main(["publish", str(audited_copy), "--repo-id", "org/tacit-mini"]) == 2
    assert "already has tag v0.0.1" in capsys.readouterr().err
    assert len(repo["commits"]) == commits


def test_unaudited_or_modified_folders_are_refused(audited_copy, hub, capsys):
    (audited_copy / "gallery" / "maze.png").write_bytes(b"edited")
    assert main(["publish", str(audited_copy), "--repo-id", "org/x"]) == 2
    assert "gallery/maze.png does not match the manifest" in capsys.readouterr().err
    (audited_copy / "audit.json").unlink()
    assert main(["publish", str(audited_copy), "--repo-id", "org/x"]) == 2
    assert "has not been audited" in capsys.readouterr().err
    assert main(["publish", str(audited_copy), "--repo-id", "not-a-repo-id"]) == 2
    assert hub.requests == []
