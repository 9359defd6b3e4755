//! The optional native extension of pulsar-external-schema (`pulsar-external-schema-native`).
//!
//! It knows Pulsar's protocol, Arrow, Avro and JSON, nothing of registries, rules or Spark: the package
//! imports it through one gate (`_native.py`, which checks `ABI` below), asks it only what it can
//! answer, and words every error. Its modules, by concern:
//!
//! - the wire client: `wire.rs` (a client's side of Pulsar's binary protocol, reconnecting),
//!   `proto.rs` (the protocol's messages, by hand from `PulsarApi.proto`), `tls.rs` (rustls),
//!   `receive.rs` (one range of a partition), `send.rs` (a producer's batched entries),
//!   `bounds.rs` (where a range starts and ends);
//! - Arrow columns: `columns.rs` (the Spark source's metadata columns), `decode.rs` (bodies into
//!   the `value` column: Avro with arrow-avro), `json_values.rs` (JSON Schema bodies, checked, into
//!   typed columns; `json_tape.rs` reads them), `conform.rs` (the Spark source's exact types),
//!   `encode.rs` (Arrow rows into Avro bodies, for `write_table`);
//! - the everyday codec: `json.rs` (JSON Schema values checked in place, written and read by
//!   orjson), `direct.rs` (`ExternalSchema`'s everyday encode and decode in one call each).
//!
//! This file holds the Python classes of the first two: the range reader and the producer.
//!
//! Python API (private: `_pulsar_external_schema_native.pyi` types it; version `ABI`):
//!
//! ```text
//! Client(service_url, *, auth_token=None (a token, or a callable returning one), tls_trust_certs_file_path=None,
//!     tls_certificate_file_path=None, tls_key_file_path=None, tls_hostname_verification=False,
//!     tls_allow_insecure_connection=False, operation_timeout_ms=30000, connection_timeout_ms=10000)
//! Client.read(topic, start, end, schema, reader_schema, writer, *, rows_per_batch, read_timeout_ms)
//!     -> RangeReader, an iterator of pyarrow.RecordBatch; .handover; .native_ids; .close()
//! Client.producer(topic, producer_name=None, *, batching_max_messages, batching_max_bytes)
//!     -> Producer; .send(batch, first_sequence_id); .flush() -> acknowledged; .close(); .name
//! AvroEncoder(schema, value_type, prefix); .encode(column) -> pyarrow.BinaryArray (null: a row for
//!     the Python path)
//! key_partitions(keys, partitions) -> pyarrow.Int32Array (pulsar-client's BoostHash routing)
//! framing(properties, payload, schema_id=None) -> (schema id | None, skip, python); range_place(start, end,
//!     last_written, place) -> (verdict, done after its entry); batch_starts(sizes,
//!     batching_max_messages, batching_max_bytes) -> [index]: the range reader's and the
//!     producer's decisions (`columns.rs`, `bounds.rs`, `send.rs`), for the tests that hold them
//!     to their twins
//! JsonSchemaCheck(schema, resources, base_uri); .takes(value) -> bool
//! JsonCodec(check, *, loads, dumps, read_otherwise, write_otherwise); .write(value); .read(payload)
//! DirectWriter(write, *, prefix, schema_id, expires_in, key_parts, clear_original_key)(value)
//!     -> (payload, schema id) | None
//! Encoder(schema, *, writers, encode_data, with_id, with_context, planned, other)(*args, **kwargs)
//! DirectReader(read, *, longest, check, expires_in, key_parts, clear_original_key, fallback,
//!     declined)(payload) -> value | fallback | declined
//! ```
//!
mod bounds;
mod columns;
mod conform;
mod decode;
mod direct;
mod encode;
mod json;
mod json_tape;
mod json_values;
mod proto;
mod receive;
mod send;
mod tls;
mod wire;

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::pyarrow::{PyArrowType, ToPyArrow};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use crate::bounds::Bound as RangeBound;
use crate::columns::Columns;
use crate::decode::{Values, WriterSpec};
use crate::receive::{MessageView, Next, RangeConsumer};
use crate::wire::Options;

create_exception!(
    _pulsar_external_schema_native,
    NativeError,
    PyException,
    "The native reader could not do what it was asked (the message says what)."
);

fn error(text: impl Into<String>) -> PyErr {
    NativeError::new_err(text.into())
}

/// A position as Python gives it: (ledger, entry, batch index, inclusive).
type Position = (i64, i64, i32, bool);
/// A message's place: (ledger, entry, batch index).
type Place = (i64, i64, i32);

