"""Publishing a release: upload an audited, unmodified dataset folder and tag its version.

The token comes the standard way (``HF_TOKEN`` or ``huggingface-cli login``, read by
huggingface_hub itself) and is never printed. ``HF_ENDPOINT`` points the client elsewhere.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError

from vrforge.fileio import sha256_file
from vrforge.schemas.layout import AUDIT_FILE, BOOKKEEPING_FILES, MANIFEST_FILE

LARGE_FOLDER_FILES = 10_000  # above this, upload_large_folder (resumable, many commits)


class PublishError(RuntimeError):
    """Publishing refused or failed; one line for the user."""


@dataclass(frozen=True)
class UploadPlan:
    repo_id: str
    tag: str
    files: list[tuple[str, int]]  # (path in repo, bytes)

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)


def plan_upload(folder: Path, repo_id: str) -> UploadPlan:
    """Refuses unless the folder is audited and every file still matches its manifest."""
    folder = Path(folder)
    manifest_path, audit_path = folder / MANIFEST_FILE, folder / AUDIT_FILE
    if not manifest_path.exists():
        raise PublishError(f"{folder} has no {MANIFEST_FILE} (not a built dataset folder)")
    if not audit_path.exists():
        raise PublishError(f"{folder} has not been audited: run `vrforge audit {folder}` first")
    audit = json.loads(audit_path.read_text(encoding="utf-8"))
    if not audit.get("passed"):
        raise PublishError(f"{folder} failed its audit (see {audit_path}); refusing to publish")
    if audit.get("manifest_sha256") != sha256_file(manifest_path):
        raise PublishError("manifest.json changed since the audit; run `vrforge audit` again")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    listed = manifest["files"]
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    extra = sorted(present - set(listed) - set(BOOKKEEPING_FILES))
    if extra:
        raise PublishError(f"file not in the manifest: {extra[0]} (the folder was modified after the build)")
    for name, entry in sorted(listed.items()):
        if name not in present or sha256_file(folder / name) != entry["sha256"]:
            raise PublishError(f"{name} does not match the manifest (the folder was modified after the build)")
    files = [(name, (folder / name).stat().st_size) for name in sorted(present)]
    return UploadPlan(repo_id=repo_id, tag=f"v{manifest['version']}", files=files)


def publish(folder: Path, plan: UploadPlan, private: bool = False) -> str:
    """Upload and tag; returns the commit URL. Refuses to move an existing version tag."""
    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)
    try:
        api.create_repo(plan.repo_id, repo_type="dataset", private=private, exist_ok=True)
        tags = {ref.name for ref in api.list_repo_refs(plan.repo_id, repo_type="dataset").tags}
        if plan.tag in tags:
            raise PublishError(f"{plan.repo_id} already has tag {plan.tag}; bump the recipe version to publish again")
        message = f"vrforge release {plan.tag}"
        if len(plan.files) > LARGE_FOLDER_FILES and hasattr(api, "upload_large_folder"):  # absent from hub 2.x
            api.upload_large_folder(repo_id=plan.repo_id, folder_path=folder, repo_type="dataset")
            revision = api.dataset_info(plan.repo_id).sha
            url = f"{api.endpoint}/datasets/{plan.repo_id}/tree/{revision}"
        else:
            commit = api.upload_folder(repo_id=plan.repo_id, folder_path=folder, repo_type="dataset",
                                       commit_message=message, allow_patterns=[name for name, _ in plan.files])
            revision, url = commit.oid, commit.commit_url
        api.create_tag(plan.repo_id, tag=plan.tag, tag_message=message, revision=revision, repo_type="dataset")
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise PublishError(f"the hub refused the request (HTTP {status}): {str(exc).splitlines()[0]}") from None
    return url
