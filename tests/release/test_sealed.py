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


DAMAGE = ("flip", "truncate", "remove", "folder", "append")


def _damage(target, kind: str, offset: int) -> None:
    """``target`` damaged as a disk, a user or a half-finished write could: a byte flipped in
    place, the file cut short, removed, a folder in its place, bytes appended."""
    if kind == "flip":
        with open(target, "r+b") as f:
            f.seek(offset)
            byte = f.read(1) or b"\0"
            f.seek(offset)
            f.write(bytes([byte[0] ^ 0xFF]))
    elif kind == "truncate":
        with open(target, "r+b") as f:
            f.truncate(offset)
    elif kind == "remove":
        target.unlink()
    elif kind == "folder":
        target.unlink()
        target.mkdir()
    else:
        with open(target, "ab") as f:
            f.write(b"\0" * (offset + 1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_damaged_assembled_file_is_named_and_nothing_is_published(tmp_path_factory, data: st.DataObject) -> None:
    """Any file of the assembled release (a table, the manifest, a Hugging Face file), damaged in
    any way after its assembly sealed it: publishing names that file in one line
    (``DamagedAssembly``), leaves neither the version's folder nor a ``.partial`` one, and never
    reads the damaged bytes as a table (no Arrow error)."""
    import pytest

    root = tmp_path_factory.mktemp("damaged")
    assembled = small_release(root / "assembled")
    out = root / "releases" / "v1.0.0"
    files = sorted(p for p in assembled.rglob("*") if p.is_file())
    target = data.draw(st.sampled_from(files), label="file")
    kind = data.draw(st.sampled_from(DAMAGE), label="damage")
    _damage(target, kind, data.draw(st.integers(0, max(target.stat().st_size - 1, 0)), label="offset"))
    with pytest.raises(release.ReleaseError) as caught:
        writer.publish(
            assembled, out, {}, card=lambda folder, manifest: "card\n", croissant=lambda folder, manifest: {}
        )
    assert isinstance(caught.value, release.DamagedAssembly), caught.value
    message = str(caught.value)
    assert "\n" not in message and (target.name in message or "manifest" in message), message
    assert not out.exists() and not list(out.parent.glob("*.partial")) if out.parent.exists() else True
