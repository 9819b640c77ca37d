"""Publishing a Hub-layout folder to the Hugging Face Hub: one commit per release (never half-published), tagged.

Tag and commit are consistent: the tag is checked before anything is written (an existing tag on other content
refuses the release; on the same content the release is already published), and if tagging fails after the
commit, a second commit restores the previous head, so a failure leaves no live, untagged release. The token is
`huggingface_hub.get_token()` ($HF_TOKEN, else the one `hf auth login` saved); it is never stored.
"""

from __future__ import annotations

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
    already_published: bool = False  # the tag already named a commit with exactly these files

    def plan(self) -> str:
        total = sum(s for _, s in self.files)
        lines = [
            f"{'[dry run] would publish' if self.dry_run else 'published'} {len(self.files)} files "
            f"({total / 1e6:.2f} MB) to dataset {self.repo_id} on {self.endpoint} "
            f"({'private' if self.private else 'public'}), in one commit"
            + (f", tagged {self.tag}" if self.tag else "")
        ]
        lines += [f"  add    {p}  ({s} bytes)" for p, s in self.files]
        lines += [f"  delete {p}  (not in this release)" for p in self.deletes]
        if self.already_published:
            lines[0] = f"already published: tag {self.tag} of {self.repo_id} holds exactly these files"
        if self.commit_oid:
            lines.append(f"commit {self.commit_oid}  {self.commit_url or ''}".rstrip())
        return "\n".join(lines)


def local_files(local_dir: Path) -> list[tuple[str, int]]:
    root = Path(local_dir)
    return sorted(
        (p.relative_to(root).as_posix(), p.stat().st_size)
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


class ReleaseConflict(RuntimeError):
    """The tag exists on other content, or tagging failed (then the commit was rolled back)."""


def _blob_oid(path: Path) -> str:
    import hashlib

    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _remote_oids(api, repo_id: str, revision: str) -> dict[str, str]:
    return {
        f.path: f.blob_id
        for f in api.list_repo_tree(repo_id, repo_type="dataset", revision=revision, recursive=True)
        if hasattr(f, "blob_id")
    }


def publish_hub(
    local_dir: Path | str,
    repo_id: str,
    token: str | None = None,
    private: bool = True,
    tag: str | None = None,
    dry_run: bool = False,
    endpoint: str | None = None,
    commit_message: str | None = None,
) -> PublishReport:
    """Create the dataset repo if needed, then add every file of `local_dir` and delete remote files that are not
    in it, in ONE commit on top of the head we read (so a concurrent publish fails instead of interleaving), then
    tag that commit. The Hub validates the card's YAML before accepting the commit, so a bad card changes nothing.
    `token` defaults to `huggingface_hub.get_token()`; `dry_run` only reports the plan and touches nothing."""
    from huggingface_hub import constants, get_token

    local_dir = Path(local_dir)
    if not (local_dir / "README.md").is_file():
        raise FileNotFoundError(f"{local_dir}: no README.md; publish_local() writes the folder first")
    endpoint = endpoint or constants.ENDPOINT
    files = local_files(local_dir)
    report = PublishReport(repo_id, endpoint, private, tag, files, dry_run=dry_run)
    if dry_run:
        return report
    token = token or get_token()
    if not token:
        raise PermissionError("no Hub token: run `hf auth login` or set HF_TOKEN; use --dry-run to see the plan")

    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    info = api.dataset_info(repo_id)
    if private and info.private is False:
        # create_repo leaves an existing repo's visibility alone: never push a private release into a public repo.
        raise PermissionError(f"{repo_id} exists and is public; pass private=False (--public) to publish there")
    local = {p for p, _ in files}
    if tag:  # checked before anything is written
        tags = {t.name: t.target_commit for t in api.list_repo_refs(repo_id, repo_type="dataset").tags}
        if tag in tags:
            remote = _remote_oids(api, repo_id, tags[tag])
            same = {p: o for p, o in remote.items() if p not in KEEP_REMOTE} == {
                p: _blob_oid(local_dir / p) for p in local
            }
            if not same:
                raise ReleaseConflict(
                    f"tag {tag} of {repo_id} already names commit {tags[tag]} with other "
                    "content; publish under a new tag"
                )
            report.already_published, report.commit_oid = True, tags[tag]
            return report
    remote_files = set(api.list_repo_files(repo_id, repo_type="dataset", revision=info.sha))
    report.deletes = sorted(remote_files - local - KEEP_REMOTE)
    ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(local_dir / p)) for p in sorted(local)]
    ops += [CommitOperationDelete(path_in_repo=p) for p in report.deletes]
    ci = api.create_commit(
        repo_id,
        operations=ops,
        repo_type="dataset",
        parent_commit=info.sha,
        commit_message=commit_message or f"opforge release {tag or ''}".strip(),
    )
    report.commit_oid, report.commit_url = ci.oid, ci.commit_url
    if tag:
        try:
            api.create_tag(
                repo_id,
                tag=tag,
                revision=ci.oid,
                repo_type="dataset",
                tag_message=commit_message or f"opforge release {tag}",
            )
        except Exception as e:
            restored = _roll_back(api, repo_id, info.sha, ci.oid, local, remote_files)
            raise ReleaseConflict(
                f"tagging {repo_id}@{ci.oid} as {tag} failed ({type(e).__name__}: {e}); the "
                f"release was rolled back (commit {restored} restores {info.sha})"
            ) from e
    return report


def _roll_back(api, repo_id: str, parent: str | None, ours: str, local: set[str], before: set[str]) -> str:
    """One commit on top of `ours` that gives back the files of `parent`: what we added goes, what we changed or
    deleted comes back with its old bytes."""
    import tempfile

    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    ops: list = [CommitOperationDelete(path_in_repo=p) for p in sorted(local - before)]
    with tempfile.TemporaryDirectory() as tmp:
        for p in sorted(before - KEEP_REMOTE):
            old = api.hf_hub_download(repo_id, p, repo_type="dataset", revision=parent, local_dir=tmp)
            ops.append(CommitOperationAdd(path_in_repo=p, path_or_fileobj=old))
        ci = api.create_commit(
            repo_id,
            operations=ops,
            repo_type="dataset",
            parent_commit=ours,
            commit_message=f"opforge: roll back untagged release {ours[:12]}",
        )
    return ci.oid
