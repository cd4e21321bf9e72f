"""Answers of write tools remembered by request id, so that a client which
timed out and calls again with the same ``request_id`` gets the first answer
instead of a second write.

Where: ``_system/cache/requests/``, one small JSON file per request id (named
by a hash of the tool and the id), written atomically and durably after the
write it answers. Machine-local and never versioned (``_system/cache/`` is in
the root's ``.gitignore``), shared by every server process on the machine, and
kept across restarts for ``TTL_SECONDS``. A request id used again with other
arguments is refused (``InvalidInput``): it names another call.

A crash between a write and its record (or a folder that cannot be written)
loses the first answer, never the once-ness: the retry runs the write again,
and each write tool applies once by itself (``request_key`` is what ``touch``
and ``observe`` record with their change; the others find their change made).

>>> import tempfile, pathlib
>>> r = Replies(pathlib.Path(tempfile.mkdtemp()))
>>> r.get("remember", "req-1", {"text": "x"}) is None
True
>>> r.put("remember", "req-1", {"text": "x"}, {"text": "remembered 01J…"})
>>> r.get("remember", "req-1", {"text": "x"})
{'text': 'remembered 01J…'}
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Mapping

from ..errors import InvalidInput
from ..disk.files import atomic_write, read_nofollow

log = logging.getLogger("sediment")

TTL_SECONDS = 24 * 3600  # a retry comes within seconds or minutes; a day is plenty
MAX_ID_CHARS = 200


def check_id(request_id: Any) -> str:
    if not isinstance(request_id, str) or not request_id.strip() or len(request_id) > MAX_ID_CHARS \
            or any(c in request_id for c in "\n\r\x00"):
        raise InvalidInput(f"request_id must be one line of 1 to {MAX_ID_CHARS} characters", what="request_id")
    return request_id


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def request_key(tool: str, request_id: str, args: Mapping[str, Any]) -> str:
    """The key a write records with its change (``touch``'s and ``observe``'s
    ``request``), so that the write applies once however often it is retried,
    whether or not its answer was kept: the tool, the client's id and the
    arguments (the same id for another call is another request)."""
    return "mcp-" + _digest([tool, check_id(request_id), _digest(args)])[:32]


class Replies:
    """The remembered answers in ``folder`` (None: remember nothing, e.g. on
    a read-only root; every call then runs)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def _path(self, tool: str, request_id: str) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / (_digest([tool, check_id(request_id)])[:40] + ".json")

    def get(self, tool: str, request_id: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
        """The first answer to this request, or None. Raises ``InvalidInput``
        when the id was used for a call with other arguments."""
        path = self._path(tool, request_id)
        if path is None:
            return None
        try:
            rec = json.loads(read_nofollow(path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # damaged or unreadable: as if not there
            log.warning("sediment: ignoring request record %s: %s", path.name, exc)
            return None
        if not isinstance(rec, dict) or time.time() - float(rec.get("t", 0)) > TTL_SECONDS:
            return None
        if rec.get("args") != _digest(args):
            raise InvalidInput(f"request_id {request_id!r} was used for another {tool} call; "
                               "use a new request_id for a new call", what="request_id")
        answer = rec.get("answer")
        return answer if isinstance(answer, dict) else None

    def put(self, tool: str, request_id: str, args: Mapping[str, Any], answer: Mapping[str, Any]) -> None:
        """Remember the answer (durably: a retry may come after a restart). A
        record that cannot be written is logged, never an error of the write
        it answers."""
        path = self._path(tool, request_id)
        if path is None:
            return
        rec = {"t": round(time.time(), 3), "tool": tool, "args": _digest(args), "answer": dict(answer)}
        try:
            atomic_write(path, json.dumps(rec, ensure_ascii=False, default=str).encode())
        except OSError as exc:
            log.warning("sediment: request %r not remembered: %s", request_id, exc)

    def prune(self, now: float | None = None) -> int:
        """Remove the records older than ``TTL_SECONDS``; returns how many."""
        if self.folder is None:
            return 0
        cutoff = (time.time() if now is None else now) - TTL_SECONDS
        n = 0
        try:
            with os.scandir(self.folder) as it:
                for d in it:
                    try:
                        if d.name.endswith(".json") and d.stat(follow_symlinks=False).st_mtime < cutoff:
                            os.unlink(d.path)
                            n += 1
                    except OSError:
                        continue
        except OSError:
            return n
        return n
