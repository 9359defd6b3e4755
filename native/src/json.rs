//! JSON Schema values, checked where they are: the JSON codec's (`codec/json.py`) writer and
//! reader where the extension is installed.
//!
//! jsonschema-rs validates a Python value in a call of its own from Python, and the JSON codec
//! called it, `orjson` and the guard that finds integers orjson reads inexactly one after another.
//! `JsonCodec` makes each message one call: `write(value)` checks the value in place (the
//! `jsonschema` crate reading Python objects through `PyJson`, with no copy) and has orjson write
//! it; `read(payload)` finds long integers, has orjson read the payload and checks the result in
//! place. docs/benchmarks.md measures the difference.
//!
//! Only what is sure is answered here; the rest goes to the Python path (`otherwise`), which
//! decides and words it as before, so the verdicts are that path's:
//! * values of the plain JSON types only: `dict` with `str` keys, `list`, `str`, `int` within 64
//!   bits, finite `float`, `bool` and `None`, exactly those types (no subclass, tuple, enum or
//!   other object that jsonschema-rs and orjson each treat in their own way), nested at most
//!   `MAX_DEPTH` deep;
//! * a value its schema refuses (the Python path raises its error, naming the field);
//! * a payload with a run of 19 digits (an integer orjson may read as a double), or one orjson
//!   refuses (the Python path reads it with `json`).
//!
//! The check is the `jsonschema` crate's, with the number feature the jsonschema-rs package builds
//! it with, built as the Python path builds that one: formats not asserted, references only from
//! the given resources, relative ones against the same base URI. Its version (0.60) is the newest
//! whose dependencies the crate registry serves, one before the Python package's (0.61):
//! tests/unit/test_json_native.py holds its verdicts to jsonschema-rs's.

use std::borrow::Cow;
use std::marker::PhantomData;

use jsonschema::json::{cmp, Array, Json, JsonNumber, Node, NodeIdentity, Object};
use jsonschema::{JsonType, Registry, Retrieve, Uri, Validator};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use serde_json::{Map, Number, Value};

/// Deeper values to write go the Python way (rare; it takes them as before).
const MAX_DEPTH: usize = 64;
/// Digits in a row from which an integer may not fit 64 bits (`codec/value_checks.py`'s `json_loads`).
const LONG_NUMBER: usize = 19;

/// One JSON Schema's check, built once per schema.
#[pyclass(frozen, module = "_pulsar_external_schema_native")]
pub struct JsonSchemaCheck {
    validator: Validator<PyJson>,
}

#[pymethods]
impl JsonSchemaCheck {
    /// `schema`: the schema's text; `resources`: (URI, text) of each referenced schema;
    /// `base_uri`: what a schema without `$id` resolves against. ValueError where the schema
    /// cannot be built.
    #[new]
    #[pyo3(signature = (schema, resources, base_uri))]
    fn new(schema: &str, resources: Vec<(String, String)>, base_uri: &str) -> PyResult<Self> {
        let validator = build(schema, resources, base_uri).map_err(PyValueError::new_err)?;
        Ok(JsonSchemaCheck { validator })
    }

    /// True where `value` is plain JSON its schema takes; False where the Python path decides.
    fn takes(&self, value: &Bound<'_, PyAny>) -> bool {
        plain(value.as_ptr(), 0) && self.valid(value.as_ptr())
    }
}

impl JsonSchemaCheck {
    /// The verdict on a plain value (what `plain` says is one, or what orjson read).
    fn valid(&self, value: *mut ffi::PyObject) -> bool {
        self.validator.is_valid(PyNode::new(value))
    }
}

/// A writer and a reader of one schema's values: each message one call, the rest the Python
/// path's.
#[pyclass(frozen, module = "_pulsar_external_schema_native")]
pub struct JsonCodec {
    check: Py<JsonSchemaCheck>,
    loads: Py<PyAny>,
    dumps: Py<PyAny>,
    read_otherwise: Py<PyAny>,
    write_otherwise: Py<PyAny>,
}

#[pymethods]
impl JsonCodec {
    /// `loads`/`dumps`: orjson's; `read_otherwise(payload)`/`write_otherwise(value)`: the
    /// Python path's reader (that checks) and writer (that checks), for what this leaves.
    #[new]
    #[pyo3(signature = (check, *, loads, dumps, read_otherwise, write_otherwise))]
    fn new(
        check: Py<JsonSchemaCheck>,
        loads: Py<PyAny>,
        dumps: Py<PyAny>,
        read_otherwise: Py<PyAny>,
        write_otherwise: Py<PyAny>,
    ) -> Self {
        JsonCodec {
            check,
            loads,
            dumps,
            read_otherwise,
            write_otherwise,
        }
    }

