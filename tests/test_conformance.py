"""The scoring conformance corpus (conformance/): every case's figures as the reference tools gave
them, our engine's within the family's tolerance, each reference's its own recorded output; the
corpus is what its script makes, and docs/scoring.md's table is the corpus'."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import PROJECT
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench import cli, conformance

CORPUS = PROJECT / "conformance"


@pytest.fixture(scope="module")
def corpus() -> list[conformance.Case]:
    return conformance.cases(CORPUS)


def test_the_corpus_covers_every_family_with_80_cases_or_more(corpus: list[conformance.Case]) -> None:
    assert len(corpus) >= 80
    assert {c.family for c in corpus} == set(conformance.FAMILIES)
    names = {c.name for c in corpus}
    for needed in ("instances/segm/ties-across-images", "instances/bbox/crowds", "instances/boundary/polygons",
                   "instances/segm/absent-categories", "instances/segm/empty-run", "tide/segm/ties-across-images",
                   "tide/bbox/only-dupe", "lvis/segm/federated-2-cap-4", "panoptic/void", "panoptic/an-empty-image",
                   "semantic/absent-class-predicted", "semantic/16-bit", "semantic/cityscapes/train-ids",
                   "segments/bsds500-test-1", "segments/zero-based", "segments/all-distinct", "segments/one-segment",
                   "boundaries/bsds500-test-4", "boundaries/soft-on-thresholds", "boundaries/no-boundary",
                   "concepts/segm/negative-no-prediction", "concepts/bbox/negative-a-prediction",
                   "concepts/segm/all-under-0.5", "concepts/bbox/exhaustive-in-one-file",
                   "concepts/segm/an-annotator-s-empty-pair", "concepts/bbox/crowd-truth"):  # fmt: skip
        assert needed in names, needed


def test_our_engine_conforms_on_every_case(corpus: list[conformance.Case]) -> None:
    checked = 0
    for case in corpus:
        rows = conformance.check(case, "regionbench")
        wrong = [r for r in rows if not r.ok]
        assert not wrong, (case.name, wrong[:3])
        checked += bool(rows)
    assert checked >= len(corpus) - 4  # those on which every reference failed have nothing to match


def test_the_written_out_bsds_rule_gives_the_benchmark_s_printed_figures(corpus: list[conformance.Case]) -> None:
    """The region rule make.py writes out from BSDS500's code gives its printed outputs on its own
    data: the rule the scenarios are checked against is the benchmark's."""
    published = [c for c in corpus if conformance.PUBLISHED in c.outputs and "bsds-rule" in c.outputs]
    assert {c.name for c in published} == {"segments/bsds500-test-1", "segments/bsds500-test-4"}
    assert not [d for d in conformance.disagreements(published)]


@pytest.mark.parametrize(
    "engine", ["pycocotools", "faster-coco-eval", "lvis", "tidecv", "panopticapi", "cityscapesscripts", "sam3"]
)
def test_each_reference_gives_its_recorded_output(corpus: list[conformance.Case], engine: str) -> None:
    mine = [c for c in corpus if conformance.handles(engine, c)]
    assert mine
    for case in mine:
        wrong = [r for r in conformance.check(case, engine) if not r.ok]
        assert not wrong, (case.name, wrong[:3])


def test_the_corpus_is_what_its_script_makes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(CORPUS / "make.py"), "--out", str(tmp_path / "cases")],
        capture_output=True, text=True, check=False, cwd=PROJECT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = sorted(p.relative_to(tmp_path / "cases") for p in (tmp_path / "cases").rglob("*.json"))
    kept = sorted(p.relative_to(CORPUS / "cases") for p in (CORPUS / "cases").rglob("*.json"))
    assert made == kept
    for name in made:
        assert (tmp_path / "cases" / name).read_bytes() == (CORPUS / "cases" / name).read_bytes(), name


def test_the_manual_s_table_is_the_corpus_s(corpus: list[conformance.Case]) -> None:
    text = (PROJECT / "docs" / "scoring.md").read_text(encoding="utf-8")
    assert conformance.tolerance_table(corpus) in text


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["conformance", "--corpus", str(CORPUS), *argv])
    return code, out.getvalue()


def test_the_command_passes_for_ours_and_says_where_an_engine_differs(tmp_path: Path) -> None:
    code, text = run_cli("--engine", "regionbench", "--family", "lvis", "--json")
    rows = json.loads(text)
    assert code == 0 and rows and all(r["ok"] and r["engine"] == "regionbench" for r in rows)
    assert {r["case"].split("/")[0] for r in rows} == {"lvis"}
    # an engine that is a command: one that halves every figure differs on every case with figures
    script = tmp_path / "halved.py"
    script.write_text(
        "import json, sys\n"
        "from regionbench import conformance\n"
        "from pathlib import Path\n"
        "truth, run, out = sys.argv[1:]\n"
        "case = conformance.Case('x', 'instances', '', {}, json.loads(Path(truth).read_text()),"
        " json.loads(Path(run).read_text()), '', {})\n"
        "Path(out).write_text(json.dumps([v / 2 for v in conformance.ours(case).values()]))\n"
    )
    command = f"{sys.executable} {script} {{truth}} {{run}} {{out}}"
    code, text = run_cli("--engine", "regionbench", "--case", "instances/segm/mixed-*", "--command", command)
    assert code == 1
    assert "command           DIFFERS  AP: " in text and "regionbench: " in text.splitlines()[-2]
    assert text.splitlines()[-1].startswith("command: ") and "differ: " in text.splitlines()[-1]


