"""A class-map folder's ``classes.csv`` read strictly: ``ignore`` is one of the documented values,
a class has a name; anything else is refused naming the line, never silently made a class."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.io import classmap
from regionbench.io.shards import IngestError

IGNORES = ["", "0", "1", "true", "TRUE", "yes", "no", "false", "maybe", "2", "y", "void", " 1 "]


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["road", "sky", "", "  ", "tree"]), st.sampled_from(IGNORES)), min_size=1, max_size=5
    ),
    seed=st.integers(0, 1000),
)
def test_the_table_reads_the_documented_values_and_refuses_the_rest(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, str]], seed: int
) -> None:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "name", "ignore"])
    named = [(f"{name}{k}" if name.strip() else name, ignore) for k, (name, ignore) in enumerate(rows)]
    for k, (name, ignore) in enumerate(named):
        writer.writerow([k, name, ignore])
    path = tmp_path_factory.mktemp("classes") / "classes.csv"
    path.write_text(out.getvalue())
    first_bad = next(
        (
            line
            for line, (name, ignore) in enumerate(named, start=2)
            if ignore.strip().lower() not in classmap.TRUE + classmap.FALSE
            or (not name.strip() and ignore.strip().lower() not in classmap.TRUE)
        ),
        None,
    )
    if first_bad is not None:
        with pytest.raises(IngestError, match=rf"^classes.csv line {first_bad}: ") as refused:
            classmap.read_classes(str(path), f"{seed}")
        assert "\n" not in str(refused.value)
        return
    found = classmap.read_classes(str(path), f"{seed}")
    assert [c.ignore for c in found.values()] == [i.strip().lower() in classmap.TRUE for _, i in named]
    assert all(c.name.strip() for c in found.values() if not c.ignore)
