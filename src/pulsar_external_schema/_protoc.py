"""grpcio-tools' protoc, run in this process: every use of its private compiler module.

`grpc_tools._protoc_compiler.get_protos` is what `grpc.protos()` imports `.proto` files with: it
compiles a file and those it imports from include paths (grpcio-tools ships the well-known types)
and answers each file's generated Python module, or raises `ProtocErrors` naming each error's
file, line and column. It prints nothing. A generated module carries its file's serialized
`FileDescriptorProto` as the bytes literal it hands `AddSerializedFile`; that literal is read here
with `ast`, never run. tests/unit/test_protobuf_compile.py holds this to the installed grpcio-tools.
"""

from __future__ import annotations

import ast
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from google.protobuf import descriptor_pb2

from ._signal import InternalSignal

__all__ = ["ProtocError", "compile_file"]

_LOCK = threading.Lock()  # protoc's importer is not documented thread-safe: one compile at a time


class ProtocError(InternalSignal):
    """The compiler's errors, as `file:line:column: message`, one per line (protobuf_text.py
    words them as the `SchemaParseError` of the schema)."""


def compile_file(main: str, files: Mapping[str, str]) -> descriptor_pb2.FileDescriptorProto:
    """The descriptor of `files[main]`, compiled with the other `files` (by import path) and the
    well-known types to import from."""
    import grpc_tools
    from grpc_tools import _protoc_compiler

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory(prefix="pulsar-external-schema-proto-") as where:
        for name, text in files.items():
            path = PurePosixPath(name)
            if path.is_absolute() or ".." in path.parts or not path.parts:
                raise ProtocError(f"{name}: an import path must be relative, without '..'")
            target = Path(where, *path.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        try:
            with _LOCK:
                generated = _protoc_compiler.get_protos(
                    main.encode(), [where.encode(), str(well_known).encode()]
                )
        except _protoc_compiler.ProtocErrors as error:
            raise ProtocError("\n".join(_line(e) for e in error.errors())) from None
    for _module, code in generated:
        proto = _descriptor(code)
        if proto is not None and proto.name == main:
            return proto
    raise ProtocError(f"{main}: protoc gave no descriptor of it")


def _line(error: object) -> str:
    def text(value: object) -> str:
        return value.decode(errors="replace") if isinstance(value, bytes) else str(value)

    where = text(getattr(error, "filename", ""))
    line, column = getattr(error, "line", -1), getattr(error, "column", -1)
    at = f"{where}:{line + 1}:{column + 1}" if isinstance(line, int) and line >= 0 else where
    return f"{at}: {text(getattr(error, 'message', error))}"


def _descriptor(code: bytes) -> descriptor_pb2.FileDescriptorProto | None:
    """The `FileDescriptorProto` a generated module adds to its pool."""
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "AddSerializedFile"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, bytes)
        ):
            return descriptor_pb2.FileDescriptorProto.FromString(node.args[0].value)
    return None