    /// The value's JSON text (compact, non-ASCII as is), as the Python path writes it.
    pub(crate) fn write<'py>(&self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = value.py();
        if self.check.get().takes(value) {
            // No NaN or infinity in a plain value, which is all orjson writes otherwise than `json`.
            self.dumps.bind(py).call1((value,))
        } else {
            self.write_otherwise.bind(py).call1((value,))
        }
    }

    /// The payload's value, as the Python path reads and checks it.
    pub(crate) fn read<'py>(&self, payload: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = payload.py();
        if let Ok(bytes) = payload.cast_exact::<PyBytes>() {
            if !has_long_number(bytes.as_bytes()) {
                // orjson reads plain JSON only: exact types, finite floats, no lone surrogate, and
                // (without a run of 19 digits) integers within 64 bits.
                if let Ok(value) = self.loads.bind(py).call1((payload,)) {
                    if self.check.get().valid(value.as_ptr()) {
                        return Ok(value);
                    }
                }
            }
        }
        self.read_otherwise.bind(py).call1((payload,))
    }
}

fn build(text: &str, resources: Vec<(String, String)>, base_uri: &str) -> Result<Validator<PyJson>, String> {
    build_validator::<PyJson>(text, resources, base_uri)
}

/// The check of a schema (`text`, with its referenced `resources`) over values of `J`, built as
/// the Python path builds jsonschema-rs's: formats not asserted, nothing fetched.
pub(crate) fn build_validator<J: Json>(
    text: &str,
    resources: Vec<(String, String)>,
    base_uri: &str,
) -> Result<Validator<J>, String> {
    let schema: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut registry = Registry::new();
    for (uri, contents) in resources {
        let contents: Value = serde_json::from_str(&contents).map_err(|e| e.to_string())?;
        registry = registry.add(uri, contents).map_err(|e| e.to_string())?;
    }
    let registry = registry.prepare().map_err(|e| e.to_string())?;
    jsonschema::options_for::<J>()
        .with_base_uri(base_uri)
        .with_registry(&registry)
        .with_retriever(Offline)
        .should_validate_formats(false)
        .build(&schema)
        .map_err(|e| e.to_string())
}

/// No reference is fetched: what the resources do not give is an error, as on the Python path.
struct Offline;

impl Retrieve for Offline {
    fn retrieve(&self, uri: &Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{uri} is not among the schema's references").into())
    }
}

/// A run of `LONG_NUMBER` digits anywhere (in a string too: a cheap, safe over-approximation).
/// It looks at the last byte of each window a run could fill, and back from it over digits: a
/// text of few digits is passed in steps of `LONG_NUMBER` bytes.
pub(crate) fn has_long_number(payload: &[u8]) -> bool {
    let mut end = LONG_NUMBER - 1; // the last byte of the window looked at
    while end < payload.len() {
        let digits = payload[..=end]
            .iter()
            .rev()
            .take(LONG_NUMBER)
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == LONG_NUMBER {
            return true;
        }
        // the byte before those digits is not one: a run starts after it
        end += LONG_NUMBER - digits;
    }
    false
}

// -- Python objects as the validator reads them ---------------------------------------------------
//
// Every node the validator is given has passed `plain`, under the GIL the caller holds for the
// whole check, and nothing of the check runs Python code (no format checker, no custom keyword):
// so each pointer below stays valid, and each conversion succeeds, for the check's duration.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    Str,
    List,
    Dict,
    Other,
}

fn kind(object: *mut ffi::PyObject) -> Kind {
    // SAFETY: `object` is a live object (see above); the type objects are the interpreter's.
    unsafe {
        let ty = ffi::Py_TYPE(object);
        if ty == &raw mut ffi::PyUnicode_Type {
            Kind::Str
        } else if ty == &raw mut ffi::PyDict_Type {
            Kind::Dict
        } else if ty == &raw mut ffi::PyLong_Type {
            Kind::Int
        } else if ty == &raw mut ffi::PyFloat_Type {
            Kind::Float
        } else if ty == &raw mut ffi::PyList_Type {
            Kind::List
        } else if ty == &raw mut ffi::PyBool_Type {
            Kind::Bool
        } else if object == ffi::Py_None() {
            Kind::Null
        } else {
            Kind::Other
        }
    }
}