fn bound((ledger, entry, batch, inclusive): Position) -> RangeBound {
    RangeBound { ledger, entry, batch, inclusive }
}

/// `mutex` locked without holding the GIL while it waits: its holder may be reading with the GIL
/// released and need it back (a reconnect asks Python for a fresh token).
fn locked<'a, T>(py: Python<'_>, mutex: &'a Mutex<T>) -> Result<MutexGuard<'a, T>, ()> {
    loop {
        match mutex.try_lock() {
            Ok(guard) => return Ok(guard),
            Err(TryLockError::Poisoned(_)) => return Err(()),
            Err(TryLockError::WouldBlock) => py.detach(|| std::thread::sleep(Duration::from_millis(1))),
        }
    }
}

/// A token given as a string, or a callable asked for it at each connection and auth challenge
/// (the Python side fetches an OAuth2 token again before it expires).
fn token_source(given: Bound<'_, PyAny>) -> PyResult<wire::TokenSource> {
    if let Ok(token) = given.extract::<String>() {
        return Ok(Arc::new(move || Ok(token.clone())));
    }
    if !given.is_callable() {
        return Err(error("auth_token takes a token, or a callable that returns one"));
    }
    let ask = given.unbind();
    Ok(Arc::new(move || {
        Python::attach(|py| ask.call0(py).and_then(|token| token.extract::<String>(py)))
            .map_err(|e| format!("the token could not be had: {e}"))
    }))
}

/// Where and how to reach Pulsar (kept by the Python worker; each read opens its connection).
#[pyclass(frozen, module = "_pulsar_external_schema_native")]
struct Client {
    options: Arc<Options>,
}

#[pymethods]
impl Client {
    #[new]
    /// A `pulsar+ssl://` URL takes the TLS settings of Pulsar's client configuration (read by
    /// `connections.py`); their files are read here, once.
    #[pyo3(signature = (
        service_url, *, auth_token=None, tls_trust_certs_file_path=None, tls_certificate_file_path=None,
        tls_key_file_path=None, tls_hostname_verification=false, tls_allow_insecure_connection=false,
        operation_timeout_ms=30_000, connection_timeout_ms=10_000,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        service_url: String,
        auth_token: Option<Bound<'_, PyAny>>,
        tls_trust_certs_file_path: Option<String>,
        tls_certificate_file_path: Option<String>,
        tls_key_file_path: Option<String>,
        tls_hostname_verification: bool,
        tls_allow_insecure_connection: bool,
        operation_timeout_ms: u64,
        connection_timeout_ms: u64,
    ) -> PyResult<Self> {
        wire::host_port(&service_url).map_err(error)?;
        let auth_token = auth_token.map(token_source).transpose()?;
        let certificate = match (tls_certificate_file_path, tls_key_file_path) {
            (Some(certificate), Some(key)) => Some((certificate, key)),
            (None, None) => None,
            _ => return Err(error("a client certificate needs its key, and a key its certificate")),
        };
        let tls_authentication = certificate.is_some();
        let tls = if wire::is_tls(&service_url) {
            let settings = tls::TlsSettings {
                trust_file: tls_trust_certs_file_path,
                certificate,
                verify_hostname: tls_hostname_verification,
                allow_insecure: tls_allow_insecure_connection,
            };
            Some(tls::client_config(&settings).map_err(error)?)
        } else {
            None
        };
        Ok(Self {
            options: Arc::new(Options {
                service_url,
                auth_token,
                tls,
                tls_authentication,
                connect_timeout: Duration::from_millis(connection_timeout_ms),
                operation_timeout: Duration::from_millis(operation_timeout_ms),
            }),
        })
    }

    /// A producer on `topic` (one partition or a topic without partitions), named
    /// `producer_name` (None: the broker names it), closing batches by count and size only.
    #[pyo3(signature = (topic, producer_name=None, *, batching_max_messages=1000, batching_max_bytes=131_072))]
    fn producer(
        &self,
        py: Python<'_>,
        topic: String,
        producer_name: Option<String>,
        batching_max_messages: usize,
        batching_max_bytes: usize,
    ) -> PyResult<Producer> {
        let options = self.options.clone();
        let batching = send::Batching { max_messages: batching_max_messages, max_bytes: batching_max_bytes };
        let producer = py
            .detach(|| send::Producer::open(&options, &topic, producer_name.as_deref(), batching))
            .map_err(error)?;
        Ok(Producer { state: Mutex::new(Some(producer)) })
    }

    /// Receives every message of `topic` and drops it (the receive cost alone, for benchmarks).
    fn _drain(&self, py: Python<'_>, topic: String) -> PyResult<usize> {
        let options = self.options.clone();
        py.detach(|| {
            let end = RangeBound { ledger: i64::MAX, entry: i64::MAX, batch: -1, inclusive: true };
            let mut consumer = RangeConsumer::open(&options, &topic, None, end, options.operation_timeout)?;
            let mut count = 0;
            while let Next::Message(_) = consumer.next()? {
                count += 1;
            }
            consumer.close();
            Ok::<usize, String>(count)
        })
        .map_err(error)
    }

    /// Reads `topic` (one partition) after `start` (None: from its earliest message) up to
    /// `end`, in batches of the columns `schema` declares (see `columns.rs`). `writer(id)` says
    /// how to decode bodies of a writer schema id: `(schema JSON, longest body)` or None.
    #[pyo3(signature = (topic, start, end, schema, reader_schema, writer, *, rows_per_batch=8192, read_timeout_ms=30_000))]
    #[allow(clippy::too_many_arguments)]
    fn read(
        &self,
        py: Python<'_>,
        topic: String,
        start: Option<Position>,
        end: Position,
        schema: PyArrowType<Schema>,
        reader_schema: String,
        writer: Py<PyAny>,
        rows_per_batch: usize,
        read_timeout_ms: u64,
    ) -> PyResult<RangeReader> {
        let declared: SchemaRef = Arc::new(schema.0);
        let value_type = declared
            .field_with_name("value")
            .map_err(|_| error("the declared schema has no `value` column"))?
            .data_type()
            .clone();
        let timeout = Duration::from_millis(read_timeout_ms);
        let options = self.options.clone();
        let consumer = py
            .detach(|| RangeConsumer::open(&options, &topic, start.map(bound), bound(end), timeout))
            .map_err(error)?;
        let rows_per_batch = rows_per_batch.max(1);
        let state = ReadState {
            consumer,
            columns: Columns::new(rows_per_batch),
            values: Values::new(value_type, reader_schema, rows_per_batch),
            declared,
            writer,
            rows_per_batch,
            last: None,
            ended: false,
            handover: None,
        };
        Ok(RangeReader { state: Mutex::new(Some(state)) })
    }
}

