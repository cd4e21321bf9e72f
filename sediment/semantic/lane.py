"""The optional semantic lane: vectors of the memories, kept current in the
background, and a dense ranking for each query fused with the lexical lanes.

Switched on per root (``Repository(root, semantic=True)`` for the bundled
model, ``semantic=<embedder>`` for any callable ``texts -> array``, or
``semantic: true`` in ``policy.yaml``). Nothing of it runs at open: the model
loads in a background thread on the first search that could use it (the
search itself is answered lexically meanwhile, and ``status()`` says so), and
the thread then embeds every memory that has no vector, a batch at a time.
``embed()`` does the same at once, for scripts and tests.

Reads the view, never writes a note: vectors are derived data in the cache
(``vectors``).
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from . import dense as D
from .embedding import EMBED_CHARS, Bundled, Choice, Embedder, key_of, model_id, require_numpy, text_of
from ..model.entry import Entry
from ..errors import InvalidInput, NotInstalled, SedimentError, StorageError
from ..model.policy import Policy
from ..model.problem import Problem
from ..disk.files import WriterLock
from ..store.system import VECTORS_LOCK
from ..progress import Progress
from ..search.index import Index
from .hubs import Spread
from .vectors import VectorFile

log = logging.getLogger("sediment")

BATCH = 64


class Source(Protocol):
    """What the lane reads of a view (``view.View``): its entries and its
    index, under its read lock. Named here rather than imported, so that the
    lane stands on the search and not on the whole view below it."""

    @property
    def entries(self) -> Mapping[str, Entry]: ...

    @property
    def index(self) -> Index: ...

    def reading(self) -> AbstractContextManager[Source]: ...


def make_embedder(semantic: Choice) -> Embedder | None:
    """``True`` → the bundled model; a callable → itself; ``False``/``None`` → off."""
    if semantic is None or semantic is False:
        return None
    if semantic is True:
        return Bundled()
    if callable(semantic):
        return semantic
    raise TypeError(f"semantic= takes True, False or an embedder callable, not {type(semantic).__name__}")


# after a pass fails on the vector file (a disk full), the background thread
# waits this long before the next search's wake may start another
RETRY_SECONDS = 30.0


class Semantic:
    def __init__(self, view: Source, embedder: Embedder, cache: Path | None, *, lock_timeout: float,
                 rules: D.DenseRules | None = None, background: bool = True) -> None:
        require_numpy()
        self.view = view
        self.embedder = embedder
        self.model = model_id(embedder)
        self.rules = rules or D.DenseRules()
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.model)[:80]
        path = lock = None
        if cache is not None:
            path = cache / f"vectors-{slug}.bin"
            lock = WriterLock.for_path(cache / VECTORS_LOCK)
        self.vectors = VectorFile(path, lock, lock_timeout)
        self.spread = Spread(self.vectors)
        self._keys: dict[str, tuple[str, bytes]] = {}  # id → (version, content key)
        self._background = background
        self._ready = not isinstance(embedder, Bundled)  # a caller's embedder needs no loading
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._mutex = threading.Lock()  # one embedding pass at a time
        self.error: str | None = None
        self.retry_after = RETRY_SECONDS  # after a pass failed on the vector file
        self._by_key: dict[bytes, list[str]] | None = None
        self._by_key_size = 0
        self._keys_changed = False
        self._learned = 0  # keys computed (a memory new, or of a new version), ever
        self._told = (-1, -1)  # (_learned, memories) when the vector file was last told the keys in use

    # --------------------------------------------------------------- state

    def status(self) -> dict[str, Any]:
        """What the lane can do now: 'loading' (the model), 'embedding'
        (vectors missing), 'ready', or 'failed' (with the reason)."""
        with self.view.reading() as view:
            total = len(view.entries)
            have = sum(1 for e in view.entries.values() if self._key(e) in self.vectors)
        state = ("failed" if self.error else "loading" if not self._ready
                 else "ready" if have == total else "embedding")
        return {"model": self.model, "state": state, "vectors": have, "memories": total,
                **({"error": self.error} if self.error else {})}

    def problems(self, root: Path) -> list[Problem]:
        """What ``check`` says of the vector file (paths relative to ``root``)."""
        fault, where = self.vectors.fault, self.vectors.where
        if fault is None or where is None:
            return []
        return [Problem(where.relative_to(root).as_posix(), fault[1], code=fault[0])]

    def prepare(self) -> None:
        """Load the model now (a one-shot process: the CLI), so that the next
        search uses the lane; memories without a vector stay out of it until
        ``embed`` (or the background) computes theirs."""
        if isinstance(self.embedder, Bundled):
            self.embedder.load()
        self._tell(*self._missing()[2:])  # learns every memory's content key, so its cached vector is found
        self._ready = True
        self._background = False

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=5)

    def _key(self, e: Entry) -> bytes:
        got = self._keys.get(e.id)
        if got is None or got[0] != e.version:
            got = (e.version, key_of(self.model, text_of(e)))
            self._keys[e.id] = got
            self._keys_changed = True
            self._learned += 1
        return got[1]

    def _ids_by_key(self) -> dict[bytes, list[str]]:
        """Content key → ids (one text kept twice by hand has two), rebuilt only
        after keys changed."""
        if self._by_key is None or self._by_key_size != len(self._keys) or self._keys_changed:
            by_key: dict[bytes, list[str]] = {}
            for eid, (_, k) in self._keys.items():
                by_key.setdefault(k, []).append(eid)
            self._by_key, self._by_key_size, self._keys_changed = by_key, len(self._keys), False
        return self._by_key

    # --------------------------------------------------------------- embedding

    def _missing(self) -> tuple[list[tuple[bytes, str]], int, set[bytes] | None, tuple[int, int]]:
        """The texts with no vector yet, by key, and how many memories there
        are (one pass over the entries: a search wakes the background for
        this); the keys in use, when they may have changed since the vector
        file was told them (else None), and what says so (for ``_tell``)."""
        with self.view.reading() as view:
            out: dict[bytes, str] = {}
            for e in view.entries.values():
                k = self._key(e)
                if k not in self.vectors and k not in out:
                    out[k] = text_of(e)
            # (no key learned and as many memories: the same keys; a second
            # pass only then, so the pass after every search costs what it did)
            seen = (self._learned, len(view.entries))
            live = {self._key(e) for e in view.entries.values()} if seen != self._told else None
            return list(out.items()), len(view.entries), live, seen

    def _tell(self, live: set[bytes] | None, seen: tuple[int, int]) -> None:
        """The corpus mean: of the rows of these keys, not of older versions'."""
        if live is not None:
            self.vectors.live(live)
            self._told = seen

    def embed(self, progress: Progress | None = None) -> dict[str, Any]:
        """Compute every missing vector now; returns counts and seconds. A
        failure to read or write the vector file is a ``StorageError``; a pass
        that succeeds clears the lane's error (a disk full is not for life)."""
        try:
            out = self._embed(progress)
        except SedimentError:
            raise
        except OSError as exc:
            raise StorageError(f"the semantic lane cannot embed: {exc}",
                               path=str(self.vectors.path or "")) from exc
        self.error = None
        return out

    def _embed(self, progress: Progress | None) -> dict[str, Any]:
        t0 = time.monotonic()
        with self._mutex:
            if isinstance(self.embedder, Bundled):
                self.embedder.load()  # so that a query never waits for the model
            self.vectors.reload()
            embedded = 0
            for _ in range(2):  # once more if the file was written anew over rows it had (a damaged header)
                rewrites = self.vectors.rewrites
                todo, memories, live, seen = self._missing()
                embedded += self._batches(todo, progress)
                if self.vectors.rewrites == rewrites:
                    break
            self._ready = True
            if len(self.vectors) > 2 * max(memories, 1000):  # mostly stale rows: rewrite
                with self.view.reading() as view:
                    live = {self._key(e) for e in view.entries.values()}
                    seen = (self._learned, len(view.entries))
                self.vectors.compact(live)
            self._tell(live, seen)
        return {"model": self.model, "embedded": embedded, "vectors": len(self.vectors),
                "seconds": round(time.monotonic() - t0, 3)}

    def _batches(self, todo: list[tuple[bytes, str]], progress: Progress | None) -> int:
        """Embed these texts a batch at a time; returns how many were. What
        another process embedding at once wrote meanwhile is not embedded
        again (the vector file keeps one record per key either way)."""
        done = 0
        for i in range(0, len(todo), BATCH):
            if self._stop.is_set():
                break
            self.vectors.reload()
            part = [(k, t) for k, t in todo[i:i + BATCH] if k not in self.vectors]
            if part:
                self.vectors.add([k for k, _ in part], self.embedder([t for _, t in part]))
                done += len(part)
            if progress is not None:  # a batch takes about a second: each is worth a tick
                progress("embed", min(i + BATCH, len(todo)), len(todo))
        return done

    @staticmethod
    def _run(lane: "weakref.ref[Semantic]", stop: threading.Event, wake: threading.Event) -> None:
        """The background thread. It holds its lane (and so the view) only
        while it embeds: a repository dropped without ``close()`` is collected,
        and the lane's finalizer (``nudge``) then ends this thread. A pass that
        fails on the vector file (``status()`` says 'failed' meanwhile) is
        tried again at the next wake (the next search); one that fails in the
        embedder (a wrong shape, a missing package) stops the thread."""
        while not stop.is_set():
            me = lane()
            if me is None:
                return
            pause = 0.0
            try:
                me.embed()
            except OSError as exc:  # (StorageError, LockTimeout: a disk full, a busy lock) the next wake tries again
                _failed(me, exc, "paused")
                pause = me.retry_after
            except (SedimentError, ValueError, ImportError) as exc:  # the embedder's: the same at every pass
                _failed(me, exc, "stopped")
                return
            del me
            # after a failed pass, none for a while: on a disk still full every
            # search would embed a batch (about a second of model CPU) only to
            # throw it away. A search meanwhile leaves the wake set: one pass then.
            if pause and stop.wait(pause):
                return
            wake.wait()
            wake.clear()

    def nudge(self) -> None:
        """Start the background thread, or wake it to embed what is new."""
        if not self._background:
            return
        if self._thread is None or (not self._thread.is_alive() and self.error is None and not self._stop.is_set()):
            # (a thread stopped by the embedder's error is started again only
            # once an explicit embed() has succeeded and cleared the error)
            if self._thread is None:
                weakref.finalize(self, _wake_to_end, self._stop, self._wake)  # (collected, or the interpreter exits)
            self._thread = threading.Thread(target=Semantic._run, args=(weakref.ref(self), self._stop, self._wake),
                                            name="sediment-embed", daemon=True)
            self._thread.start()
        else:
            self._wake.set()

    # --------------------------------------------------------------- searching

    def nearest(self, query: str, k: int) -> list[str]:
        """The ids of the ``k`` memories most similar to ``query``, with no floor
        and no fusion: the dense lane alone, for benchmarks beside the fused search."""
        got = self._similarities(query)
        if got is None:
            return []
        sims, _, keys, _ = got
        by_key = self._ids_by_key()
        out: list[str] = []
        for r in sims.argsort()[::-1]:
            out += by_key.get(keys[int(r)], [])
            if len(out) >= k:
                break
        return out[:k]

    def lanes(self, words: Mapping[str, float], bigrams: Mapping[str, float], query: str
              ) -> Sequence[D.DenseLane | D.BlendLane]:
        """The dense lane for one query, or none while the model is not loaded
        (the search is lexical then; ``status()`` tells): a tail filler when the
        lexical lanes answer the query, the blended ranking when it leans on
        the lane (dense.py). A ``rank.LaneSource``: the repository puts it in
        its view's ``lanes`` at open, and every search asks it (inside the
        view's reading), which also wakes the background embedding."""
        self.nudge()
        if not self._ready or self.error or not len(self.vectors):
            return []
        self.vectors.reload()
        np = require_numpy()
        got = self._similarities(query)
        if got is None:
            return []
        sims, raw, keys, calibrated = got
        by_key = self._ids_by_key()
        index, entries = self.view.index, self.view.entries
        cands: list[tuple[float, int]] = []
        texts: list[str] = []  # of the best candidates, for the script test
        chosen = D.select(sims, self.rules, raw, calibrated=calibrated)
        kept = set(self._standing_out(chosen, sims, raw, keys))
        for r in chosen:
            for eid in by_key.get(keys[r], ()):
                slot = index.slot_of.get(eid)
                if slot is not None and eid in entries:
                    if r in kept:
                        cands.append((float(sims[r]), slot))
                    # (a hub is no finding, but still says in which script the corpus near the question is written)
                    if len(texts) < self.rules.cross_top:
                        texts.append(entries[eid].body)
        cross = D.cross_language(query, texts)
        found = D.lexical_evidence(words, bigrams, index.df, len(index))
        evidence = found * (1 - cross)
        against = self._against(sims, raw, keys)
        if evidence >= self.rules.evidence_skip or not cands:
            return [D.DenseLane(cands, D.TAIL, against=against)]
        return [D.BlendLane(cands, self._similarity(sims, keys),
                            # (a NaN row, a model's fault on one text, would make both NaN:
                            # every similarity scaled to 0; select skipped it, so do these)
                            self._other_script(D.mostly_cjk(query)), float(np.nanmean(sims)), float(np.nanmax(sims)),
                            # (trusted more by evidence only where the similarities are
                            # calibrated: the spread test and centring, from z_min_docs on)
                            D.alpha_for(cross, self.rules, found if calibrated else None),
                            self.rules.lexical_depth, self.rules.weight_max, against=against)]

    def _standing_out(self, rows: list[int], sims: Any, raw: Any, keys: list[bytes]) -> list[int]:
        """``rows`` (``select``'s, best first) less the hubs: with centred
        similarities (``raw`` given: calibrated), a row stays only when the
        query also stands ``row_z`` deviations out among the row's own
        similarities to the corpus (hubs.py). A row the file no longer holds
        as scanned (compacted meanwhile) is not tested."""
        if raw is None or not rows or self.rules.row_z is None:
            return rows
        n = len(self.vectors)
        same = [r for r in rows if r < n and self.vectors.key(r) == keys[r]]
        standing = dict(zip(same, self.spread.standing(same, sims)))
        return [r for r in rows if standing.get(r, float("inf")) >= self.rules.row_z]

    def _against(self, sims: Any, raw: Any, keys: list[bytes]) -> Callable[[Sequence[int]], list[bool]] | None:
        """Whether the query stands less than ``unlike_z`` deviations out among
        a memory's own similarities to the corpus (hubs.py): the lane's
        evidence against it (``rank.Lane.unlike``). None without centred
        similarities. A memory the lane read only the opening of (its text
        reaches ``EMBED_CHARS``), or has no vector of as scanned, is not judged."""
        if raw is None or self.rules.unlike_z is None:
            return None
        index, entries, vectors, floor = self.view.index, self.view.entries, self.vectors, self.rules.unlike_z

        def row(slot: int) -> int | None:
            e = entries.get(index.key_of[slot] or "")
            if e is None or len(text_of(e)) >= EMBED_CHARS:
                return None
            key = self._key(e)
            r = vectors.row(key)
            return r if r is not None and r < len(sims) and keys[r] == key else None

        def against(slots: Sequence[int]) -> list[bool]:
            rows = {s: r for s in slots if (r := row(s)) is not None}
            low = dict(zip(rows.values(), self.spread.standing(list(rows.values()), sims)))
            return [s in rows and low[rows[s]] < floor for s in slots]
        return against

    def _similarities(self, query: str) -> tuple[Any, Any, list[bytes], bool] | None:
        """The query's similarity to every cached vector, as the lane ranks by
        (centred on the corpus mean from ``z_min_docs`` vectors up: vectors.py
        says why; below that, the mean of a few notes is no genre's), and the
        plain cosine (None when that is what the first is); the rows' keys;
        and whether the similarities are calibrated: enough vectors for a mean
        and a spread to say something, counted as no more than the memories
        (the file keeps a row for each version embedded until it is compacted).
        None when the file's rows are of another dimension than the query's
        (a damaged header: the next embedding pass writes the file anew)."""
        q = require_numpy().asarray(self.embedder([query]))[0]
        if self.vectors.mismatch(q.shape[-1]):
            return None
        calibrated = min(len(self.vectors), len(self.view.entries)) >= self.rules.z_min_docs
        raw, cen, keys = self.vectors.scan_keys(q, center=self.rules.center and calibrated)
        return (raw, None, keys, calibrated) if cen is None else (cen, raw, keys, calibrated)

    def _similarity(self, sims: Any, keys: list[bytes]) -> Callable[[int], float | None]:
        """A slot's similarity to the query (a lexical hit outside the dense
        candidates), or None without a vector."""
        index, entries, vectors = self.view.index, self.view.entries, self.vectors

        def of(slot: int) -> float | None:
            e = entries.get(index.key_of[slot] or "")
            key = self._key(e) if e is not None else None
            row = vectors.row(key) if key is not None else None
            # (a row appended or moved by a compaction since the scan has no similarity in it)
            return float(sims[row]) if row is not None and row < len(sims) and keys[row] == key else None
        return of

    def _other_script(self, query_cjk: bool) -> Callable[[int], bool]:
        index, entries = self.view.index, self.view.entries

        def other(slot: int) -> bool:
            e = entries.get(index.key_of[slot] or "")
            return e is not None and D.mostly_cjk(e.body) != query_cjk
        return other

