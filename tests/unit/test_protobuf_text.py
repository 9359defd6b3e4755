"""render_proto: `.proto` text that protoc compiles back to the same descriptor."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from pulsar_external_schema.errors import UnsupportedProtobufError
from pulsar_external_schema.protobuf_text import render_proto

protoc = pytest.importorskip("grpc_tools.protoc", reason="grpcio-tools (dev extra) provides protoc")

SOURCES = {
    "proto3_everything.proto": """
syntax = "proto3";
package acme.sales;
import "google/protobuf/timestamp.proto";
option java_package = "com.acme.sales";
option java_multiple_files = true;

enum Status {
  option allow_alias = true;
  UNKNOWN = 0; OPEN = 1; ACTIVE = 1; CLOSED = 2 [deprecated = true];
  reserved 10 to 20;
  reserved "GONE";
}

message Order {
  reserved 15, 20 to 25;
  reserved "legacy";
  message Line { string sku = 1; int32 quantity = 2; double price = 3; }
  enum Channel { WEB = 0; SHOP = 1; }
  int64 id = 1;
  string customer_name = 2 [json_name = "customer"];
  repeated Line lines = 3;
  map<string, int64> counters = 4;
  map<int32, Line> lines_by_number = 5;
  optional string note = 6;
  oneof payment { string card = 7; bytes token = 8; Line voucher = 9; }
  google.protobuf.Timestamp created = 10;
  Status status = 11;
  Channel channel = 12;
  repeated int32 packed_numbers = 13 [packed = false];
  bool flag = 14 [deprecated = true];
  sint32 a = 30; sint64 b = 31; fixed32 c = 32; fixed64 d = 33; sfixed32 e = 34; sfixed64 f = 35;
  float g = 36; uint32 h = 37; uint64 i = 38;
}

service Orders {
  rpc Get (Order) returns (Order);
  rpc Watch (stream Order) returns (stream Order) { option deprecated = true; }
}
""",
    "proto2_defaults.proto": """
syntax = "proto2";
package legacy;
message Record {
  required int32 id = 1;
  optional string name = 2 [default = "it's \\"quoted\\"\\n"];
  optional bytes blob = 3 [default = "\\001\\377"];
  optional double ratio = 4 [default = 0.5];
  optional Kind kind = 5 [default = B];
  optional bool on = 6 [default = true];
  repeated int32 numbers = 7 [packed = true];
  extensions 100 to max;
  enum Kind { A = 1; B = 2; }
}
extend Record { optional string extra = 100; }
""",
    "custom_options.proto": """
syntax = "proto3";
package tagged;
import "google/protobuf/descriptor.proto";
message Meta { repeated string tags = 1; map<string, string> params = 2; }
extend google.protobuf.FieldOptions { Meta field_meta = 50001; }
message Customer {
  string ssn = 1 [(tagged.field_meta) = { tags: ["PII"], params: { key: "k" value: "v" } }];
  string name = 2;
}
""",
}


def compile_proto(directory: Path, name: str) -> descriptor_pb2.FileDescriptorProto:
    import importlib.resources

    include = importlib.resources.files("grpc_tools") / "_proto"
    out = directory / (name + ".pb")
    code = protoc.main(["protoc", f"-I{directory}", f"-I{include}", f"--descriptor_set_out={out}", name])
    assert code == 0, f"protoc failed on {name}:\n{(directory / name).read_text()}"
    descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    (file,) = [f for f in descriptor_set.file if f.name == name]
    return file


def load_into_default_pool(file: descriptor_pb2.FileDescriptorProto) -> None:
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(file.name)
    except KeyError:
        pool.Add(file)
    message_factory.GetMessageClassesForFiles([file.name], pool)


def normalized(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(file)
    copy.ClearField("source_code_info")
    copy.ClearField("name")
    return copy


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_rendered_text_compiles_to_the_same_descriptor(tmp_path: Path, name: str) -> None:
    (tmp_path / "original").mkdir()
    (tmp_path / "original" / name).write_text(SOURCES[name])
    original = compile_proto(tmp_path / "original", name)
    if name == "custom_options.proto":
        # As with a generated _pb2 module: the extension is known to Python once its file is loaded.
        load_into_default_pool(original)
        original = descriptor_pb2.FileDescriptorProto.FromString(original.SerializeToString())

    text = render_proto(original)
    (tmp_path / "rendered").mkdir()
    (tmp_path / "rendered" / name).write_text(text)
    rendered = compile_proto(tmp_path / "rendered", name)

    assert normalized(rendered) == normalized(original), text


def test_custom_options_of_unloaded_extensions_are_refused_not_dropped(tmp_path: Path) -> None:
    source = (
        SOURCES["custom_options.proto"]
        .replace("package tagged;", "package unloaded;")
        .replace("(tagged.field_meta)", "(unloaded.field_meta)")
        .replace("50001", "50002")
    )
    (tmp_path / "unloaded.proto").write_text(source)
    file = compile_proto(tmp_path, "unloaded.proto")

    with pytest.raises(UnsupportedProtobufError, match="custom option whose extension is not loaded"):
        render_proto(file)


def test_groups_and_editions_are_refused() -> None:
    editions = descriptor_pb2.FileDescriptorProto(name="e.proto", syntax="editions")
    with pytest.raises(UnsupportedProtobufError, match="editions"):
        render_proto(editions)
    grouped = descriptor_pb2.FileDescriptorProto(name="g.proto", syntax="proto2")
    message = grouped.message_type.add(name="M")
    message.field.add(
        name="g",
        number=1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_GROUP,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        type_name=".M.G",
    )
    with pytest.raises(UnsupportedProtobufError, match="groups"):
        render_proto(grouped)
