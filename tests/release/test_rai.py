"""A release for publication is refused, in one line and before any job, while a statement it
needs (release.statements) is unset. The RAI fields themselves: tests/workflow/test_workflow_rai.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import PROJECT, readme_blocks, regionbench_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench.pipeline.config import ConfigError, load_layers, validate
from regionbench.release import rai

SCHEMA = PROJECT / "schemas" / "config.schema.yaml"


def statement_keys() -> list[str]:
    """The keys of the config's release.statements."""
    schema = yaml.safe_load(SCHEMA.read_text())
    return sorted(schema["properties"]["release"]["properties"]["statements"]["properties"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    statements=st.dictionaries(
        st.sampled_from(sorted(statement_keys())),
        st.none() | st.text(st.characters(codec="utf-8"), min_size=1, max_size=20),
    ),
    by_flag=st.booleans(),
)
def test_a_publication_without_a_required_statement_is_one_line(
    tmp_path: Path, statements: dict, by_flag: bool
) -> None:
    """Any set of statements: a publication is refused exactly while a required one is unset
    (or only blank), in one line naming the key and what to say."""
    config = tmp_path / "publish.yaml"
    release = {"statements": statements} | ({} if by_flag else {"publish": True})
    config.write_text(yaml.safe_dump({"release": release}, allow_unicode=True))
    cfg, layers = load_layers(PROJECT, [config])
    if by_flag:
        layers.append(("--publish", {"release": {"publish": True}}))
        cfg["release"]["publish"] = True
    missing = [k for k in rai.REQUIRED_TO_PUBLISH if not (statements.get(k) or "").strip()]
    if not missing:
        validate(cfg, SCHEMA, layers)
        return
    with pytest.raises(ConfigError) as info:
        validate(cfg, SCHEMA, layers)
    message = str(info.value)
    assert "\n" not in message and f"release.statements.{missing[0]} is unset" in message
    assert message.startswith(f"{'--publish' if by_flag else config}: release.publish: a release for publication")


def test_build_publish_is_refused_before_any_job(tmp_path: Path) -> None:
    """As docs/publishing.md shows it (its console block), with exit 2; said, it builds."""
    done = regionbench_cli("build", "--project-dir", str(PROJECT), "--publish", "-n")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert re.fullmatch(
        r"regionbench: error: --publish: release.publish: a release for publication, but "
        r"release.statements.personal_sensitive_information is unset; say what personal .*\n",
        done.stderr,
    )
    me = "tests/release/test_rai.py::test_build_publish_is_refused_before_any_job"
    (shown,) = [b for b in readme_blocks() if b.by == me]
    assert shown.body.splitlines() == ["$ regionbench build --publish", done.stderr.rstrip("\n")]
    said = tmp_path / "said.yaml"
    said.write_text("release: {statements: {personal_sensitive_information: 'none: generated images'}}\n")
    done = regionbench_cli("build", "--project-dir", str(PROJECT), "--publish", "--configfile", str(said), "-n")
    assert done.returncode == 0, done.stderr
