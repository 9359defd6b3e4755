//! `RangeReader`: the batches of one range of a partition (`Client.read`), an iterator of
//! pyarrow record batches; the messages are received by `receive.rs`, their metadata put in
//! columns by `columns.rs`, their bodies decoded into the `value` column by `decode.rs`.
//! `check_reader` says beforehand whether a query's reader schema can be decoded here at all.

use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow::pyarrow::{PyArrowType, ToPyArrow};
use pyo3::prelude::*;

use crate::bounds::Place;
use crate::columns::{self, Columns};
use crate::decode::{self, Values, WriterSpec};
use crate::errors::error;
use crate::receive::{MessageView, Next, RangeConsumer};
use crate::sync::locked;

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
    values.add(decoder, &view.data[framing.skip.min(view.data.len())..], framing.tail);
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
pub struct RangeReader {
    state: Mutex<Option<ReadState>>,
}

impl RangeReader {
    /// The reader of what `consumer` receives, in batches of `rows_per_batch` rows (at least one)
    /// of the columns `declared` names, the `value` column of `value_type` decoded as the query's
    /// `reader_schema`; `writer(id)` says how to decode the bodies of a writer schema id.
    pub fn new(
        consumer: RangeConsumer,
        declared: SchemaRef,
        value_type: DataType,
        reader_schema: String,
        writer: Py<PyAny>,
        rows_per_batch: usize,
    ) -> Self {
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
        RangeReader { state: Mutex::new(Some(state)) }
    }
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

    fn close(&self, py: Python<'_>) {
        let state = locked(py, &self.state).ok().and_then(|mut g| g.take());
        if let Some(mut state) = state {
            py.detach(|| state.consumer.close());
        }
    }
}

/// Why values of the Avro `reader_schema` cannot be decoded here into a column of `value_type`
/// (a union of several types, say); None where they can.
#[pyfunction]
pub fn check_reader(reader_schema: &str, value_type: PyArrowType<DataType>) -> Option<String> {
    decode::check(reader_schema, &value_type.0).err()
}