struct ReadState {
    consumer: RangeConsumer,
    columns: Columns,
    values: Values,
    declared: SchemaRef,
    writer: Py<PyAny>,
    rows_per_batch: usize,
    /// The last message put in a batch.
    last: Option<Place>,
    ended: bool,
    handover: Option<String>,
}

impl ReadState {
    /// The next batch (None: the range is read).
    fn next_batch(&mut self) -> Result<Option<RecordBatch>, String> {
        while !self.ended && self.columns.len() < self.rows_per_batch {
            match self.consumer.next()? {
                Next::End => self.ended = true,
                Next::Handover(reason) => {
                    self.ended = true;
                    self.handover = Some(reason);
                }
                Next::Message(view) => {
                    let framing = self.columns.add(&view).map_err(|e| e.to_string())?;
                    decode_value(&mut self.values, &self.writer, &framing, &view);
                    self.last = Some((view.ledger, view.entry, view.batch));
                }
            }
        }
        if self.ended {
            self.consumer.close();
        }
        if self.columns.len() == 0 {
            return Ok(None);
        }
        let (value, native) = self.values.finish()?;
        let (fields, arrays) =
            self.columns.finish(value, native, self.declared.fields()).map_err(|e| e.to_string())?;
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map(Some).map_err(|e| e.to_string())
    }

}

/// Decodes the value of `view` where it can (else its row is the Python path's).
fn decode_value(values: &mut Values, ask: &Py<PyAny>, framing: &columns::Framing, view: &MessageView<'_>) {
    let decoder = match framing.id {
        Some(id) if !framing.python => values.decoder_for(id, |id| ask_writer(ask, id)),
        _ => None,
    };
    values.add(decoder, &view.data[framing.skip.min(view.data.len())..]);
}

/// The Python side's answer for a writer schema id (an exception or a wrong answer: None, so
/// that the rows take the Python path, which reports what is wrong).
fn ask_writer(writer: &Py<PyAny>, id: u32) -> WriterSpec {
    Python::attach(|py| writer.call1(py, (id,)).and_then(|answer| answer.extract::<WriterSpec>(py)))
        .ok()
        .flatten()
}

