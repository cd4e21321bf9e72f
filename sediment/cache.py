"""A derived cache of jieba segmentations, keyed by the content hash of each file.

jieba is the slow part of opening a root (~0.3–0.5M Chinese characters a second
here). Keyed by content, a cached value is right whenever the key matches and is
simply unused otherwise, so the cache is never trusted over the file. Deleting
or corrupting it loses nothing: it is rebuilt, silently.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from .files import atomic_write

log = logging.getLogger("sediment")

FORMAT = 2  # bump when tokenization changes, so old caches are ignored


class SegmentCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, list[str]] = {}
        self.used: set[str] = set()
        self.dirty = False

    def load(self) -> None:
        try:
            raw = json.loads(self.path.read_bytes())
            if raw.get("format") == FORMAT and isinstance(raw.get("docs"), dict):
                self.data = raw["docs"]
        except FileNotFoundError:
            pass
        except (ValueError, OSError, AttributeError) as exc:
            log.debug("ignoring unreadable cache %s: %s", self.path, exc)
            self.data = {}

    def get(self, key: str) -> list[str] | None:
        v = self.data.get(key)
        if v is not None and isinstance(v, list):
            self.used.add(key)
            return v
        return None

    def put(self, key: str, value: list[str]) -> None:
        self.data[key] = value
        self.used.add(key)
        self.dirty = True

    def save(self) -> None:
        """Write what is in use (entries for files that no longer exist are
        dropped). Not durable: a lost cache only costs time."""
        if not self.dirty:
            return
        docs = {k: v for k, v in self.data.items() if k in self.used}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps({"format": FORMAT, "docs": docs},
                                               ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
                         durable=False)
            self.dirty = False
        except OSError as exc:
            log.debug("could not write cache %s: %s", self.path, exc)
