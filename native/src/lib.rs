//! The optional native reader of pulsar-external-schema's Spark source.
//!
//! It reads one range of a Pulsar partition (`receive.rs`), builds the source's metadata columns
//! (`columns.rs`) and decodes Avro bodies with arrow-avro into the query's reader schema
//! (`decode.rs`), and hands each batch to Python as a `pyarrow.RecordBatch` through the C data
//! interface. It knows nothing of registries, rules or Spark: the Python side says which writer
//! schemas it may decode and finishes every row it leaves (`_native` false) on the Python path.
//!
//! Python API (private; `pulsar_external_schema.spark.native` is the typed one):
//!
//! ```text
//! Client(service_url, *, auth_token=None, operation_timeout_ms=30000, connection_timeout_ms=10000)
//! Client.read(topic, start, end, schema, reader_schema, writer, *, rows_per_batch, read_timeout_ms)
//!     -> RangeReader, an iterator of pyarrow.RecordBatch; .handover; .native_ids; .close()
//! ```

mod bounds;
mod columns;
mod conform;
mod decode;
mod receive;
mod wire;

use std::sync::{Arc, Mutex};
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

/// Where and how to reach Pulsar (kept by the Python worker; each read opens its connection).
#[pyclass(frozen, module = "_pulsar_external_schema_native")]
struct Client {
    options: Arc<Options>,
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (service_url, *, auth_token=None, operation_timeout_ms=30_000, connection_timeout_ms=10_000))]
    fn new(
        service_url: String,
        auth_token: Option<String>,
        operation_timeout_ms: u64,
        connection_timeout_ms: u64,
    ) -> PyResult<Self> {
        wire::host_port(&service_url).map_err(error)?;
        Ok(Self {
            options: Arc::new(Options {
                service_url,
                auth_token,
                connect_timeout: Duration::from_millis(connection_timeout_ms),
                operation_timeout: Duration::from_millis(operation_timeout_ms),
            }),
        })
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
    let writer = match framing.id {
        Some(id) if !framing.python => values.writer(id, |id| ask_writer(ask, id)),
        _ => None,
    };
    values.add(writer, &view.data[framing.skip.min(view.data.len())..]);
}

/// The Python side's answer for a writer schema id (an exception or a wrong answer: None, so
/// that the rows take the Python path, which reports what is wrong).
fn ask_writer(writer: &Py<PyAny>, id: u32) -> WriterSpec {
    Python::attach(|py| writer.call1(py, (id,)).and_then(|answer| answer.extract::<Option<(String, usize)>>(py)))
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
        let mut guard = self.state.lock().map_err(|_| error("the reader failed before"))?;
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
    fn handover(&self) -> Option<(Option<Place>, String)> {
        let guard = self.state.lock().ok()?;
        let state = guard.as_ref()?;
        state.handover.clone().map(|reason| (state.last, reason))
    }

    /// The writer schema ids whose bodies were decoded here.
    #[getter]
    fn native_ids(&self) -> Vec<u32> {
        self.state.lock().ok().and_then(|g| g.as_ref().map(|s| s.values.native_ids())).unwrap_or_default()
    }

    fn close(&self, py: Python<'_>) {
        let state = self.state.lock().ok().and_then(|mut g| g.take());
        if let Some(mut state) = state {
            py.detach(|| state.consumer.close());
        }
    }
}

/// Why values of the Avro `reader_schema` cannot be decoded here into a column of `value_type`
/// (a union of several types, say); None where they can.
#[pyfunction]
fn check_reader(reader_schema: &str, value_type: PyArrowType<arrow::datatypes::DataType>) -> Option<String> {
    decode::check(reader_schema, &value_type.0).err()
}

#[pymodule]
fn _pulsar_external_schema_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_reader, m)?)?;
    m.add_class::<Client>()?;
    m.add_class::<RangeReader>()?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
