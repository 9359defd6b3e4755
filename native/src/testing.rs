//! The `_testing` submodule: what only the tests and benchmarks call, kept out of the API the
//! package calls. The range reader's and the producer's decisions, exposed so that the tests hold
//! them to their Python twins without a broker (tests/unit/test_native_twins.py), `values` (the
//! bodies of one writer into a `value` column, for the decoders' differential tests and
//! benchmarks), and `drain`, a client's receiving alone (the TLS and token tests' connection
//! errors, the benchmarks' cost of receiving).

use std::collections::BTreeMap;

use arrow::array::Array;
use arrow::datatypes::DataType;
use arrow::pyarrow::{PyArrowType, ToPyArrow};
use pyo3::prelude::*;

use crate::bounds::{self, Place, Position};
use crate::client::Client;
use crate::columns;
use crate::decode::{Values, WriterSpec};
use crate::errors::error;
use crate::receive::{Next, RangeConsumer};
use crate::send;

/// Receives every message of `topic` with `client`'s connection settings and drops it (the
/// receive cost alone); the number of messages.
#[pyfunction]
pub fn drain(py: Python<'_>, client: &Client, topic: String) -> PyResult<usize> {
    let options = client.options();
    py.detach(|| {
        let end = bounds::Bound { ledger: i64::MAX, entry: i64::MAX, batch: -1, inclusive: true };
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

/// Where each batched entry starts (the index of its first message) when messages of these
/// payload sizes are sent in order by a `Producer` of these limits (`send.rs`), for the tests
/// that hold its cuts to pulsar-client's producer's.
#[pyfunction]
pub fn batch_starts(sizes: Vec<usize>, batching_max_messages: usize, batching_max_bytes: usize) -> Vec<usize> {
    send::Batching { max_messages: batching_max_messages, max_bytes: batching_max_bytes }.starts(&sizes)
}

/// How the range reader reads a message with these properties, PIP-420 metadata id (field 32)
/// and payload (`columns.rs`): (the Confluent schema id it takes, the prefix bytes it skips,
/// whether the message is one for the Python path), for the tests that hold it to the Python
/// path's reading of the same message.
#[pyfunction]
#[pyo3(signature = (properties, payload, schema_id=None))]
pub fn framing(
    properties: BTreeMap<String, String>,
    payload: &[u8],
    schema_id: Option<&[u8]>,
) -> (Option<u32>, usize, bool) {
    let sorted = columns::sorted_properties(properties.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let framing = columns::framing(&sorted, schema_id, payload);
    (framing.id, framing.skip, framing.python)
}

/// Where the message at `place` falls in the range after `start` (None: the earliest) up to
/// `end`, `last_written` the last entry written when the read began (`bounds.rs`): ("before",
/// "inside" or "after", whether nothing can follow once its entry is read), for the tests that
/// hold it to `spark.offsets.Bound`.
#[pyfunction]
pub fn range_place(start: Option<Position>, end: Position, last_written: (i64, i64), place: Place) -> (&'static str, bool) {
    let range = bounds::Range { start: start.map(Into::into), end: end.into(), last_written };
    let (ledger, entry, batch) = place;
    let verdict = match range.place(ledger, entry, batch) {
        bounds::Verdict::Before => "before",
        bounds::Verdict::Inside => "inside",
        bounds::Verdict::After => "after",
    };
    (verdict, range.done_after_entry(ledger, entry))
}

/// The value column the range reader makes of `bodies` (each after the Confluent id, prefix
/// framing) written with writer `spec` (`decode::WriterSpec`, as the package's `Finisher.writer`
/// answers it), in `value_type`, with `reader_schema` the query's (Avro): (the column, null where
/// the Python path decodes; which rows were decoded here).
#[pyfunction]
pub fn values(
    py: Python<'_>,
    spec: WriterSpec,
    value_type: PyArrowType<DataType>,
    reader_schema: String,
    bodies: Vec<Vec<u8>>,
) -> PyResult<(Py<PyAny>, Vec<bool>)> {
    let mut values = Values::new(value_type.0, reader_schema, bodies.len().max(1));
    let decoder = values.decoder_for(1, |_| spec);
    for body in &bodies {
        values.add(decoder, body, None);
    }
    let (column, native) = values.finish().map_err(error)?;
    let flags = native.iter().map(|b| b.unwrap_or(false)).collect();
    Ok((column.to_data().to_pyarrow(py)?.unbind(), flags))
}
