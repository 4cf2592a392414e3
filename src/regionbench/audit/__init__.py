"""Audits a maintainer runs before publishing: near-duplicate images across splits
(``duplicates``), regions whose label or mask is likely wrong (``labels``)."""