/// The batches of one range (`Client.read`).
#[pyclass(module = "_pulsar_external_schema_native")]
struct RangeReader {
    state: Mutex<Option<ReadState>>,
}

#[pymethods]
impl RangeReader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut guard = locked(py, &self.state).map_err(|_| error("the reader failed before"))?;
        let Some(state) = guard.as_mut() else { return Ok(None) };
        let batch = py.detach(|| state.next_batch());
        match batch {
            Ok(Some(batch)) => Ok(Some(batch.to_pyarrow(py)?)),
            Ok(None) => Ok(None),
            Err(text) => {
                if let Some(mut state) = guard.take() {
                    state.consumer.close();
                }
                Err(error(text))
            }
        }
    }

    /// Why the reader stopped before the range's end, and the last message it gave: the Python
    /// path reads on after that message. None: it read the whole range (or is not done).
    #[getter]
    fn handover(&self, py: Python<'_>) -> Option<(Option<Place>, String)> {
        let guard = locked(py, &self.state).ok()?;
        let state = guard.as_ref()?;
        state.handover.clone().map(|reason| (state.last, reason))
    }

    /// The writer schema ids whose bodies were decoded here.
    #[getter]
    fn native_ids(&self, py: Python<'_>) -> Vec<u32> {
        locked(py, &self.state).ok().and_then(|g| g.as_ref().map(|s| s.values.native_ids())).unwrap_or_default()
    }

    fn close(&self, py: Python<'_>) {
        let state = locked(py, &self.state).ok().and_then(|mut g| g.take());
        if let Some(mut state) = state {
            py.detach(|| state.consumer.close());
        }
    }
}

/// A producer of forwarded messages (`Client.producer`).
#[pyclass(module = "_pulsar_external_schema_native")]
struct Producer {
    state: Mutex<Option<send::Producer>>,
}

#[pymethods]
impl Producer {
    /// Sends the rows of `batch` (columns `data`: binary; optional `key`: string, `properties`:
    /// map<string, string>, `event_time`: int64 milliseconds, `sequence_id`: int64), the row i
    /// with its `sequence_id`, else `first_sequence_id + i` (None: the ids that follow the
    /// broker's last for this name).
    /// Batches are sent as they fill; `flush` sends the last and waits for every receipt.
    #[pyo3(signature = (batch, first_sequence_id=None))]
    fn send(&self, py: Python<'_>, batch: PyArrowType<RecordBatch>, first_sequence_id: Option<u64>) -> PyResult<()> {
        let batch = batch.0;
        let rows = Rows::of(&batch).map_err(error)?;
        let mut guard = locked(py, &self.state).map_err(|_| error("the producer failed before"))?;
        let producer = guard.as_mut().ok_or_else(|| error("the producer is closed"))?;
        let first = first_sequence_id.unwrap_or(producer.next_sequence_id);
        py.detach(|| rows.send(producer, first)).map_err(error)
    }

    /// Sends the open batch and waits for the broker's receipt of every batch sent; the number
    /// of messages it acknowledged.
    fn flush(&self, py: Python<'_>) -> PyResult<usize> {
        let mut guard = locked(py, &self.state).map_err(|_| error("the producer failed before"))?;
        let producer = guard.as_mut().ok_or_else(|| error("the producer is closed"))?;
        py.detach(|| producer.flush()).map_err(error)
    }

    /// The producer's name (the broker's, where none was given).
    #[getter]
    fn name(&self, py: Python<'_>) -> Option<String> {
        locked(py, &self.state).ok().and_then(|g| g.as_ref().map(|p| p.name.clone()))
    }

    fn close(&self, py: Python<'_>) {
        let state = locked(py, &self.state).ok().and_then(|mut g| g.take());
        if let Some(mut producer) = state {
            py.detach(|| producer.close());
        }
    }
}

/// The columns of a batch to send, as `Producer.send` takes them.
struct Rows<'a> {
    data: &'a arrow::array::BinaryArray,
    key: Option<&'a arrow::array::StringArray>,
    properties: Option<&'a arrow::array::MapArray>,
    event_time: Option<&'a arrow::array::Int64Array>,
    /// Each row's sequence id, where the rows are not consecutive (a partition's share).
    sequence_id: Option<&'a arrow::array::Int64Array>,
}

