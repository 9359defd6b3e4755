//! The optional native extension of pulsar-external-schema (`pulsar-external-schema-native`).
//!
//! It knows Pulsar's protocol, Arrow, Avro, JSON and Protobuf's wire format, nothing of registries, rules or Spark: the package
//! imports it through one gate (`_native.py`, which checks `ABI` below), asks it only what it can
//! answer, and words every error. Its modules, by concern:
//!
//! - the Python classes of the reader and the sender: `client.rs` (`Client`: where and how to
//!   reach Pulsar), `range_reader.rs` (`RangeReader`: one range's batches; `check_reader`),
//!   `producer.rs` (`Producer`: batches sent; `key_partitions`), `avro_encoder.rs`
//!   (`AvroEncoder`), `protobuf_encoder.rs` (`ProtobufEncoder`), `errors.rs` (`NativeError`),
//!   `sync.rs` (their state locked without the GIL), `testing.rs` (the `_testing` submodule: what only the tests call);
//! - the wire client: `wire.rs` (a client's side of Pulsar's binary protocol, reconnecting),
//!   `proto.rs` (the protocol's messages, by hand from `PulsarApi.proto`), `tls.rs` (rustls),
//!   `receive.rs` (one range of a partition), `send.rs` (a producer's batched entries),
//!   `bounds.rs` (where a range starts and ends);
//! - Arrow columns: `columns.rs` (the Spark source's metadata columns), `decode.rs` (bodies into
//!   the `value` column: Avro with arrow-avro), `json_values.rs` (JSON Schema bodies, checked, into
//!   typed columns; `json_tape.rs` reads them), `protobuf_values.rs` (Protobuf bodies, from their
//!   wire bytes, into typed columns; `protobuf_schema.rs` plans their messages), `conform.rs`
//!   (the Spark source's exact types),
//!   `encode.rs` (Arrow rows into Avro bodies, for `write_table`), `protobuf_encode.rs` (into
//!   Protobuf bodies);
//! - the everyday codec: `json.rs` (JSON Schema values checked in place, written and read by
//!   orjson), `direct.rs` (`ExternalSchema`'s everyday encode and decode in one call each).
//!
//! This file only registers the Python API. Its one list is the stub,
//! `_pulsar_external_schema_native.pyi` (private; version `ABI`), which
//! tests/unit/test_native_api.py holds the built module to, name for name.

mod avro_encoder;
mod bounds;
mod client;
mod columns;
mod conform;
mod decode;
mod direct;
mod encode;
mod errors;
mod json;
mod json_tape;
mod json_values;
mod producer;
mod protobuf_encode;
mod protobuf_encoder;
mod protobuf_schema;
mod protobuf_values;
mod proto;
mod range_reader;
mod receive;
mod send;
mod sync;
mod testing;
mod tls;
mod wire;

use pyo3::prelude::*;

/// The version of this module's Python API (`_pulsar_external_schema_native.pyi`), which the
/// package's gate (`_native.py`) checks before it calls anything here: bumped with every change to
/// a signature, a class or a function of the stub, in step with `ABI` in `_native.py`.
const ABI: u32 = 10;

#[pymodule]
fn _pulsar_external_schema_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(range_reader::check_reader, m)?)?;
    m.add_function(wrap_pyfunction!(producer::key_partitions, m)?)?;
    m.add_class::<avro_encoder::AvroEncoder>()?;
    m.add_class::<protobuf_encoder::ProtobufEncoder>()?;
    m.add_class::<client::Client>()?;
    m.add_class::<range_reader::RangeReader>()?;
    m.add_class::<producer::Producer>()?;
    m.add_class::<json::JsonSchemaCheck>()?;
    m.add_class::<json::JsonCodec>()?;
    m.add_class::<direct::DirectWriter>()?;
    m.add_class::<direct::Encoder>()?;
    m.add_class::<direct::DirectReader>()?;
    m.add("NativeError", m.py().get_type::<errors::NativeError>())?;
    // The wheel's version, as maturin writes Cargo's (0.1.0-dev0: 0.1.0.dev0)
    m.add("__version__", env!("CARGO_PKG_VERSION").replacen('-', ".", 1))?;
    m.add("ABI", ABI)?;

    // What only the tests (and benchmarks) call: `_testing`, not the package's API.
    let testing = PyModule::new(m.py(), "_testing")?;
    testing.add_function(wrap_pyfunction!(testing::drain, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::batch_starts, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::framing, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::range_place, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::values, &testing)?)?;
    m.add_submodule(&testing)?;
    Ok(())
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
