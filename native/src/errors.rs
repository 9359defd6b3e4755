//! The error of the Python API: `NativeError`, which every class and function of the extension
//! raises with a message that says what went wrong (the package words it for its users).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;

create_exception!(
    _pulsar_external_schema_native,
    NativeError,
    PyException,
    "The native reader could not do what it was asked (the message says what)."
);

/// A `NativeError` saying `text`.
pub fn error(text: impl Into<String>) -> PyErr {
    NativeError::new_err(text.into())
}
