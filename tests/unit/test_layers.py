"""The package's layers, read from the source: what may import what (the list below is the
reference; the modules' own docstrings say why each sits where it does).

Layers, bottom first; a module imports only from its own layer or lower ones (imports under
`if TYPE_CHECKING:` are for annotations and run nothing, so they are not counted):

0. leaves: `errors`, `metrics/` (rule counts and their exporters), the private helpers
   `_imports`, `_deprecated`, `_secrets`, `_version`, `_signal` (the internal signals' root),
   `_settings` (the one reading of a setting's boolean or integer),
   `_native` (the optional native extension, where installed), and `registry` / `redaction`
   (what a registry error means, what a value must not show);
1. `config`, `connections` (Pulsar's client configuration), `schema_id`, `subjects`,
   `rules.settings` (the rule engine's part of the config), the quarantines `_confluent`,
   `_pulsar_client`, `_fastavro` and `_protoc` (every use of confluent-kafka's, pulsar-client's,
   fastavro's and grpcio-tools' private API);
2. `codec/`, `rules/`, `evolution/`, and what they share: `deadletter`, `protobuf_text`, `admin`;
3. `schema`, `factory` and the registry glue beside it (`json_evolution`, `topic_schemas`,
   `registered_schema`);
4. `producer`, `consumer`, `functions/`, `reading/` and `writing/` (topics read into Arrow and
   Arrow rows written to topics, no Spark needed) side by side on `tasks/` (what both need:
   options, kept clients and schemas, topic metadata, conditions over a batch), with their
   public face `arrow`;
5. `spark/` (the data source and the validation job, over `reading/`), `cli/`;
6. the package root, which only re-exports.

`evolution/` holds checkers only: it imports nothing of the package but `errors`, `_imports` and
`_deprecated`.
No import cycles, inside a layer either: neither between modules nor between the units above (a
module, or a package such as `codec/` or `rules/`, whose modules then import nothing of each other's
unit both ways: `rules/` imports nothing of `codec/`).
And no module imports another module's private name, or reads one as an attribute of the module
(`ids._HEX`); only the two quarantines import a library's private module (`_pulsar`,
`confluent_kafka.schema_registry._sync...`).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import pulsar_external_schema
import pulsar_external_schema.evolution

PACKAGE = "pulsar_external_schema"
SOURCE = Path(pulsar_external_schema.__file__).parent

LAYERS: dict[str, int] = {
    "errors": 0,
    "_imports": 0,
    "_deprecated": 0,
    "_secrets": 0,
    "_version": 0,
    "_signal": 0,
    "_settings": 0,
    "_native": 0,
    "metrics": 0,
    "registry": 0,
    "redaction": 0,
    "config": 1,
    "connections": 1,
    "schema_id": 1,
    "subjects": 1,
    "rules.settings": 1,
    "_confluent": 1,
    "_pulsar_client": 1,
    "_fastavro": 1,
    "_protoc": 1,
    "codec": 2,
    "rules": 2,
    "evolution": 2,
    "deadletter": 2,
    "protobuf_text": 2,
    "admin": 2,
    "schema": 3,
    "factory": 3,
    "json_evolution": 3,
    "topic_schemas": 3,
    "registered_schema": 3,
    "producer": 4,
    "consumer": 4,
    "functions": 4,
    "tasks": 4,
    "reading": 4,
    "writing": 4,
    "arrow": 4,
    "spark": 5,
    "cli": 5,
    "": 6,
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, ast.parse(path.read_text(encoding="utf-8"))


def _is_package(name: str) -> bool:
    return (SOURCE / name.replace(".", "/") / "__init__.py").exists() or (
        bool(name) and (SOURCE / name.replace(".", "/")).is_dir()
    )


def _runtime_imports(tree: ast.Module) -> Iterator[ast.ImportFrom | ast.Import]:
    """Every import statement except those under `if TYPE_CHECKING:`."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for statement in node.body for child in ast.walk(statement))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
            yield node


def _imports(name: str, tree: ast.Module) -> Iterator[tuple[str, str]]:
    """(imported module relative to the package, imported name or '') for each package import."""
    package = name if _is_package(name) else name.rpartition(".")[0]
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE):
                    yield alias.name.removeprefix(PACKAGE).lstrip("."), ""
            continue
        if node.level:
            base = package.split(".") if package else []
            base = base[: len(base) - node.level + 1]
            target = ".".join([*base, *([node.module] if node.module else [])])
        elif node.module and node.module.startswith(PACKAGE):
            target = node.module.removeprefix(PACKAGE).lstrip(".")
        else:
            continue
        for alias in node.names:
            child = f"{target}.{alias.name}" if target else alias.name
            if _is_package(child) or (SOURCE / f"{child.replace('.', '/')}.py").exists():
                yield child, ""  # `from . import module`: the module itself
            else:
                yield target, alias.name


def _layer(module: str) -> int:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in LAYERS:
            return LAYERS[".".join(parts[:end])]
    return LAYERS[module]


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for name, _ in _modules():
        try:
            _layer(name)
        except KeyError:
            unplaced.append(name)
    assert unplaced == []


def test_no_module_imports_from_a_higher_layer() -> None:
    upward = [
        f"{name} (layer {_layer(name)}) imports {target} (layer {_layer(target)})"
        for name, tree in _modules()
        for target, _ in _imports(name, tree)
        if _layer(target) > _layer(name)
    ]
    assert upward == []


