"""The raw tree a build reads: where it is, its layout, and whether the build generates it;
every question the workflow asks of it, each answered once per invocation."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from regionbench.io import imageclef, images
from regionbench.io.layouts import Layout, NamesCategories, PreparesPieces
from regionbench.io.shards import trees_state


class RawTree:
    """A raw tree of ``layout`` at ``root``. A tree the build generates (``planned``: the
    number of its images and the folder of each, from its profile) is not on disk when the
    workflow plans it: its shards come from the plan, and it stands as one input for all its
    files. ``shard_size`` is the configured images per shard (None: the layout's default);
    ``annotators`` the annotators of a generated tree (``synthetic``'s writer of its layout says
    how many it makes)."""

    def __init__(
        self,
        root: str,
        layout: Layout,
        shard_size: int | None = None,
        planned: tuple[int, Sequence[str]] | None = None,
        annotators: int = 1,
    ) -> None:
        self.root, self.layout, self.shard_size = root, layout, shard_size
        self.planned, self.annotators = planned, annotators

    @property
    def generated(self) -> bool:
        return self.planned is not None

    @cached_property
    def shards(self) -> list[str]:
        """The shard names (``Layout.shards``; a generated tree's ``Layout.planned_shards``)."""
        if self.planned is not None:
            return self.layout.planned_shards(*self.planned, self.shard_size)
        return self.layout.shards(Path(self.root), self.shard_size)

    def category_files(self) -> list[str]:
        """The files the tree's categories are read from (``NamesCategories.category_files``; a
        generated tree: the tree itself; none when the layout names no categories)."""
        if self.generated:
            return [self.root]
        if not isinstance(self.layout, NamesCategories):
            return []
        return self.layout.category_files(Path(self.root))

    def inputs(self) -> list[str]:
        """The files every shard reads (a generated tree: the tree itself, the synth rule's output)."""
        return [self.root] if self.generated else self.layout.inputs(Path(self.root))

    @cached_property
    def _states(self) -> dict[str, str]:
        return self.layout.shard_states(Path(self.root), self.shards, self.shard_size)

    def state(self, shard: str) -> str:
        """The shard's fingerprint (``Layout.shard_states``): any change to a file it reads
        changes it; "generated" for a generated tree, which the synth rule stands for."""
        return "generated" if self.generated else self._states[shard]

    @cached_property
    def copies(self) -> dict[str, dict[str, str]]:
        """Per shard, its image files that hold the bytes of an earlier image file of the tree
        (in shard order, ``Layout.shard_images``) -> that file (``io.images.copies``): each would
        give a second id to one image, and is rejected. Found when the workflow plans, so a
        shard reruns when its own copies change; none for a generated tree, whose images are
        drawn apart (the synth tests check it)."""
        if self.generated:
            return {}
        root = Path(self.root)
        listed = self.layout.shard_images(root, self.shards, self.shard_size)
        found = images.copies(root, [path for paths in listed.values() for path in paths])
        return {shard: {p: found[p] for p in paths if p in found} for shard, paths in listed.items()}

    @property
    def prepares(self) -> bool:
        """Whether the layout reads its files into shard pieces first (``PreparesPieces``)."""
        return isinstance(self.layout, PreparesPieces)

    @property
    def pieces(self) -> tuple[str, ...]:
        """The files each shard has among the prepared pieces (none without preparation)."""
        return self.layout.pieces if isinstance(self.layout, PreparesPieces) else ()

    @cached_property
    def listing_state(self) -> str:
        """What the prepared pieces depend on besides the annotator files: the listing the
        shards are cut from ("generated" for a generated tree, "" without preparation)."""
        if self.generated:
            return "generated"
        if not isinstance(self.layout, PreparesPieces):
            return ""
        return self.layout.listing_state(Path(self.root), self.shard_size)

    def official(self, kind: str) -> list[str]:
        """The tree's files of published ``features`` or ``relations`` (a generated tree: the
        tree itself, when its layout writes them)."""
        if self.generated:
            return [self.root] if kind in self.layout.official_measures else []
        if kind == "features":
            return self.layout.official_features(Path(self.root))
        return self.layout.official_relations(Path(self.root))

    @property
    def several_annotators(self) -> bool:
        """Whether annotators are compared (a generated tree: as many as its writer makes)."""
        if self.generated:
            return self.annotators > 1
        return len(self.layout.annotators(Path(self.root))) > 1

    @cached_property
    def image_label_source(self) -> str:
        """The tree's ImageCLEF folder (``io.imageclef.FOLDER``), an image-level annotation
        source beside any layout's files, or "" without one (a generated tree has none)."""
        folder = Path(self.root, imageclef.FOLDER)
        return str(folder) if not self.generated and folder.is_dir() else ""

    def image_label_state(self) -> str:
        """Fingerprint of the ImageCLEF files ("none" without them): an edit reruns image_labels."""
        return trees_state(self.image_label_source, (".",)) if self.image_label_source else "none"
