"""Package edges: layers point one way, no private names cross a package, extras stay optional.

The import graph is read from the source (every import, including those inside functions and
under ``TYPE_CHECKING``: a lazy import is still a dependency). Run as a script to print it:

    .venv/bin/python tests/project/test_package_edges.py
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: The layers, lowest first: a package may import only packages of lower layers ("__init__"
#: is the package root, where ``evidex.__version__`` lives). The README's design section and
#: ARCHITECTURE.md describe the same order.
LAYERS: list[set[str]] = [
    {"model"},
    {"extras", "yamlfile"},
    {"query", "ingest", "embed", "cadence", "notify"},
    {"store"},
    {"retrieve", "conflicts", "cite", "tools", "check", "_batch", "_checks"},
    {"decide", "_writes"},
    {"answer", "_vectors"},
    {"kb", "config"},
    {"knowledge"},
    {"placement"},
    {"__init__", "evaluation", "sources"},
    {"server"},
    {"cli"},
]
#: Modules of each extra, which ``import evidex`` must not load.
EXTRA_MODULES = {
    "server": ["fastapi", "starlette", "uvicorn", "jwt", "mcp", "mcp_types"],
    "formats": ["pypdf", "docx", "selectolax"],
    "postgres": ["psycopg", "psycopg_pool"],
}


def _module_name(path: Path) -> tuple[list[str], list[str]]:
    """(module path parts, package parts) of a source file."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return parts, parts
    return parts, parts[:-1]


def _top(parts: list[str]) -> str:
    return parts[1] if len(parts) > 1 else "__init__"


def imports() -> list[tuple[str, list[str], list[str]]]:
    """(importing file, imported module parts, imported names) for every evidex import."""
    found = []
    for path in sorted((SRC / "evidex").rglob("*.py")):
        _, package = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)]
                    target = base + (node.module.split(".") if node.module else [])
                else:
                    target = (node.module or "").split(".")
                names = [a.name for a in node.names]
                if target == ["evidex"]:  # ``from evidex import x``: x may be a module
                    for name in names:
                        found.append((str(path), ["evidex", name], []))
                    continue
                found.append((str(path), target, names))
            elif isinstance(node, ast.Import):
                found.extend((str(path), a.name.split("."), []) for a in node.names)
    return [f for f in found if f[1][0] == "evidex"]


def graph() -> dict[str, set[str]]:
    """Top-level package -> the top-level packages it imports."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path, target, _ in imports():
        src = _top(_module_name(Path(path))[0])
        dst = "__init__" if target[1:] in ([], ["__version__"]) else target[1]
        if src != dst:
            edges[src].add(dst)
    return edges


def table() -> str:
    """The import graph as a Markdown table, packages in layer order."""
    order = [p for layer in LAYERS for p in sorted(layer)]
    edges = graph()
    rows = ["| package | imports |", "|---|---|"]
    rows += [f"| `{p}` | {', '.join(f'`{d}`' for d in sorted(edges.get(p, ()), key=order.index))} |"
             for p in order]
    return "\n".join(rows)


ARCHITECTURE = SRC.parent / "ARCHITECTURE.md"


def documented_layers() -> set[tuple[int, str]]:
    """(layer, package) of each row of ARCHITECTURE.md's layer table (``| 3 | `store/` | ...``)."""
    rows = re.findall(r"^\| (\d+) \| `([^`]+)` \|", ARCHITECTURE.read_text(encoding="utf-8"), re.M)
    return {(int(layer), name.removesuffix("/").removesuffix(".py")) for layer, name in rows}


def test_the_architecture_map_has_every_package_in_its_layer() -> None:
    """ARCHITECTURE.md's layer table is LAYERS: a package added, moved or removed in the code
    and not in the map (or the other way round) fails here."""
    assert documented_layers() == {(i, p) for i, layer in enumerate(LAYERS) for p in layer}


def test_the_architecture_map_shows_every_import_between_packages() -> None:
    """ARCHITECTURE.md's package graph is the graph read from the code, row for row (print it
    with this file run as a script and paste it when an import between packages changes)."""
    assert table() + "\n\n" in ARCHITECTURE.read_text(encoding="utf-8")


