"""The extension's Python API is its stub's (native/_pulsar_external_schema_native.pyi), the one
list of it: the built module has every name the stub declares and no other, at the top level, in
each class and in the `_testing` submodule (what only the tests call, typed in the stub as a
namespace of its functions), and each function and method the parameters the stub gives it."""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from native_support import required_extension

STUB = Path(__file__).resolve().parents[2] / "native" / "_pulsar_external_schema_native.pyi"
#: The submodule of what only the tests and benchmarks call.
TESTING = "_testing"


def dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def stub() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def declared(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """The names a stub's module or class body declares, each with its declaration; not its type
    aliases (`X: TypeAlias = ...`), which are the stub's own."""
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            alias = isinstance(node.annotation, ast.Name) and node.annotation.id == "TypeAlias"
            if not alias:
                names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            names.update({target.id: node for target in node.targets if isinstance(target, ast.Name)})
    return names


def stub_classes() -> dict[str, ast.ClassDef]:
    """The stub's classes of the module's top level (not `_testing`, a submodule)."""
    return {
        name: node
        for name, node in declared(stub().body).items()
        if isinstance(node, ast.ClassDef) and name != TESTING
    }


def stub_testing() -> ast.ClassDef:
    node = declared(stub().body).get(TESTING)
    assert isinstance(node, ast.ClassDef), f"the stub declares no `{TESTING}` namespace"
    return node


def differences(built: set[str], typed: set[str]) -> str:
    return f"only in the built module: {sorted(built - typed)}; only in the stub: {sorted(typed - built)}"


def own_names(module: ModuleType) -> set[str]:
    """The module's names but dunders, `_testing` and, where maturin installed the extension as a
    package (to ship the stub in it), the compiled module that package re-exports."""
    compiled = module.__name__.rpartition(".")[2]
    inner = getattr(module, compiled, None)
    return {
        name
        for name in dir(module)
        if not dunder(name) and name != TESTING and not (name == compiled and isinstance(inner, ModuleType))
    }


def test_the_module_has_the_names_the_stub_declares_and_no_other() -> None:
    module = required_extension()
    built = own_names(module)
    names = declared(stub().body)
    typed = {name for name in names if not dunder(name)} - {TESTING}
    assert built == typed, differences(built, typed)
    assert isinstance(getattr(module, TESTING, None), ModuleType)
    missing = [name for name in names if dunder(name) and not hasattr(module, name)]
    assert missing == [], f"declared in the stub, not in the built module: {missing}"
    # what the extension registered (PyO3 lists it in `__all__`) is the same
    registered = set(getattr(module, "__all__", ()))
    assert registered == set(names), differences(registered, set(names))


def test_each_class_has_the_methods_the_stub_declares_and_no_other() -> None:
    module = required_extension()
    for name, node in stub_classes().items():
        cls = getattr(module, name)
        members = declared(node.body)
        built = {member for member in vars(cls) if not dunder(member)}
        typed = {member for member in members if not dunder(member)}
        assert built == typed, f"{name}: {differences(built, typed)}"
        missing = [member for member in members if dunder(member) and not hasattr(cls, member)]
        assert missing == [], f"{name}: declared in the stub, not in the built class: {missing}"


def test_the_testing_submodule_has_the_functions_the_stub_declares_and_no_other() -> None:
    testing = getattr(required_extension(), TESTING)
    built = {name for name in dir(testing) if not dunder(name)}
    typed = set(declared(stub_testing().body))
    assert built == typed, differences(built, typed)


Parameters = list[tuple[str, Any, bool]]


def typed_parameters(node: ast.FunctionDef) -> Parameters:
    """(name, kind, whether it has a default) of each parameter the stub gives `node` (not `self`)."""
    arguments = node.args
    ordered = [*arguments.posonlyargs, *arguments.args]
    defaults = [False] * (len(ordered) - len(arguments.defaults)) + [True] * len(arguments.defaults)
    kinds = [inspect.Parameter.POSITIONAL_ONLY] * len(arguments.posonlyargs) + [
        inspect.Parameter.POSITIONAL_OR_KEYWORD
    ] * len(arguments.args)
    found: Parameters = [(a.arg, k, d) for a, k, d in zip(ordered, kinds, defaults, strict=True)]
    if arguments.vararg is not None:
        found.append((arguments.vararg.arg, inspect.Parameter.VAR_POSITIONAL, False))
    found += [
        (a.arg, inspect.Parameter.KEYWORD_ONLY, default is not None)
        for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    ]
    if arguments.kwarg is not None:
        found.append((arguments.kwarg.arg, inspect.Parameter.VAR_KEYWORD, False))
    return [p for p in found if p[0] != "self"]


def built_parameters(function: Any) -> Parameters | None:
    """The same of the built function or class (None where it gives no signature)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    found = [(p.name, p.kind, p.default is not p.empty) for p in signature.parameters.values()]
    return [p for p in found if p[0] != "self"]


def signatures() -> Iterator[Any]:
    """A case for every function and method the stub types: its stub declaration and where it is
    in the module, the names from the module down (`__init__`: the class's own signature; no other
    dunder, whose signature is Python's; no property)."""
    for name, node in declared(stub().body).items():
        if isinstance(node, ast.FunctionDef):
            yield pytest.param(node, (name,), id=name)
    for name, node in declared(stub_testing().body).items():
        if isinstance(node, ast.FunctionDef):
            yield pytest.param(node, (TESTING, name), id=f"{TESTING}.{name}")
    for cls, body in stub_classes().items():
        for name, node in declared(body.body).items():
            if not isinstance(node, ast.FunctionDef) or any(
                isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list
            ):
                continue
            if name == "__init__":
                yield pytest.param(node, (cls,), id=cls)
            elif not dunder(name):
                yield pytest.param(node, (cls, name), id=f"{cls}.{name}")


@pytest.mark.parametrize(("node", "path"), list(signatures()))
def test_each_function_takes_the_parameters_the_stub_gives_it(
    node: ast.FunctionDef, path: tuple[str, ...]
) -> None:
    built = built_parameters(functools.reduce(getattr, path, required_extension()))
    assert built is not None, "the built module gives no signature of it (PyO3 gives one of each)"
    assert built == typed_parameters(node)
