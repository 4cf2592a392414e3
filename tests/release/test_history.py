"""Release history: dataset tags and the previous release a build is checked against."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from regionbench import release
from regionbench.client import history

GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t.invalid"}  # fmt: skip


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, env={"PATH": "/usr/bin:/bin", **GIT}
    )


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README").write_text("x\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "x")
    for tag in ("demo-v1.0.0", "demo-v1.10.0", "demo-v1.2.0", "demo2-v9.0.0", "demo-vbad", "v3.0.0"):
        git(repo, "tag", tag)
    return repo


def test_tags_of_one_dataset_in_version_order(repo: Path, tmp_path: Path) -> None:
    assert history.dataset_tags(repo, "demo") == [
        ((1, 0, 0), "demo-v1.0.0"), ((1, 2, 0), "demo-v1.2.0"), ((1, 10, 0), "demo-v1.10.0"),
    ]  # fmt: skip
    assert history.dataset_tags(repo, "demo2") == [((9, 0, 0), "demo2-v9.0.0")]
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    assert history.dataset_tags(outside, "demo") == []
    assert history.tag_name("demo", "1.2.0") == "demo-v1.2.0"


def test_previous_is_named_or_found_or_refused_in_one_line(repo: Path, tmp_path: Path) -> None:
    assert history.previous_release("none", "demo", "1.0.0", repo) is None
    folder = tmp_path / "v1.0.0"
    folder.mkdir()
    (folder / "manifest.json").write_text("{}")
    assert history.previous_release(str(folder), "demo", "2.0.0", repo) == folder
    for spec, version, expected in [
        ("demo-v7.0.0", "8.0.0", "neither a release folder nor a tag demo-v<X.Y.Z>"),
        (None, "1.0.0", "no tag demo-v<X.Y.Z> below 1.0.0"),
        (None, "0.1.0", "the first release sets release.previous: none"),
    ]:
        with pytest.raises(release.ReleaseError) as refused:
            history.previous_release(spec, "demo", version, repo)
        assert expected in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(release.ReleaseError, match="no tag other-v"):
        history.previous_release(None, "other", "1.0.0", repo)
