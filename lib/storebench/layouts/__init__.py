"""Dataset layouts on S3 (seed 002), one module per layout behind one small interface
(``base.Layout``: write a tier, answer a query), found by name in a registry."""
from __future__ import annotations

from storebench.layouts.base import Layout, S3Place, Written
from storebench.layouts.lance import LanceDataset
from storebench.layouts.objects import ObjectPerImage
from storebench.layouts.parquet import ParquetBlobs, SortedParquetBlobs
from storebench.layouts.tarshards import TarShards

LAYOUTS: dict[str, type[Layout]] = {cls.name: cls for cls in (ObjectPerImage, TarShards, ParquetBlobs, SortedParquetBlobs,
                                                           LanceDataset)}


def get_layout(name: str) -> type[Layout]:
    if name not in LAYOUTS:
        raise ValueError(f"unknown layout {name!r}; valid: {', '.join(LAYOUTS)}")
    return LAYOUTS[name]


__all__ = ["LAYOUTS", "Layout", "S3Place", "Written", "get_layout"]
