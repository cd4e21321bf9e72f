"""Vendor the page's JavaScript (``sediment view``) from the npm registry into
``sediment/web/static/vendor/``: the minified builds only, each package's
licence, and the licences of what a bundle carries inside.

    python tools/vendor_view.py                 # the versions pinned below
    python tools/vendor_view.py force-graph@1.53.0 uplot@1.6.33

Needs ``npm``. It installs the packages into a temporary folder (the registry
only; nothing is installed in the project), copies the files named in
``FILES``, writes ``THIRD-PARTY-<package>.txt`` with the licence of every
package in the bundle's dependency tree (as npm resolves it: the bundle was
built by its author from the same version ranges), and rewrites the table in
``VENDORED.md``. The page must then still pass ``tests/test_web.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parent.parent / "sediment" / "web" / "static" / "vendor"

PINNED = {"force-graph": "1.52.0", "uplot": "1.6.32", "markdown-it": "15.0.3"}

# package → (file in the package, name in vendor/)
FILES = {
    "force-graph": [("dist/force-graph.min.js", "force-graph.min.js")],
    "uplot": [("dist/uPlot.iife.min.js", "uPlot.iife.min.js"), ("dist/uPlot.min.css", "uPlot.min.css")],
    "markdown-it": [("dist/browser/markdown-it.umd.min.js", "markdown-it.min.js")],
}
# what a browser build bundles besides the package itself (its runtime dependencies;
# markdown-it's argparse is for its command line and is not in the browser build)
NOT_BUNDLED = {"argparse"}
LICENCE_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENSE-MIT.txt", "LICENCE", "COPYING")


def _licence(pkg_dir: Path) -> str:
    for name in LICENCE_NAMES:
        if (pkg_dir / name).is_file():
            return (pkg_dir / name).read_text(encoding="utf-8").strip()
    meta = json.loads((pkg_dir / "package.json").read_text(encoding="utf-8"))
    return f"(no licence file in the package; package.json says: {meta.get('license')})"


def _tree(node: dict, out: dict[str, str]) -> None:
    for name, dep in (node.get("dependencies") or {}).items():
        if name not in NOT_BUNDLED and "version" in dep:
            out[name] = dep["version"]
            _tree(dep, out)


def main(argv: list[str]) -> int:
    wanted = dict(PINNED)
    for spec in argv:
        name, _, version = spec.rpartition("@")
        wanted[name] = version
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["npm", "init", "-y"], cwd=tmp, check=True, capture_output=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", *(f"{k}@{v}" for k, v in wanted.items())],
                       cwd=tmp, check=True)
        tree = json.loads(subprocess.run(["npm", "ls", "--all", "--json"], cwd=tmp, check=True,
                                         capture_output=True, text=True).stdout)
        modules = Path(tmp) / "node_modules"
        for old in VENDOR.glob("*"):
            if old.name != "VENDORED.md":
                old.unlink()
        rows = []
        for pkg, version in wanted.items():
            for src, dst in FILES[pkg]:
                shutil.copyfile(modules / pkg / src, VENDOR / dst)
            (VENDOR / f"LICENSE-{pkg}").write_text(_licence(modules / pkg) + "\n", encoding="utf-8")
            inside: dict[str, str] = {}
            _tree(tree["dependencies"][pkg], inside)
            if inside:
                parts = [f"{name}@{v}\n{'=' * len(name + v + '@')}\n\n{_licence(modules / name)}\n"
                         for name, v in sorted(inside.items())]
                (VENDOR / f"THIRD-PARTY-{pkg}.txt").write_text(
                    f"The minified build of {pkg}@{version} bundles these packages; their licences follow.\n\n"
                    + "\n".join(parts), encoding="utf-8")
            files = ", ".join(f"`{dst}`" for _, dst in FILES[pkg])
            rows.append(f"| {pkg}@{version} | {files} | `LICENSE-{pkg}`"
                        + (f", `THIRD-PARTY-{pkg}.txt` ({len(inside)} bundled packages)" if inside else "") + " |")
    doc = VENDOR / "VENDORED.md"
    text = doc.read_text(encoding="utf-8")
    head, _, rest = text.partition("<!-- table -->")
    _, _, tail = rest.partition("<!-- /table -->")
    table = "| package | files | licences |\n| --- | --- | --- |\n" + "\n".join(rows)
    doc.write_text(f"{head}<!-- table -->\n{table}\n<!-- /table -->{tail}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
