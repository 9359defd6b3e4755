//! `Producer`: a producer of forwarded messages (`Client.producer`), which sends the rows of
//! pyarrow record batches in batched entries (`send.rs`); and `key_partitions`, the partition
//! each keyed row goes to on a topic of several, as pulsar-client routes it.

use std::sync::Mutex;

use arrow::array::RecordBatch;
use arrow::pyarrow::{PyArrowType, ToPyArrow};
use pyo3::prelude::*;

use crate::errors::error;
use crate::send;
use crate::sync::locked;

/// A producer of forwarded messages (`Client.producer`).
#[pyclass(module = "_pulsar_external_schema_native")]
pub struct Producer {
    state: Mutex<Option<send::Producer>>,
}

impl Producer {
    /// The Python object of an opened `producer`.
    pub fn new(producer: send::Producer) -> Self {
        Producer { state: Mutex::new(Some(producer)) }
    }
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
pub fn key_partitions(
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
