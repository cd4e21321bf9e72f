"""What every CLI command module shares: ``Command`` (``@command`` makes one
of a function), how a command opens its root, and the small helpers for
arguments and output.

A command module (``memory``, ``agent``, ``sync``) lists its commands in its
``COMMANDS``; ``main`` puts them in one table and builds the parser. The
library is imported only when a command runs (a fast ``--help``): a command
module opens its root with ``open_root(Repository, ns)``, importing the class
inside its own ``_open``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from ..model.entry import Entry
from ..errors import InvalidInput, NotFound
from ..progress import terminal_bar
from ..model.fields import SECTIONS

Arg = tuple[Sequence[str], dict[str, Any]]
Handler = Callable[[argparse.Namespace], tuple[Any, str]]  # → (data for --json, text)
R = TypeVar("R")


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, its help line, its arguments, what runs it."""
    name: str
    run: Handler
    help: str
    args: tuple[Arg, ...]


def command(name: str, help: str, *args: Arg) -> Callable[[Handler], Command]:
    """The function below as the command ``name`` (listed in its module's ``COMMANDS``)."""
    def make(fn: Handler) -> Command:
        return Command(name, fn, help, args)
    return make


def arg(*names: str, **kw: Any) -> Arg:
    return names, kw


def require_root(ns: argparse.Namespace) -> None:
    """Only init makes a root: a mistyped --root must not sprout layer folders
    and a _system/ in some unrelated directory."""
    if not os.path.isdir(os.path.join(ns.root, "_system")):
        raise NotFound(f"{ns.root} is not a memory root (no _system/ folder); "
                       f"create one with: sediment --root {ns.root} init", path=ns.root)


def open_root(repository: Callable[..., R], ns: argparse.Namespace, **options: Any) -> R:
    """The root of ``--root``, opened by ``repository`` (``Repository``): an
    existing one, but for ``init``, which makes it; with the roots of
    ``--shared``, read through it (``shared=`` in ``options`` overrides)."""
    if ns.command != "init":
        require_root(ns)
        options.setdefault("shared", shared_roots(ns) or None)
    return repository(ns.root, create=ns.command == "init", progress=terminal_bar(), **options)


def shared_roots(ns: argparse.Namespace) -> dict[str, str]:
    """The roots of ``--shared [LABEL=]PATH`` (repeatable; else
    ``$SEDIMENT_SHARED``, paths separated as in ``PATH``) by label: the one
    given, else the folder's name. Each must be a memory root (``NotFound``)."""
    given = getattr(ns, "shared", None)
    if given is None:
        given = [p for p in os.environ.get("SEDIMENT_SHARED", "").split(os.pathsep) if p]
    out: dict[str, str] = {}
    for item in given:
        label, sep, path = item.partition("=")
        if not sep or os.sep in label or (os.altsep and os.altsep in label):
            label, path = os.path.basename(os.path.abspath(item)), item
        if not os.path.isdir(os.path.join(path, "_system")):
            raise NotFound(f"--shared {item}: {path} is not a memory root (no _system/ folder)", path=path)
        if label in out:
            raise InvalidInput(f"--shared: two roots are labelled {label!r}; name them as LABEL=PATH")
        out[label] = path
    return out


def root_path(ns: argparse.Namespace, path: str) -> str:
    """A path a person typed (relative to the current directory, as in every
    command line, or absolute) as the library takes it: relative to the
    root, with ``/``. Raises ``InvalidInput`` for a path outside the root."""
    full = os.path.abspath(path)
    root = os.path.abspath(ns.root)
    # the root or the path may be reached through a link (a symlinked home):
    # their real folders are compared too, the file's own name kept as typed
    tries = ((root, full), (os.path.realpath(root),
                            os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))))
    for top, p in tries:
        rel = os.path.relpath(p, top)
        if rel not in (os.curdir, os.pardir) and not rel.startswith(os.pardir + os.sep):
            return rel.replace(os.sep, "/")
    raise InvalidInput(f"{path} is not inside the memory root {ns.root} (a path is relative to the current "
                       "directory, or absolute)", path=path)


