"""Publishing a Hub-layout folder to the Hugging Face Hub: one commit per release (never half-published), tagged."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

KEEP_REMOTE = {".gitattributes"}


@dataclass
class PublishReport:
    repo_id: str
    endpoint: str
    private: bool
    tag: str | None
    files: list[tuple[str, int]]
    deletes: list[str] = field(default_factory=list)
    dry_run: bool = False
    commit_oid: str | None = None
    commit_url: str | None = None

    def plan(self) -> str:
        total = sum(s for _, s in self.files)
        lines = [f"{'[dry run] would publish' if self.dry_run else 'published'} {len(self.files)} files "
                 f"({total / 1e6:.2f} MB) to dataset {self.repo_id} on {self.endpoint} "
                 f"({'private' if self.private else 'public'}), in one commit"
                 + (f", tagged {self.tag}" if self.tag else "")]
        lines += [f"  add    {p}  ({s} bytes)" for p, s in self.files]
        lines += [f"  delete {p}  (not in this release)" for p in self.deletes]
        if self.commit_oid:
            lines.append(f"commit {self.commit_oid}  {self.commit_url}")
        return "\n".join(lines)


def local_files(local_dir: Path) -> list[tuple[str, int]]:
    root = Path(local_dir)
    return sorted((p.relative_to(root).as_posix(), p.stat().st_size) for p in root.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))


def publish_hub(local_dir: Path | str, repo_id: str, token: str | None = None, private: bool = True,
                tag: str | None = None, dry_run: bool = False, endpoint: str | None = None,
                commit_message: str | None = None) -> PublishReport:
    """Create the dataset repo if needed, then add every file of `local_dir` and delete remote files that are not
    in it, in ONE commit on top of the head we read (so a concurrent publish fails instead of interleaving), then
    tag that commit. The Hub validates the card's YAML before accepting the commit, so a bad card changes nothing.
    `token` defaults to $HF_TOKEN; `dry_run` only reports the plan and touches nothing."""
    from huggingface_hub import constants

    local_dir = Path(local_dir)
    if not (local_dir / "README.md").is_file():
        raise FileNotFoundError(f"{local_dir}: no README.md; publish_local() writes the folder first")
    endpoint = endpoint or constants.ENDPOINT
    files = local_files(local_dir)
    report = PublishReport(repo_id, endpoint, private, tag, files, dry_run=dry_run)
    if dry_run:
        return report
    token = token or os.environ.get("HF_TOKEN")
    if not token:
        raise PermissionError("no Hub token: set HF_TOKEN (or pass token=); use --dry-run to see the plan")

    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    info = api.dataset_info(repo_id)
    if private and info.private is False:
        # create_repo leaves an existing repo's visibility alone: never push a private release into a public repo.
        raise PermissionError(f"{repo_id} exists and is public; pass private=False (--public) to publish there")
    remote = set(api.list_repo_files(repo_id, repo_type="dataset", revision=info.sha))
    local = {p for p, _ in files}
    report.deletes = sorted(remote - local - KEEP_REMOTE)
    ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(local_dir / p)) for p in sorted(local)]
    ops += [CommitOperationDelete(path_in_repo=p) for p in report.deletes]
    ci = api.create_commit(repo_id, operations=ops, repo_type="dataset", parent_commit=info.sha,
                           commit_message=commit_message or f"opforge release {tag or ''}".strip())
    report.commit_oid, report.commit_url = ci.oid, ci.commit_url
    if tag:
        api.create_tag(repo_id, tag=tag, revision=ci.oid, repo_type="dataset",
                       tag_message=commit_message or f"opforge release {tag}")
    return report