def test_every_package_has_a_layer() -> None:
    packages = {p.stem if p.is_file() else p.name for p in (SRC / "evidex").iterdir()
                if (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert packages == {p for layer in LAYERS for p in layer}


def test_layers_point_one_way() -> None:
    """Every import goes to a lower layer, so there is no cycle, lazy or not."""
    rank = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    upward = sorted((src, dst) for src, dsts in graph().items() for dst in dsts
                    if rank[dst] >= rank[src])
    assert upward == []


def test_no_private_name_crosses_a_package() -> None:
    """A private module or name is used only inside its own package, and inside a package a
    private name is used only in the module that defines it."""
    crossing = []
    for path, target, names in imports():
        src_parts = _module_name(Path(path))[0]
        src_top, dst_top = _top(src_parts), _top(target)
        private_module = any(p.startswith("_") for p in target[2:])
        private_names = [n for n in names if n.startswith("_") and n != "__version__"
                         and not _is_module([*target, n])]
        if src_top != dst_top and (private_module or private_names):
            crossing.append((path, ".".join(target), names))
        elif src_top == dst_top and private_names and target != src_parts:
            crossing.append((path, ".".join(target), private_names))
    assert crossing == []


def module_graph() -> dict[str, set[str]]:
    """Module -> the evidex modules it imports (``evidex.store._core``; a package is its
    ``__init__``). ``from . import x`` is an import of module ``x`` when there is one."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path, target, names in imports():
        src = ".".join(_module_name(Path(path))[0])
        modules = [[*target, n] for n in names if _is_module([*target, n])]
        if len(modules) < len(names) or not names:  # a name defined in the module itself
            modules.append(target)
        for parts in modules:
            if not _is_module(parts):  # ``from evidex import __version__``: the package
                parts = parts[:-1]
            if ".".join(parts) != src:
                edges[src].add(".".join(parts))
    return edges


def import_circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_circle_between_modules() -> None:
    """No module imports, through any chain, a module that imports it: type-only imports
    (``TYPE_CHECKING``) and imports inside functions count, since each is a dependency a reader
    has to follow and a change has to keep in step."""
    assert import_circles(module_graph()) == []


def test_the_module_graph_holds_type_only_and_lazy_imports() -> None:
    """The store's package imports ``_postgres`` only under ``TYPE_CHECKING`` and inside a
    function; both are edges of the graph the circle check reads."""
    assert "evidex.store._postgres" in module_graph()["evidex.store"]


def test_the_circle_finder_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert import_circles(edges) == [["a", "b", "c"]]


def _inner_packages() -> list[str]:
    return sorted(p.name for p in (SRC / "evidex").iterdir() if (p / "__init__.py").is_file())


def exported(package: str) -> set[str]:
    """The names a package's ``__init__`` exports: its ``__all__``, or without one every public
    name it binds at top level."""
    tree = ast.parse((SRC / "evidex" / package / "__init__.py").read_text(encoding="utf-8"))
    bound: set[str] = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "__all__"):
            return set(ast.literal_eval(node.value))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in bound if not n.startswith("_")}


def used_from_outside() -> dict[str, set[str]]:
    """Package -> the names of it that modules of *other* evidex packages (or the top-level
    modules) use: ``from evidex.P import name`` and, where a module binds the package itself
    (``from . import retrieve``), every ``retrieve.name`` it reads."""
    used: dict[str, set[str]] = defaultdict(set)
    for path, target, names in imports():
        if len(target) == 2 and target[1] != _top(_module_name(Path(path))[0]):
            used[target[1]].update(names)
    for path in sorted((SRC / "evidex").rglob("*.py")):
        parts, package = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}  # local name -> the evidex package it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = (package[: len(package) - (node.level - 1)] if node.level else [])
                target = target + (node.module.split(".") if node.module else [])
                if target == ["evidex"]:
                    aliases.update({a.asname or a.name: a.name for a in node.names})
            elif isinstance(node, ast.Import):
                aliases.update({a.asname: a.name.split(".")[1] for a in node.names
                                if a.asname and len(a.name.split(".")) == 2
                                and a.name.startswith("evidex.")})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and aliases[node.value.id] != _top(parts)):
                used[aliases[node.value.id]].add(node.attr)
    return used


def unused_exports() -> dict[str, list[str]]:
    """Inner package -> the names its ``__init__`` exports that no other evidex package uses."""
    used = used_from_outside()
    return {p: sorted(exported(p) - used[p]) for p in _inner_packages()}


#: At most this many exported names per inner package may serve only tests, benchmarks or
#: users of the package itself; the rest of a package's surface is what evidex depends on.
MAX_UNUSED_EXPORTS = 10


def test_an_inner_package_exports_what_other_packages_use() -> None:
    over = {p: names for p, names in unused_exports().items() if len(names) > MAX_UNUSED_EXPORTS}
    assert over == {}


def test_what_other_packages_use_is_exported() -> None:
    """A name another package imports from a package's ``__init__`` is in its ``__all__``."""
    used = used_from_outside()
    missing = {p: sorted(used[p] - exported(p) - _submodules(p)) for p in _inner_packages()}
    assert {p: m for p, m in missing.items() if m} == {}


def _submodules(package: str) -> set[str]:
    folder = SRC / "evidex" / package
    return {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir()
                                                     if (p / "__init__.py").is_file()}


def _is_module(parts: list[str]) -> bool:
    path = SRC.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _modules_after_import(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env).stdout
    return json.loads(out)


@pytest.fixture(scope="module")
def loaded_by_import() -> set[str]:
    return {m.split(".")[0] for m in _modules_after_import("import evidex")}


@pytest.mark.parametrize("extra", ["server", "formats"])
def test_import_evidex_loads_no_extra(loaded_by_import: set[str], extra: str) -> None:
    assert loaded_by_import.isdisjoint(EXTRA_MODULES[extra])


def test_import_evidex_does_not_load_postgres(loaded_by_import: set[str]) -> None:
    assert loaded_by_import.isdisjoint(EXTRA_MODULES["postgres"])


def test_import_evidex_loads_no_cli_or_http_client(loaded_by_import: set[str]) -> None:
    """httpx (whose import pulls click and rich) and typer load only when used."""
    assert loaded_by_import.isdisjoint({"httpx", "click", "rich", "typer"})


def _run_blocked(blocked: list[str], code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a Python where the ``blocked`` modules cannot be found, as if their
    packages were not installed (a ``None`` in ``sys.modules`` makes import and find_spec
    fail)."""
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked)
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True,
                          timeout=120)


def test_serve_without_the_server_extra_is_one_line_naming_the_install(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("server:\n  api_keys:\n    - key_sha256: '" + "0" * 64 + "'\n"
                      "      tenant: acme\n", encoding="utf-8")
    code = ("from evidex.cli import main\n"
            f"sys.argv = ['evidex', '--db', {str(tmp_path / 'kb.db')!r}, 'serve', '--config', "
            f"{str(config)!r}]\nmain()\n")
    proc = _run_blocked(["fastapi"], code)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "error: the evidex service needs the 'server' extra (fastapi is not installed): "
        "pip install 'evidex[server]'"]


def test_postgres_without_its_extra_is_one_line_and_sqlite_works(tmp_path: Path) -> None:
    """Without psycopg the embedded SQLite store ingests and searches; a PostgreSQL location is
    the install line, from the library and from the CLI."""
    code = ("from evidex import Actor, Document, KnowledgeBase, MissingExtraError\n"
            f"with KnowledgeBase.open({str(tmp_path / 'kb.db')!r}) as kb:\n"
            "    kb.ingest(Document('d', 't', frozenset({'g'}), '1', 'alpha beta', visibility='public'))\n"
            "    print([h.document_id for h in kb.search(Actor('t', frozenset({'g'})), 'alpha')])\n"
            "try:\n    KnowledgeBase.open('postgresql://nobody@localhost/db')\n"
            "except MissingExtraError as e:\n    print(e)\n"
            "print(sorted(m for m in sys.modules if m.startswith('evidex.store._p')))\n"
            "from evidex.cli import main\n"
            "sys.argv = ['evidex', '--db', 'postgresql://nobody@localhost/db', 'stats']\nmain()\n")
    proc = _run_blocked(["psycopg"], code)
    line = ("a PostgreSQL store needs the 'postgres' extra (psycopg is not installed): "
            "pip install 'evidex[postgres]'")
    assert proc.stdout.splitlines() == ["['d']", line, "[]"]
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [f"error: {line}"]


def test_a_pdf_without_the_formats_extra_is_rejected_with_the_install_line(tmp_path: Path) -> None:
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4\n")
    (tmp_path / "b.md").write_text("# Kept\n\nMarkdown needs no extra.\n", encoding="utf-8")
    code = ("import json\nfrom pathlib import Path\nfrom evidex.ingest import load_paths\n"
            f"r = load_paths([Path({str(tmp_path)!r})], {{'tenant': 't', 'groups': ['g']}})\n"
            "print(json.dumps([[d.id for d in r.documents], [x.reason for x in r.rejected]]))\n")
    proc = _run_blocked(["pypdf"], code)
    assert proc.returncode == 0, proc.stderr
    kept, reasons = json.loads(proc.stdout)
    assert kept == ["b.md"]
    assert reasons == ["reading PDF files needs the 'formats' extra (pypdf is not installed): "
                       "pip install 'evidex[formats]'"]


if __name__ == "__main__":
    print(table())
    print("\n| package | exported names no other package uses |\n|---|---|")
    for name, names in unused_exports().items():
        print(f"| `{name}` | {len(names)}: {', '.join(names)} |")