def test_an_unknown_engine_is_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.main(["conformance", "--corpus", str(CORPUS), "--engine", "hotcoco"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("regionbench: error: --engine hotcoco: no such engine") and "\n" not in err
    assert cli.main(["conformance", "--corpus", str(PROJECT / "docs")]) == 2
    assert "no conformance corpus here" in capsys.readouterr().err
    monkeypatch.chdir("/")  # outside a checkout (an installed wheel): where the corpus is
    assert cli.main(["conformance"]) == 2
    assert "run inside the checkout (its conformance/) or give --corpus DIR" in capsys.readouterr().err


def test_the_manual_s_example_runs() -> None:
    """docs/scoring.md's conformance example, in the checkout: its output as the page shows it."""
    from conftest import readme_blocks

    block = next(b for b in readme_blocks() if b.by == "tests/test_conformance.py::test_the_manual_s_example_runs")
    command, *expected = block.body.splitlines()
    words = command.removeprefix("$ .venv/bin/regionbench ").split()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*words, "--corpus", str(CORPUS)]) == 0
    got = out.getvalue().splitlines()
    assert got[0] == expected[0] and got[-1] == expected[-1] and expected[1] == "...", got


@settings(max_examples=12, deadline=None)
@given(
    damage=st.sampled_from(["family", "base64", "not-json", "deep", "twice"]),
    family=st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12).filter(
        lambda f: f not in conformance.FAMILIES
    ),
)
def test_a_damaged_corpus_is_an_input_error_naming_the_file(damage: str, family: str) -> None:
    """A case of an unknown family (once dropped unseen: "7 of 7 cases conform"), a map that is not
    base64, a file that is not JSON, nested too deeply or giving a key twice: the corpus is
    refused, exit 2, one line naming the file."""

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "corpus"
        shutil.copytree(CORPUS / "cases" / "semantic", root / "cases" / "semantic")
        path = sorted((root / "cases" / "semantic").rglob("*.json"))[0]
        case = json.loads(path.read_text())
        if damage == "family":
            case["family"] = family
        elif damage == "base64":
            side = sorted(case["maps"])[0]
            case["maps"][side][sorted(case["maps"][side])[0]] = "not base64!" + family
        text = json.dumps(case) if damage != "not-json" else "{" + family
        if damage == "deep":  # nested past the parser's recursion (a RecursionError traceback once)
            text = text[:-1] + ', "deep": ' + "[" * 200_000 + "]" * 200_000 + "}"
        elif damage == "twice":
            text = text[:-1] + f', "family": "{family}"' + "}"
        path.write_text(text)
        code, said = run_cli_err("--corpus", str(root), "--engine", "regionbench")
    assert code == 2 and str(path) in said and len(said.strip().splitlines()) == 1, said


@pytest.mark.parametrize("junk", ["not json", "[1, 2]", '{"stats": 1}', '["a"] '])
def test_a_command_that_writes_junk_is_a_command_error(tmp_path: Path, junk: str) -> None:
    """A ``--command`` whose output is no list of COCOeval's 12 stats: exit 2, one line naming the
    command and the case, not a scoring difference (exit 1)."""
    script = tmp_path / "junk.py"
    script.write_text(f"import sys\nopen(sys.argv[3], 'w').write({junk!r})\n")
    command = f"{sys.executable} {script} {{truth}} {{run}} {{out}}"
    code, said = run_cli_err("--engine", "regionbench", "--case", "instances/segm/mixed-*", "--command", command)
    assert code == 2 and "--command" in said and "instances/segm/mixed-" in said, said
    assert len(said.strip().splitlines()) == 1


def run_cli_err(*args: str) -> tuple[int, str]:
    """``regionbench conformance ARGS`` in this process: its exit code and what it wrote to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["conformance", *args])
    return code, err.getvalue()


def test_every_engine_left_out_is_named_with_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine not installed, or one that scores none of the chosen cases, is a line of its
    own: a run that conforms never hides an engine it did not run."""
    monkeypatch.setattr(conformance, "installed", lambda: ["regionbench", "pycocotools"])
    code, text = run_cli("--family", "lvis")
    lines = text.splitlines()
    assert code == 0
    assert "pycocotools: skipped, it scores none of the chosen cases" in lines
    absent = [e for e in conformance.ENGINES if e not in ("regionbench", "pycocotools")]
    assert absent and all(f"{e}: skipped, not installed here" in lines for e in absent)
    assert not any(line.startswith("regionbench: skipped") for line in lines)
