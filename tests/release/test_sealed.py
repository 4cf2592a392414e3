"""A published release cannot change under it: nothing written into the assembled folder under
``results/`` (the tables the release was published from) reaches the sealed folder."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_release_verify import small_release

from regionbench import release
from regionbench.release import writer


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_writing_in_place_under_results_leaves_the_sealed_release_whole(tmp_path_factory, data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("sealed")
    assembled = small_release(root / "assembled")
    out = root / "releases" / "v1.0.0"
    writer.publish(assembled, out, {}, card=lambda folder, manifest: "card\n", croissant=lambda folder, manifest: {})
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    files = sorted(p for p in assembled.rglob("*") if p.is_file())
    target = data.draw(st.sampled_from(files), label="file")
    size = target.stat().st_size
    offset = data.draw(st.integers(0, max(size - 1, 0)), label="offset")
    with open(target, "r+b") as f:  # in place: the same inode, as an editor or a rerun writing into it would
        f.seek(offset)
        byte = f.read(1) or b"\0"
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert release.verify(out) == []
