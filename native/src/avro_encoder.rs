//! `AvroEncoder`: Arrow rows into Avro bodies for `write_table` (the work is `encode.rs`'s).

use arrow::pyarrow::{PyArrowType, ToPyArrow};
use pyo3::prelude::*;

use crate::encode;
use crate::errors::error;

/// Arrow rows into Avro bodies, as fastavro writes their Python values (`encode.rs`): made for a
/// writer schema (one self-contained Avro JSON text) and a column's Arrow type, raising NativeError
/// (why) where it is not sure of the pair; `encode(column)` gives each row's body after `prefix`,
/// null for a row the Python path is to write.
#[pyclass(frozen)]
pub struct AvroEncoder(encode::Encoder);

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
