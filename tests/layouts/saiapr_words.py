"""Spell a generated SAIAPR tree's words as the official word list does: words the library's
vocabulary lacks, used by regions, placed by ontology paths or by none."""

import re
from pathlib import Path

from regionbench.io.saiapr import text

RENAMED = "ancent-building"  # spelled so in the official list
UNPLACED = "sky-red-sunset-dusk"  # used by a region whose ontology row is gone
UNUSED = "flock-of-birds"  # in the word list, used by no region


def official_spellings(root: Path) -> dict[str, str | int]:
    """Rename the word of the first folder's last region to ``RENAMED`` (in wlist.txt and every
    ontology path), relabel the region before it ``UNPLACED`` (its ontology row removed) and
    add ``UNUSED`` to the word list. Returns the renamed word, its id and the new words' ids."""
    words = text.read_wordlist(root / "wlist.txt")
    folder = sorted(p for p in root.iterdir() if p.is_dir() and p.name.isdigit())[0]
    rows = (folder / "labels.txt").read_text().splitlines()
    first = int(rows[-1].split()[2])
    old = words[first]
    words[first] = RENAMED
    words[max(words) + 1] = UNPLACED
    words[max(words) + 1] = UNUSED
    text.write_wordlist(root / "wlist.txt", words)
    for path in root.glob("*/ontology_path.txt"):
        segment = re.compile(rf"(?<=>)(_?){re.escape(old)}(?=->|\s|$)", re.M)
        path.write_text(segment.sub(rf"\g<1>{RENAMED}", path.read_text()))
    image_id, region_id, _ = rows[-2].split()
    rows[-2] = f"{image_id}\t{region_id}\t{max(words) - 1}"
    (folder / "labels.txt").write_text("\n".join(rows) + "\n")
    ontology = (folder / "ontology_path.txt").read_text().splitlines(keepends=True)
    key = f"{image_id}\t{region_id}\t"
    (folder / "ontology_path.txt").write_text("".join(line for line in ontology if not line.startswith(key)))
    return {"old": old, "renamed_id": first, "unplaced_id": max(words) - 1, "unused_id": max(words)}
