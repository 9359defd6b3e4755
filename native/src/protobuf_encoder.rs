//! `ProtobufEncoder`: Arrow rows into Protobuf bodies for `write_table` and the Spark sink (the
//! work is `protobuf_encode.rs`'s).

use arrow::pyarrow::{PyArrowType, ToPyArrow};
use pyo3::prelude::*;

use crate::errors::error;
use crate::protobuf_encode;

/// Arrow rows into Protobuf bodies, as protobuf writes the message the Python path builds of each
/// row (`protobuf_encode.rs`): made for a message of a descriptor set (base64) and a column's
/// Arrow type, raising NativeError (why) where it is not sure of the pair; `encode(column)` gives
/// each row's body after `prefix`, null for a row the Python path is to write.
#[pyclass(frozen)]
pub struct ProtobufEncoder(protobuf_encode::Encoder);

#[pymethods]
impl ProtobufEncoder {
    #[new]
    fn new(
        descriptor_set: &str,
        message: &str,
        value_type: PyArrowType<arrow::datatypes::DataType>,
        prefix: &[u8],
    ) -> PyResult<Self> {
        protobuf_encode::Encoder::new(descriptor_set, message, &value_type.0, prefix).map(Self).map_err(error)
    }

    fn encode<'py>(&self, py: Python<'py>, column: PyArrowType<arrow::array::ArrayData>) -> PyResult<Bound<'py, PyAny>> {
        let column = arrow::array::make_array(column.0);
        let encoded = py.detach(|| self.0.encode(&column)).map_err(error)?;
        arrow::array::Array::into_data(encoded).to_pyarrow(py)
    }
}