/// Whether `object` holds plain JSON only (the module's docstring): what this module answers.
fn plain(object: *mut ffi::PyObject, depth: usize) -> bool {
    match kind(object) {
        Kind::Null | Kind::Bool => true,
        Kind::Int => integer(object).is_some(),
        // SAFETY: a float.
        Kind::Float => unsafe { ffi::PyFloat_AsDouble(object) }.is_finite(),
        Kind::Str => text(object).is_some(),
        Kind::List => {
            depth < MAX_DEPTH && (0..list_len(object)).all(|index| plain(list_item(object, index), depth + 1))
        }
        Kind::Dict => {
            depth < MAX_DEPTH
                && Members::new(object).all(|(key, value)| {
                    kind(key) == Kind::Str && text(key).is_some() && plain(value, depth + 1)
                })
        }
        Kind::Other => false,
    }
}

#[derive(Clone, Copy)]
enum Integer {
    Signed(i64),
    Unsigned(u64),
}

/// An int's value, if it fits 64 bits.
fn integer(object: *mut ffi::PyObject) -> Option<Integer> {
    // SAFETY: an int; a conversion error is cleared before anything else runs.
    unsafe {
        let signed = ffi::PyLong_AsLongLong(object);
        if signed != -1 || ffi::PyErr_Occurred().is_null() {
            return Some(Integer::Signed(signed));
        }
        ffi::PyErr_Clear();
        let unsigned = ffi::PyLong_AsUnsignedLongLong(object);
        if unsigned == u64::MAX && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(Integer::Unsigned(unsigned))
    }
}

/// A str's UTF-8 text, borrowed from the object (which keeps it), or None for a lone surrogate.
fn text<'a>(object: *mut ffi::PyObject) -> Option<&'a str> {
    // SAFETY: a str; CPython keeps its UTF-8 form as long as the object lives, and gives valid
    // UTF-8 or NULL (with an error, cleared here).
    unsafe {
        let mut size: ffi::Py_ssize_t = 0;
        let data = ffi::PyUnicode_AsUTF8AndSize(object, &mut size);
        if data.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), usize::try_from(size).ok()?);
        Some(std::str::from_utf8_unchecked(bytes))
    }
}

fn list_len(list: *mut ffi::PyObject) -> isize {
    // SAFETY: a list.
    unsafe { ffi::PyList_Size(list) }
}

fn list_item(list: *mut ffi::PyObject, index: isize) -> *mut ffi::PyObject {
    // SAFETY: a list and an index below its length: a borrowed reference.
    unsafe { ffi::PyList_GetItem(list, index) }
}

/// A dict's (key, value) pairs, borrowed.
struct Members {
    dict: *mut ffi::PyObject,
    position: ffi::Py_ssize_t,
}

impl Members {
    fn new(dict: *mut ffi::PyObject) -> Self {
        Members { dict, position: 0 }
    }
}

impl Iterator for Members {
    type Item = (*mut ffi::PyObject, *mut ffi::PyObject);

    fn next(&mut self) -> Option<Self::Item> {
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        // SAFETY: a dict no one changes during the walk.
        let more = unsafe { ffi::PyDict_Next(self.dict, &mut self.position, &mut key, &mut value) };
        (more != 0).then_some((key, value))
    }
}

/// The representation the validator reads: Python objects in place.
pub struct PyJson;

impl Json for PyJson {
    type Node<'a> = PyNode<'a>;
    type PreparedKey = Py<PyString>;
    type StringBuffer = Option<Py<PyString>>;

    /// A dict lookup costs several steps of a walk over its members (measured on a 7-field
    /// record: `required` walks a small object rather than looking each name up).
    const KEYS_PER_LOOKUP: usize = 8;

    fn prepare_key(key: &str) -> Py<PyString> {
        Python::attach(|py| PyString::intern(py, key).unbind())
    }

    fn with_string_node<T>(
        buffer: &mut Option<Py<PyString>>,
        string: &str,
        f: impl FnOnce(PyNode<'_>) -> T,
    ) -> T {
        let made = Python::attach(|py| PyString::new(py, string).unbind());
        let node = PyNode::new(made.as_ptr());
        *buffer = Some(made); // kept alive while `f` reads it
        f(node)
    }
}

/// A plain Python value, borrowed for the check.
#[derive(Clone, Copy)]
pub struct PyNode<'a> {
    object: *mut ffi::PyObject,
    life: PhantomData<&'a ()>,
}

impl PyNode<'_> {
    fn new(object: *mut ffi::PyObject) -> Self {
        PyNode {
            object,
            life: PhantomData,
        }
    }
}