impl<'a> Rows<'a> {
    fn of(batch: &'a RecordBatch) -> Result<Self, String> {
        use arrow::array::AsArray;
        use arrow::datatypes::Int64Type;
        let column = |name: &str| batch.column_by_name(name);
        let data = column("data")
            .ok_or("a batch to send has no `data` column")?
            .as_binary_opt::<i32>()
            .ok_or("`data` must be binary")?;
        let key = column("key").map(|c| c.as_string_opt::<i32>().ok_or("`key` must be a string")).transpose()?;
        let properties = column("properties")
            .map(|c| c.as_map_opt().ok_or("`properties` must be a map<string, string>"))
            .transpose()?;
        if let Some(map) = properties {
            if map.keys().as_string_opt::<i32>().is_none() || map.values().as_string_opt::<i32>().is_none() {
                return Err("`properties` must be a map<string, string>".into());
            }
        }
        let event_time = column("event_time")
            .map(|c| c.as_primitive_opt::<Int64Type>().ok_or("`event_time` must be int64 milliseconds"))
            .transpose()?;
        let sequence_id = column("sequence_id")
            .map(|c| c.as_primitive_opt::<Int64Type>().ok_or("`sequence_id` must be int64"))
            .transpose()?;
        if sequence_id.is_some_and(|s| arrow::array::Array::null_count(s) > 0) {
            return Err("`sequence_id` has nulls".into());
        }
        Ok(Self { data, key, properties, event_time, sequence_id })
    }

    fn send(&self, producer: &mut send::Producer, first_sequence_id: u64) -> Result<(), String> {
        use arrow::array::{Array, AsArray};
        for row in 0..self.data.len() {
            if self.data.is_null(row) {
                return Err(format!("row {row} of the batch has no data (a null `data`)"));
            }
            // an empty key is no key, as pulsar-client's Python API takes it
            let key = self.key.filter(|k| k.is_valid(row)).map(|k| k.value(row)).filter(|k| !k.is_empty());
            let mut properties = Vec::new();
            if let Some(map) = self.properties.filter(|m| m.is_valid(row)) {
                let (keys, values) = (map.keys().as_string::<i32>(), map.values().as_string::<i32>());
                let offsets = map.value_offsets();
                for i in offsets[row] as usize..offsets[row + 1] as usize {
                    if values.is_null(i) {
                        return Err(format!("row {row}: the property {:?} has no value (null)", keys.value(i)));
                    }
                    properties.push((keys.value(i), values.value(i)));
                }
                // as a Python dict, then pulsar-client's std::map: sorted, the last value of a key
                properties.reverse();
                properties.sort_by(|a, b| a.0.cmp(b.0));
                properties.dedup_by(|later, earlier| later.0 == earlier.0);
            }
            let event_time = match self.event_time.filter(|e| e.is_valid(row)).map(|e| e.value(row)) {
                Some(ms) if ms < 0 => return Err(format!("row {row}: an event time before 1970 ({ms} ms)")),
                other => other.map(|ms| ms as u64),
            };
            let message = send::Outgoing {
                data: self.data.value(row),
                key,
                properties,
                event_time,
                sequence_id: match self.sequence_id {
                    Some(ids) => ids.value(row) as u64,
                    None => first_sequence_id + row as u64,
                },
            };
            producer.add(&message)?;
        }
        Ok(())
    }
}

/// The partition of each key among `partitions`, as pulsar-client routes a keyed message by
/// default (`HashingScheme.BoostHash`: boost's `hash<std::string>`, 31 bits, modulo the count);
/// null for a null or empty key (no key).
#[pyfunction]
fn key_partitions(
    py: Python<'_>,
    keys: PyArrowType<arrow::array::ArrayData>,
    partitions: u32,
) -> PyResult<Bound<'_, PyAny>> {
    use arrow::array::{Array, AsArray, Int32Array, StringArray};
    let keys = arrow::array::make_array(keys.0);
    let keys: &StringArray = keys.as_string_opt::<i32>().ok_or_else(|| error("keys must be strings"))?;
    if partitions == 0 {
        return Err(error("a topic of no partitions"));
    }
    let routed: Int32Array = keys
        .iter()
        .map(|key| key.filter(|k| !k.is_empty()).map(|k| ((send::boost_hash(k.as_bytes()) & 0x7fff_ffff) % partitions as u64) as i32))
        .collect();
    routed.into_data().to_pyarrow(py)
}

/// Where each batched entry starts (the index of its first message) when messages of these
/// payload sizes are sent in order by a `Producer` of these limits (`send.rs`). Exposed so that
/// the tests hold its cuts to pulsar-client's producer's without a broker.
#[pyfunction]
fn batch_starts(sizes: Vec<usize>, batching_max_messages: usize, batching_max_bytes: usize) -> Vec<usize> {
    send::Batching { max_messages: batching_max_messages, max_bytes: batching_max_bytes }.starts(&sizes)
}

