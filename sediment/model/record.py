"""One way a result becomes plain data: ``Record.to_dict()`` (what ``--json``
prints and an MCP tool sends as structured content).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Pair(Record):
...     a: str
...     b: tuple[str, ...]
>>> Pair("x", ("y", "z")).to_dict()
{'a': 'x', 'b': ['y', 'z']}
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping


class Record:
    """A result type (a dataclass) whose ``to_dict()`` is its fields, in order,
    as plain data (``plain``). ``_keys``, where a class sets it, names the
    keys instead, in their order: fields, and properties worth sending."""

    _keys: ClassVar[tuple[str, ...]] = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]  # (set by @dataclass on each result type)

    def to_dict(self) -> dict[str, Any]:
        keys = self._keys or tuple(self.__dataclass_fields__)
        return {k: plain(getattr(self, k)) for k in keys}


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: what has ``to_dict`` as its dict, a tuple
    or list as a list, a mapping as a dict, each item the same way."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [plain(x) for x in value]
    if isinstance(value, Mapping):
        return {k: plain(x) for k, x in value.items()}
    return value