impl<'a> Node<'a, PyJson> for PyNode<'a> {
    type Object = PyObjectNode<'a>;
    type Array = PyArrayNode<'a>;
    type Number = PyNumber;

    fn as_object(&self) -> Option<PyObjectNode<'a>> {
        (kind(self.object) == Kind::Dict).then_some(PyObjectNode(*self))
    }

    fn as_array(&self) -> Option<PyArrayNode<'a>> {
        (kind(self.object) == Kind::List).then_some(PyArrayNode(*self))
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        if kind(self.object) == Kind::Str {
            text(self.object).map(Cow::Borrowed)
        } else {
            None
        }
    }

    fn as_number(&self) -> Option<PyNumber> {
        match kind(self.object) {
            Kind::Int => integer(self.object).map(|value| PyNumber {
                object: self.object,
                value: value.into(),
            }),
            // SAFETY: a float.
            Kind::Float => Some(PyNumber {
                object: self.object,
                value: Numeric::Float(unsafe { ffi::PyFloat_AsDouble(self.object) }),
            }),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        // SAFETY: the interpreter's True.
        (kind(self.object) == Kind::Bool).then(|| self.object == unsafe { ffi::Py_True() })
    }

    fn is_null(&self) -> bool {
        kind(self.object) == Kind::Null
    }

    fn json_type(&self) -> JsonType {
        match kind(self.object) {
            Kind::Null | Kind::Other => JsonType::Null,
            Kind::Bool => JsonType::Boolean,
            Kind::Int | Kind::Float => JsonType::Number,
            Kind::Str => JsonType::String,
            Kind::List => JsonType::Array,
            Kind::Dict => JsonType::Object,
        }
    }

    fn string_length(&self) -> Option<u64> {
        if kind(self.object) == Kind::Str {
            // SAFETY: a str; its length in code points.
            u64::try_from(unsafe { ffi::PyUnicode_GetLength(self.object) }).ok()
        } else {
            None
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        match expected {
            Value::Null => self.is_null(),
            Value::Bool(flag) => self.as_boolean() == Some(*flag),
            Value::Number(number) => self
                .as_number()
                .is_some_and(|own| cmp::equal_numbers(&own, number)),
            Value::String(string) => self.as_string().is_some_and(|own| own == string.as_str()),
            _ => cmp::equal(&self.to_value(), expected),
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(to_value(self.object))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(self.object as usize))
    }
}

/// The value as serde_json holds it (for errors, `const`, `enum` and `uniqueItems`).
fn to_value(object: *mut ffi::PyObject) -> Value {
    let node = PyNode::new(object);
    match kind(object) {
        Kind::Null | Kind::Other => Value::Null,
        Kind::Bool => Value::Bool(node.as_boolean() == Some(true)),
        Kind::Int | Kind::Float => node.as_number().map_or(Value::Null, |number| {
            Value::Number(number.to_number().into_owned())
        }),
        Kind::Str => Value::String(text(object).unwrap_or_default().to_owned()),
        Kind::List => Value::Array(
            (0..list_len(object))
                .map(|index| to_value(list_item(object, index)))
                .collect(),
        ),
        Kind::Dict => Value::Object(
            Members::new(object)
                .map(|(key, value)| (text(key).unwrap_or_default().to_owned(), to_value(value)))
                .collect::<Map<_, _>>(),
        ),
    }
}

#[derive(Clone, Copy)]
enum Numeric {
    Signed(i64),
    Unsigned(u64),
    Float(f64),
}

impl From<Integer> for Numeric {
    fn from(value: Integer) -> Self {
        match value {
            Integer::Signed(n) => Numeric::Signed(n),
            Integer::Unsigned(n) => Numeric::Unsigned(n),
        }
    }
}

/// A Python int (within 64 bits) or finite float, as jsonschema-rs reads one.
pub struct PyNumber {
    object: *mut ffi::PyObject,
    value: Numeric,
}

impl JsonNumber for PyNumber {
    fn as_u64(&self) -> Option<u64> {
        match self.value {
            Numeric::Signed(n) => u64::try_from(n).ok(),
            Numeric::Unsigned(n) => Some(n),
            Numeric::Float(_) => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match self.value {
            Numeric::Signed(n) => Some(n),
            Numeric::Unsigned(n) => i64::try_from(n).ok(),
            Numeric::Float(_) => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        // `as`: the nearest double, as serde_json's `Number::as_f64` gives an integer's.
        #[allow(clippy::cast_precision_loss)]
        Some(match self.value {
            Numeric::Signed(n) => n as f64,
            Numeric::Unsigned(n) => n as f64,
            Numeric::Float(x) => x,
        })
    }

    /// Python's `str` of the number (jsonschema-rs reads a Python number's digits so).
    fn as_str(&self) -> Cow<'_, str> {
        Python::attach(|py| {
            // SAFETY: a live int or float (see above).
            let object = unsafe { Bound::from_borrowed_ptr(py, self.object) };
            object
                .str()
                .ok()
                .and_then(|text| text.to_str().ok().map(str::to_owned))
        })
        .map_or(Cow::Borrowed(""), Cow::Owned)
    }

    fn to_number(&self) -> Cow<'_, Number> {
        Cow::Owned(match self.value {
            Numeric::Signed(n) => Number::from(n),
            Numeric::Unsigned(n) => Number::from(n),
            Numeric::Float(x) => Number::from_f64(x).unwrap_or_else(|| Number::from(0)),
        })
    }

    fn is_integer(&self) -> bool {
        match self.value {
            Numeric::Signed(_) | Numeric::Unsigned(_) => true,
            Numeric::Float(x) => x.fract() == 0.0,
        }
    }

    fn is_written_as_integer(&self) -> bool {
        // Python's `json` writes a float with a fraction or an exponent part.
        !matches!(self.value, Numeric::Float(_))
    }
}

/// A dict of plain values.
#[derive(Clone, Copy)]
pub struct PyObjectNode<'a>(PyNode<'a>);