/// How the range reader reads a message with these properties, PIP-420 metadata id (field 32)
/// and payload (`columns.rs`): (the Confluent schema id it takes, the prefix bytes it skips,
/// whether the message is one for the Python path). Exposed so that the tests hold it to the
/// Python path's reading of the same message without a broker.
#[pyfunction]
#[pyo3(signature = (properties, payload, schema_id=None))]
fn framing(
    properties: std::collections::BTreeMap<String, String>,
    payload: &[u8],
    schema_id: Option<&[u8]>,
) -> (Option<u32>, usize, bool) {
    let sorted = columns::sorted_properties(properties.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let framing = columns::framing(&sorted, schema_id, payload);
    (framing.id, framing.skip, framing.python)
}

/// Where the message at `place` falls in the range after `start` (None: the earliest) up to
/// `end`, `last_written` the last entry written when the read began (`bounds.rs`): ("before",
/// "inside" or "after", whether nothing can follow once its entry is read). Exposed so that the
/// tests hold it to `spark.offsets.Bound` without a broker.
#[pyfunction]
fn range_place(start: Option<Position>, end: Position, last_written: (i64, i64), place: Place) -> (&'static str, bool) {
    let range = bounds::Range { start: start.map(bound), end: bound(end), last_written };
    let (ledger, entry, batch) = place;
    let verdict = match range.place(ledger, entry, batch) {
        bounds::Verdict::Before => "before",
        bounds::Verdict::Inside => "inside",
        bounds::Verdict::After => "after",
    };
    (verdict, range.done_after_entry(ledger, entry))
}

/// Why values of the Avro `reader_schema` cannot be decoded here into a column of `value_type`
/// (a union of several types, say); None where they can.
#[pyfunction]
fn check_reader(reader_schema: &str, value_type: PyArrowType<arrow::datatypes::DataType>) -> Option<String> {
    decode::check(reader_schema, &value_type.0).err()
}

/// Arrow rows into Avro bodies, as fastavro writes their Python values (`encode.rs`): made for a
/// writer schema (one self-contained Avro JSON text) and a column's Arrow type, raising NativeError
/// (why) where it is not sure of the pair; `encode(column)` gives each row's body after `prefix`,
/// null for a row the Python path is to write.
#[pyclass(frozen)]
struct AvroEncoder(encode::Encoder);

#[pymethods]
impl AvroEncoder {
    #[new]
    fn new(schema: &str, value_type: PyArrowType<arrow::datatypes::DataType>, prefix: &[u8]) -> PyResult<Self> {
        encode::Encoder::new(schema, &value_type.0, prefix).map(Self).map_err(error)
    }

    fn encode<'py>(&self, py: Python<'py>, column: PyArrowType<arrow::array::ArrayData>) -> PyResult<Bound<'py, PyAny>> {
        let column = arrow::array::make_array(column.0);
        let encoded = py.detach(|| self.0.encode(&column)).map_err(error)?;
        arrow::array::Array::into_data(encoded).to_pyarrow(py)
    }
}

/// The version of this module's Python API (`_pulsar_external_schema_native.pyi`), which the
/// package's gate (`_native.py`) checks before it calls anything here: bumped with every change to
/// a signature, a class or a function of the stub, in step with `ABI` in `_native.py`.
const ABI: u32 = 7;

#[pymodule]
fn _pulsar_external_schema_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_reader, m)?)?;
    m.add_function(wrap_pyfunction!(key_partitions, m)?)?;
    m.add_function(wrap_pyfunction!(batch_starts, m)?)?;
    m.add_function(wrap_pyfunction!(framing, m)?)?;
    m.add_function(wrap_pyfunction!(range_place, m)?)?;
    m.add_class::<AvroEncoder>()?;
    m.add_class::<Client>()?;
    m.add_class::<json::JsonSchemaCheck>()?;
    m.add_class::<json::JsonCodec>()?;
    m.add_class::<direct::DirectWriter>()?;
    m.add_class::<direct::Encoder>()?;
    m.add_class::<direct::DirectReader>()?;
    m.add_class::<RangeReader>()?;
    m.add_class::<Producer>()?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    // The wheel's version, as maturin writes Cargo's (0.1.0-dev0: 0.1.0.dev0)
    m.add("__version__", env!("CARGO_PKG_VERSION").replacen('-', ".", 1))?;
    m.add("ABI", ABI)?;
    Ok(())
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