def split_values(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def entry_text(e: Entry) -> str:
    head = f"{e.id}  {e.path}\n{e.title}  [{e.kind}, {e.status}, value {e.value:g}]"
    if e.tags:
        head += "  #" + " #".join(e.tags)
    return head + "\n\n" + e.body.rstrip("\n")


SECTION_ARGS = tuple(arg(f"--{name}", action="append", metavar="LINE",
                         help=f"a line of the '{heading}' section (repeatable)")
                     for name, heading in SECTIONS.items())
FIELD_ARG = arg("--field", dest="fields", action="append", metavar="KEY=VALUE",
                help="another frontmatter field; VALUE is read as YAML (42, true, [a, b]) (repeatable)")


def field_args(ns: argparse.Namespace) -> dict[str, Any]:
    """--evidence/--hesitation/… and --field KEY=VALUE as keyword fields."""
    import yaml
    out: dict[str, Any] = {k: getattr(ns, k) for k in SECTIONS if getattr(ns, k, None)}
    for item in getattr(ns, "fields", None) or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInput(f"--field takes KEY=VALUE, not {item!r}")
        if key in vars(ns) or key in ("text", "now", "expected"):  # a flag of its own: use it
            raise InvalidInput(f"--field {key}=… names an option of this command: use --{key} instead")
        try:
            out[key] = yaml.safe_load(value) if value.strip() else ""
        except Exception:  # noqa: BLE001 - any YAML a person types: kept as the text it is
            out[key] = value
    return out


ENTITY_ARG = arg("--entity", dest="entities", action="append", metavar="NAME=ROLE",
                 help="a person (organisation, place) the memory names, and their role: 张三=审查, "
                      "Alice=decided,deployed, or NAME alone (repeatable)")


def entity_args(values: list[str] | None) -> dict[str, Any] | None:
    """--entity NAME=ROLE[,ROLE…] (or NAME alone), repeated: name → its role,
    its roles, or None."""
    if not values:
        return None
    out: dict[str, list[str]] = {}
    for item in values:
        name, _, roles = item.partition("=")
        if not name.strip():
            raise InvalidInput(f"--entity takes NAME=ROLE, not {item!r}", what="entities")
        got = out.setdefault(name.strip(), [])
        got += [r.strip() for r in roles.split(",") if r.strip() and r.strip() not in got]
    return {name: roles[0] if len(roles) == 1 else roles or None for name, roles in out.items()}


def text_arg(value: str | None) -> str:
    """The text argument, or stdin's for none or ``-``. Raises
    ``InvalidInput`` for bytes on stdin that are not UTF-8."""
    if value is not None and value != "-":
        return value
    try:
        text = sys.stdin.read()
        text.encode("utf-8")  # (a surrogate: bytes stdin's error handler let through)
    except UnicodeError:
        raise InvalidInput("the text read from stdin is not UTF-8: save it as UTF-8, then try again") from None
    return text


# The arguments that name a file or a place (read as the file system's bytes,
# whatever they are); every other argument is text, which must be UTF-8.
PATH_ARGS = frozenset({"root", "path", "base", "ours", "theirs", "dir", "url", "turns", "jsonl", "source"})


def refuse_undecodable(ns: argparse.Namespace) -> None:
    """Refuse a text argument the terminal passed as bytes that are not UTF-8
    (Python hands them on as lone surrogates, which no note can hold).
    Raises ``InvalidInput`` showing the bytes."""
    for name, value in vars(ns).items():
        if name in PATH_ARGS:
            continue
        for v in value if isinstance(value, list) else [value]:
            if not isinstance(v, str):
                continue
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                shown = v.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                raise InvalidInput(f'an argument is not UTF-8 text: "{shown}" (bytes of another encoding); '
                                   "type it again in UTF-8") from None


def entry_out(e: Entry, verb: str) -> tuple[Any, str]:
    text = f"{verb} {e.id}  {e.path}"
    return e.to_dict(), "\n".join([text, *(f"warning: {w}" for w in e.warnings)])


# what a person types for a time: the root's timezone (policy.yaml) unless an offset says otherwise
TIME_HELP = "ISO 8601 date or time (without an offset: the root's timezone)"
SINCE_HELP = f"{TIME_HELP}, or 7d, 12h, 2w, today, yesterday"


def filter_args(p_args: tuple[Arg, ...] = ()) -> tuple[Arg, ...]:
    return (arg("--layer", action="append"), arg("--room"),
            arg("--tag", "--tags", dest="tags", action="append", help="a tag (repeatable): all are required"),
            arg("--kind", action="append"),
            arg("--entity", help="only memories naming this person (any of their names)"), *p_args)