def _failed(lane: Semantic, exc: BaseException, what: str) -> None:
    """The background pass failed: the lane's ``error`` (``status()``
    says 'failed' meanwhile), logged when it is new."""
    error = f"{type(exc).__name__}: {exc}"
    if error != lane.error:  # (a disk still full at every search: said once)
        log.warning("sediment: the semantic lane %s: %s", what, error)
    lane.error = error


def _wake_to_end(stop: threading.Event, wake: threading.Event) -> None:
    stop.set()
    wake.set()


def semantic_lane(view: Source, policy: Policy, semantic: Choice, cache: Path | None) -> Semantic | None:
    """The lane a root asked for: ``semantic=`` (True, an embedder, False), else
    the policy's key. Asked for in code and missing, the extra raises
    ``NotInstalled``; asked for by ``policy.yaml`` (a person's file), it
    only logs a warning and the search stays lexical."""
    from_policy = semantic is None
    embedder = make_embedder(policy.semantic if from_policy else semantic)
    if embedder is None:
        return None
    try:
        return Semantic(view, embedder, cache, lock_timeout=policy.lock_timeout_seconds,
                        rules=D.DenseRules(floor_centered=policy.semantic_floor))
    except NotInstalled as exc:
        if not from_policy:
            raise
        log.warning("sediment: policy.yaml asks for the semantic lane, but %s", exc)
        return None


def embed_now(lane: Semantic | None, progress: Progress | None) -> dict[str, Any]:
    """``Repository.embed``: the lane's missing vectors, now. Raises
    ``InvalidInput`` when the lane is off (there is nothing to embed with)."""
    if lane is None:
        raise InvalidInput("the semantic lane is off: Repository(root, semantic=True) or "
                           "'semantic: true' in policy.yaml")
    return lane.embed(progress)


def lane_problems(lane: Semantic | None, root: Path) -> list[Problem]:
    """``Repository.check``'s part of the lane: its vector file's problems (none when it is off)."""
    return lane.problems(root) if lane is not None else []
