"""An image's licence and addresses as COCO files hold them, instances and panoptic alike.

Read: an images entry names a licence of its file's ``licenses`` table by id, and gives the
image's ``coco_url`` and ``flickr_url``; they become the images table's ``license``,
``license_url``, ``url`` and ``original_url``. Written back: a ``licenses`` table of the
licences the images hold, and each entry's ``license`` id and addresses, so an export keeps
what the collection said of every image.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from regionbench.io.coco.known import identify
from regionbench.io.coco.split import licence_table

__all__ = ["ADDRESSES", "as_given", "licence_table", "read", "stated_source", "written"]

ADDRESSES = {"url": "coco_url", "original_url": "flickr_url"}  # column -> the entry's key


def read(listings: Iterable[tuple[dict[str, Any], dict[str, dict[str, str | None]]]]) -> dict[str, str | None]:
    """The images table's licence and address columns of an image from its entries, each with its file's licence
    table (``licence_table``), in annotator order: the licence the first entry naming one names,
    each address as the first entry giving it gives it; None where none does."""
    found: dict[str, str | None] = dict.fromkeys(("license", "license_url", *ADDRESSES))
    for entry, licences in listings:
        named = licences.get(str(entry.get("license")))
        if found["license"] is None and found["license_url"] is None and named and (named["name"] or named["url"]):
            found |= {"license": named["name"], "license_url": named["url"]}
        for column, key in ADDRESSES.items():
            if found[column] is None and isinstance(entry.get(key), str) and entry[key]:
                found[column] = entry[key]
    return found


def written(credits: Mapping[int, Mapping[str, Any]]) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """The ``licenses`` table of the images ``credits`` (``layouts.image_credits``), numbered
    from 1 in (name, url) order, and per image id what its entry carries: its ``license`` id and
    its addresses, those it has."""
    rows = credits.values()
    held = sorted({(r["license"] or "", r["license_url"] or "") for r in rows if r["license"] or r["license_url"]})
    number = {licence: k for k, licence in enumerate(held, 1)}
    table = [{"id": k, "name": name, "url": url} for (name, url), k in number.items()]
    entries: dict[int, dict[str, Any]] = {}
    for image_id, r in credits.items():
        entry = {key: r[column] for column, key in ADDRESSES.items() if r[column]}
        if r["license"] or r["license_url"]:
            entry["license"] = number[(r["license"] or "", r["license_url"] or "")]
        entries[image_id] = entry
    return table, entries


def stated_source(files: Iterable[tuple[object, object, list[Any]]]) -> dict[str, str | None]:
    """What a collection's COCO files (each its ``info``, ``licenses`` and ``images`` values, in
    annotator order) state of it: ``name`` and ``homepage`` from the first file whose ``info`` has
    a ``description`` or ``url``; ``license`` when every image entry of every file names a licence
    of its file's ``licenses`` table: that licence, or "per image" and their names when they
    differ (each image's is its ``images.license``); the ``citation`` the collection asks for
    where ``info`` names one it knows (``known``: COCO, LVIS). None where the files say nothing,
    or not of every image."""
    found: dict[str, str | None] = {"name": None, "homepage": None, "citation": None, "license": None}
    used: set[str] = set()
    unlicensed = False
    for info, licences, images in files:
        if isinstance(info, dict):
            for field, key in (("name", "description"), ("homepage", "url")):
                if found[field] is None and isinstance(info.get(key), str) and info[key].strip():
                    found[field] = info[key].strip()
        table = licence_table(licences)
        for entry in images:
            named = table.get(str(entry.get("license"))) if isinstance(entry, dict) else None
            if named is None or not (named["name"] or named["url"]):
                unlicensed = True
            else:
                used.add(str(named["name"] or named["url"]))
    if used and not unlicensed:
        found["license"] = next(iter(used)) if len(used) == 1 else "per image: " + "; ".join(sorted(used))
    if (known := identify(found["name"], found["homepage"])) is not None:  # COCO, LVIS: cited as they ask
        found["citation"] = known.citation
        found["homepage"] = found["homepage"] or known.homepage
    return found


def as_given(entry: Mapping[str, Any], licence: int | None) -> dict[str, Any]:
    """An images entry's credit (``written``'s) under the source's own licence table: its
    renumbered ``license`` replaced by the id the source's entry gave (``licence``; none: no id)."""
    return {k: v for k, v in entry.items() if k != "license"} | ({"license": licence} if licence is not None else {})