def _unit(module: str) -> str:
    """The entry of `LAYERS` a module belongs to (`codec.part`: `codec`; `rules.settings` itself)."""
    parts = module.split(".")
    return next(".".join(parts[:end]) for end in range(len(parts), 0, -1) if ".".join(parts[:end]) in LAYERS)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for child in sorted(graph.get(node, ())):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _import_graph() -> dict[str, set[str]]:
    return {
        name: {target for target, _ in _imports(name, tree) if target != name} for name, tree in _modules()
    }


def test_reading_and_writing_stand_side_by_side_on_the_task_layer() -> None:
    """`writing/` imports nothing of `reading/` (nor the other way), and `tasks/`, which both
    take what they share from, imports neither: each can change without the other."""
    crossing = [
        f"{name} imports {target}"
        for name, tree in _modules()
        for target, _ in _imports(name, tree)
        for below, apart in (
            ("writing", "reading"),
            ("reading", "writing"),
            ("tasks", "reading"),
            ("tasks", "writing"),
        )
        if name.split(".")[0] == below and target.split(".")[0] == apart
    ]
    assert crossing == []


def test_no_import_cycles_between_modules() -> None:
    assert _cycles(_import_graph()) == []


def test_no_import_cycles_between_units_of_a_layer() -> None:
    units: dict[str, set[str]] = {}
    for name, targets in _import_graph().items():
        units.setdefault(_unit(name), set()).update(_unit(t) for t in targets if _unit(t) != _unit(name))
    assert _cycles(units) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _unit("codec.part") == "codec" and _unit("rules.settings") == "rules.settings"


def test_evolution_holds_checkers_only() -> None:
    reaching_out = sorted(
        {
            f"{name} imports {target}"
            for name, tree in _modules()
            if name.startswith("evolution")
            for target, _ in _imports(name, tree)
            if not target.startswith("evolution") and target not in ("errors", "_imports", "_deprecated")
        }
    )
    assert reaching_out == []


def test_no_module_imports_another_modules_private_name() -> None:
    private = [
        f"{name} imports {imported} from {target}"
        for name, tree in _modules()
        for target, imported in _imports(name, tree)
        if imported.startswith("_") and not imported.startswith("__") and target != name
    ]
    assert private == []


#: The modules that may touch a library's private API (their docstrings say why; tests hold
#: each to the installed library: test_codec_touch_points.py, test_codec_avro_reader.py and
#: tests/integration/test_pulsar_touch_points.py).
QUARANTINES = frozenset({"_confluent", "_pulsar_client", "_fastavro", "_protoc"})
#: The package's own native extension (native/), whose name starts with an underscore as a
#: compiled module's does; only its gate, `_native`, imports it.
NATIVE = "_pulsar_external_schema_native"


def _module_aliases(name: str, tree: ast.Module) -> dict[str, str]:
    """Local name -> the package module it is bound to (`from . import schema_id as ids`)."""
    package = name if _is_package(name) else name.rpartition(".")[0]
    aliases = {}
    for node in _runtime_imports(tree):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package.split(".") if package else []
        base = base[: len(base) - node.level + 1]
        target = ".".join([*base, *([node.module] if node.module else [])])
        for alias in node.names:
            child = f"{target}.{alias.name}" if target else alias.name
            if _is_package(child) or (SOURCE / f"{child.replace('.', '/')}.py").exists():
                aliases[alias.asname or alias.name] = child
    return aliases


def test_no_module_reads_another_modules_private_name() -> None:
    reads = [
        f"{name} reads {node.value.id}.{node.attr} ({aliases[node.value.id]})"
        for name, tree in _modules()
        for aliases in [_module_aliases(name, tree)]
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in aliases
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]
    assert reads == []


def test_only_the_quarantines_import_a_librarys_private_modules() -> None:
    private = sorted(
        f"{name} imports {module}"
        for name, tree in _modules()
        if name not in QUARANTINES
        for node in _runtime_imports(tree)
        if not node.__dict__.get("level")
        for module in (
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        if not module.startswith((PACKAGE, NATIVE))
        and any(part.startswith("_") and not part.startswith("__") for part in module.split("."))
    )
    assert private == []


def test_only_the_gate_imports_the_native_extension() -> None:
    """`_native.extension()` is the one way to the extension, in the package, its tests and its
    benchmarks: tests patch that one name, and the gate checks the extension's ABI first."""
    repository = SOURCE.parents[1]
    importers = sorted(
        str(path.relative_to(repository))
        for folder in ("src", "tests", "benchmarks", "examples")
        for path in (repository / folder).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Import) and any(a.name.split(".")[0] == NATIVE for a in node.names))
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == NATIVE)
    )
    assert importers == ["src/pulsar_external_schema/_native.py"]


def test_the_checks_see_the_imports_they_judge() -> None:
    """The checks above would pass on a parser that finds nothing: these imports must be found."""
    found = {name: set(_imports(name, tree)) for name, tree in _modules()}
    assert ("rules.settings", "RuleSettings") in found["config"]
    assert ("_confluent", "") in found["factory"]  # `from . import _confluent`
    assert _module_aliases("reading.rows", dict(_modules())["reading.rows"])["ids"] == "schema_id"
    assert ("evolution.creek", "parse_schema") in found["factory"]
    assert ("reading.planning", "Planner") in found["reading.decoders"]
    assert not any(target == "evolution.differences" for target, _ in found["errors"])  # TYPE_CHECKING
    assert _layer("codec.part") == 2 and _layer("rules.settings") == 1 and _layer("") == 6


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            _ = pulsar_external_schema.Nope