impl<'a> Object<'a, PyJson> for PyObjectNode<'a> {
    type Node = PyNode<'a>;
    type MemberName = &'a str;
    type MembersIter = PyMembers<'a>;

    fn len(&self) -> usize {
        // SAFETY: a dict.
        usize::try_from(unsafe { ffi::PyDict_Size(self.0.object) }).unwrap_or(0)
    }

    fn get(&self, key: &Py<PyString>) -> Option<PyNode<'a>> {
        // SAFETY: a dict whose keys are all str (so the lookup runs no Python code); a borrowed
        // reference or NULL.
        let value = unsafe { ffi::PyDict_GetItem(self.0.object, key.as_ptr()) };
        (!value.is_null()).then(|| PyNode::new(value))
    }

    fn members(&self) -> PyMembers<'a> {
        PyMembers {
            members: Members::new(self.0.object),
            life: PhantomData,
        }
    }
}

pub struct PyMembers<'a> {
    members: Members,
    life: PhantomData<&'a ()>,
}

impl<'a> Iterator for PyMembers<'a> {
    type Item = (&'a str, PyNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let (key, value) = self.members.next()?;
        Some((text(key).unwrap_or_default(), PyNode::new(value)))
    }
}

/// A list of plain values.
#[derive(Clone, Copy)]
pub struct PyArrayNode<'a>(PyNode<'a>);

impl<'a> Array<'a, PyJson> for PyArrayNode<'a> {
    type Node = PyNode<'a>;
    type ElementsIter = PyElements<'a>;

    fn len(&self) -> usize {
        usize::try_from(list_len(self.0.object)).unwrap_or(0)
    }

    fn elements(&self) -> PyElements<'a> {
        PyElements {
            list: self.0.object,
            index: 0,
            length: list_len(self.0.object),
            life: PhantomData,
        }
    }
}

pub struct PyElements<'a> {
    list: *mut ffi::PyObject,
    index: isize,
    length: isize,
    life: PhantomData<&'a ()>,
}

impl<'a> Iterator for PyElements<'a> {
    type Item = PyNode<'a>;

    fn next(&mut self) -> Option<PyNode<'a>> {
        (self.index < self.length).then(|| {
            self.index += 1;
            PyNode::new(list_item(self.list, self.index - 1))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{has_long_number, LONG_NUMBER};

    /// The windowed scan against the plain one, on every placement of runs around the length.
    #[test]
    fn a_long_number_is_found_wherever_it_is() {
        let plain = |text: &[u8]| {
            text.split(|b| !b.is_ascii_digit())
                .any(|run| run.len() >= LONG_NUMBER)
        };
        for before in 0..45 {
            for run in [0, 1, LONG_NUMBER - 1, LONG_NUMBER, LONG_NUMBER + 1, 40] {
                for after in [0, 1, 7, 30] {
                    for filler in [b'a', b'1'] {
                        let mut text = vec![filler; before];
                        text.push(b'"');
                        text.extend(std::iter::repeat_n(b'7', run));
                        text.push(b',');
                        text.extend(std::iter::repeat_n(b'x', after));
                        assert_eq!(
                            has_long_number(&text),
                            plain(&text),
                            "{}",
                            String::from_utf8_lossy(&text)
                        );
                    }
                }
            }
        }
        assert!(!has_long_number(b""));
        assert!(has_long_number(b"{\"n\":12345678901234567890}"));
        assert!(!has_long_number(b"{\"n\":123456789012345678}"));
    }
}
