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
use std::ptr::NonNull;

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
        // SAFETY: no Python code runs while `plain` and the check read it (see `PyValue`).
        let value = unsafe { PyValue::new(value) };
        PyNode::checked(value).is_some_and(|node| self.validator.is_valid(node))
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
                    // SAFETY: orjson's value (`loads` is orjson's: `codec/json.py`), whose dicts
                    // have str keys only; no Python code runs while the check reads it.
                    let node = unsafe { PyNode::new(PyValue::new(&value)) };
                    if self.check.get().validator.is_valid(node) {
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
// Every object read here is a `PyValue`: borrowed under the GIL, which the caller holds for the
// whole check, and unchanged while it is read, because nothing of `plain` or of the check runs
// Python code (no format checker, no custom keyword; a dict of `str` keys is looked up with no
// `__eq__`). That is the contract of `PyValue::new`, the one way to make one from a Python
// object; the items of a container are borrowed from it under the same contract. The nodes the
// validator is given are `PyNode`s: values whose dicts have `str` keys only (`plain` checks it
// of a value to write; orjson reads nothing else). Every function below is then safe to call.

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

/// A Python object borrowed for `'a`, read in place: live, with the GIL held, and unchanged, it
/// and all it holds, for as long (`new`). Not `Send` (a raw pointer): it stays on the thread that
/// holds the GIL.
#[derive(Clone, Copy)]
struct PyValue<'a> {
    /// Never null.
    object: *mut ffi::PyObject,
    life: PhantomData<&'a ffi::PyObject>,
}

impl<'a> PyValue<'a> {
    /// `object`, to be read in place while it is borrowed.
    ///
    /// # Safety
    ///
    /// While the value (or anything read from it) is used, nothing changes or frees `object` or
    /// any object it holds: no Python code runs meanwhile (as none runs in `plain` and the check).
    unsafe fn new(object: &'a Bound<'_, PyAny>) -> Self {
        PyValue {
            object: object.as_ptr(),
            life: PhantomData,
        }
    }

    /// `object`, which this value holds (a list's item, a dict's key or value).
    ///
    /// # Safety
    ///
    /// `object` is a reference this value's container holds (borrowed from it), so that it
    /// lives, unchanged, as long as the value does.
    unsafe fn held(self, object: NonNull<ffi::PyObject>) -> PyValue<'a> {
        PyValue {
            object: object.as_ptr(),
            life: PhantomData,
        }
    }

    /// Whether its type is exactly `ty`.
    #[inline]
    fn is(self, ty: *mut ffi::PyTypeObject) -> bool {
        // SAFETY: a live object (see `new`).
        unsafe { ffi::Py_TYPE(self.object) == ty }
    }

    fn is_none(self) -> bool {
        // SAFETY: the interpreter's None.
        self.object == unsafe { ffi::Py_None() }
    }

    fn kind(self) -> Kind {
        if self.is(&raw mut ffi::PyUnicode_Type) {
            Kind::Str
        } else if self.is(&raw mut ffi::PyDict_Type) {
            Kind::Dict
        } else if self.is(&raw mut ffi::PyLong_Type) {
            Kind::Int
        } else if self.is(&raw mut ffi::PyFloat_Type) {
            Kind::Float
        } else if self.is(&raw mut ffi::PyList_Type) {
            Kind::List
        } else if self.is(&raw mut ffi::PyBool_Type) {
            Kind::Bool
        } else if self.is_none() {
            Kind::Null
        } else {
            Kind::Other
        }
    }

    /// An int's value, if it is an int (exactly) and fits 64 bits.
    fn integer(self) -> Option<Integer> {
        if !self.is(&raw mut ffi::PyLong_Type) {
            return None;
        }
        // SAFETY: an int (no `__index__` to run); a conversion error is cleared before anything
        // else runs.
        unsafe {
            let signed = ffi::PyLong_AsLongLong(self.object);
            if signed != -1 || ffi::PyErr_Occurred().is_null() {
                return Some(Integer::Signed(signed));
            }
            ffi::PyErr_Clear();
            let unsigned = ffi::PyLong_AsUnsignedLongLong(self.object);
            if unsigned == u64::MAX && !ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            Some(Integer::Unsigned(unsigned))
        }
    }

    /// A float's value, if it is a float (exactly).
    fn float(self) -> Option<f64> {
        // SAFETY: a float (no `__float__` to run).
        self.is(&raw mut ffi::PyFloat_Type).then(|| unsafe { ffi::PyFloat_AsDouble(self.object) })
    }

    /// A str's UTF-8 text, borrowed from the object (which keeps it), or None for a lone
    /// surrogate or another type.
    fn text(self) -> Option<&'a str> {
        // SAFETY: a live object; CPython keeps a str's UTF-8 form as long as the object lives, and
        // gives valid UTF-8 or NULL (with an error, cleared here: a lone surrogate, not a str).
        unsafe {
            let mut size: ffi::Py_ssize_t = 0;
            let data = ffi::PyUnicode_AsUTF8AndSize(self.object, &mut size);
            if data.is_null() {
                ffi::PyErr_Clear();
                return None;
            }
            let bytes = std::slice::from_raw_parts(data.cast::<u8>(), usize::try_from(size).ok()?);
            Some(std::str::from_utf8_unchecked(bytes))
        }
    }

    /// A list's items (none for another type).
    fn items(self) -> Items<'a> {
        // SAFETY: a list.
        let length = if self.is(&raw mut ffi::PyList_Type) { unsafe { ffi::PyList_Size(self.object) } } else { 0 };
        Items {
            list: self,
            index: 0,
            length,
        }
    }

    /// A dict's (key, value) pairs (none for another type).
    fn members(self) -> Members<'a> {
        Members {
            dict: self,
            position: 0,
        }
    }

    /// A dict's number of members (none for another type).
    fn dict_len(self) -> usize {
        // SAFETY: a dict.
        let size = if self.is(&raw mut ffi::PyDict_Type) { unsafe { ffi::PyDict_Size(self.object) } } else { 0 };
        usize::try_from(size).unwrap_or(0)
    }
}

/// Whether `value` holds plain JSON only (the module's docstring): what this module answers.
fn plain(value: PyValue<'_>, depth: usize) -> bool {
    match value.kind() {
        Kind::Null | Kind::Bool => true,
        Kind::Int => value.integer().is_some(),
        Kind::Float => value.float().is_some_and(f64::is_finite),
        Kind::Str => value.text().is_some(),
        Kind::List => depth < MAX_DEPTH && value.items().all(|item| plain(item, depth + 1)),
        Kind::Dict => {
            depth < MAX_DEPTH
                && value.members().all(|(key, value)| {
                    key.kind() == Kind::Str && key.text().is_some() && plain(value, depth + 1)
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

/// A list's items, borrowed.
struct Items<'a> {
    list: PyValue<'a>,
    index: isize,
    length: isize,
}

impl<'a> Iterator for Items<'a> {
    type Item = PyValue<'a>;

    fn next(&mut self) -> Option<PyValue<'a>> {
        if self.index >= self.length {
            return None;
        }
        // SAFETY: a list (`length` is 0 otherwise) and an index below its length, which nothing
        // changes: a reference the list holds, borrowed, or NULL (with an error, cleared) for none.
        unsafe {
            let item = NonNull::new(ffi::PyList_GetItem(self.list.object, self.index));
            self.index += 1;
            if item.is_none() {
                ffi::PyErr_Clear();
                self.index = self.length;
            }
            item.map(|item| self.list.held(item))
        }
    }
}

/// A dict's (key, value) pairs, borrowed.
struct Members<'a> {
    dict: PyValue<'a>,
    position: ffi::Py_ssize_t,
}

impl<'a> Iterator for Members<'a> {
    type Item = (PyValue<'a>, PyValue<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        // SAFETY: a live object (PyDict_Next answers 0 for another type than dict) no one changes
        // during the walk; references the dict holds, borrowed, not NULL where it answers 1.
        unsafe {
            if ffi::PyDict_Next(self.dict.object, &mut self.position, &mut key, &mut value) == 0 {
                return None;
            }
            Some((self.dict.held(NonNull::new(key)?), self.dict.held(NonNull::new(value)?)))
        }
    }
}

/// The representation the validator reads: Python objects in place.
pub struct PyJson;

impl Json for PyJson {
    type Node<'a> = PyNode<'a>;
    type PreparedKey = Py<PyString>;
    type StringBuffer = ();

    /// A dict lookup costs several steps of a walk over its members (measured on a 7-field
    /// record: `required` walks a small object rather than looking each name up).
    const KEYS_PER_LOOKUP: usize = 8;

    fn prepare_key(key: &str) -> Py<PyString> {
        Python::attach(|py| PyString::intern(py, key).unbind())
    }

    fn with_string_node<T>(_: &mut (), string: &str, f: impl FnOnce(PyNode<'_>) -> T) -> T {
        Python::attach(|py| f(PyNode::of_str(&PyString::new(py, string))))
    }
}

/// A value whose dicts, at any depth, have `str` keys only (exactly): a lookup in one compares
/// strings and runs no Python code. `plain` checks it (`checked`); orjson reads nothing else.
/// The items of a node are nodes.
#[derive(Clone, Copy)]
pub struct PyNode<'a>(PyValue<'a>);

impl<'a> PyNode<'a> {
    /// `value` where it holds plain JSON only (`plain`).
    fn checked(value: PyValue<'a>) -> Option<Self> {
        plain(value, 0).then_some(PyNode(value))
    }

    /// `value`, as it is.
    ///
    /// # Safety
    ///
    /// Every dict `value` holds, at any depth, has keys of type `str` (exactly) only.
    unsafe fn new(value: PyValue<'a>) -> Self {
        PyNode(value)
    }

    /// A str, which holds nothing and never changes.
    fn of_str(string: &'a Bound<'_, PyString>) -> Self {
        // SAFETY: a str holds no object, and nothing changes it.
        PyNode(unsafe { PyValue::new(string.as_any()) })
    }

    fn kind(self) -> Kind {
        self.0.kind()
    }
}

impl<'a> Node<'a, PyJson> for PyNode<'a> {
    type Object = PyObjectNode<'a>;
    type Array = PyArrayNode<'a>;
    type Number = PyNumber<'a>;

    fn as_object(&self) -> Option<PyObjectNode<'a>> {
        (self.kind() == Kind::Dict).then_some(PyObjectNode(*self))
    }

    fn as_array(&self) -> Option<PyArrayNode<'a>> {
        (self.kind() == Kind::List).then_some(PyArrayNode(*self))
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        if self.kind() == Kind::Str {
            self.0.text().map(Cow::Borrowed)
        } else {
            None
        }
    }

    fn as_number(&self) -> Option<PyNumber<'a>> {
        let value = match self.kind() {
            Kind::Int => self.0.integer()?.into(),
            Kind::Float => Numeric::Float(self.0.float()?),
            _ => return None,
        };
        Some(PyNumber {
            object: self.0,
            value,
        })
    }

    fn as_boolean(&self) -> Option<bool> {
        // SAFETY: the interpreter's True.
        (self.kind() == Kind::Bool).then(|| self.0.object == unsafe { ffi::Py_True() })
    }

    fn is_null(&self) -> bool {
        self.kind() == Kind::Null
    }

    fn json_type(&self) -> JsonType {
        match self.kind() {
            Kind::Null | Kind::Other => JsonType::Null,
            Kind::Bool => JsonType::Boolean,
            Kind::Int | Kind::Float => JsonType::Number,
            Kind::Str => JsonType::String,
            Kind::List => JsonType::Array,
            Kind::Dict => JsonType::Object,
        }
    }

    fn string_length(&self) -> Option<u64> {
        if self.kind() == Kind::Str {
            // SAFETY: a str; its length in code points.
            u64::try_from(unsafe { ffi::PyUnicode_GetLength(self.0.object) }).ok()
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
        Cow::Owned(to_value(*self))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(self.0.object as usize))
    }
}

/// The value as serde_json holds it (for errors, `const`, `enum` and `uniqueItems`).
fn to_value(node: PyNode<'_>) -> Value {
    match node.kind() {
        Kind::Null | Kind::Other => Value::Null,
        Kind::Bool => Value::Bool(node.as_boolean() == Some(true)),
        Kind::Int | Kind::Float => node.as_number().map_or(Value::Null, |number| {
            Value::Number(number.to_number().into_owned())
        }),
        Kind::Str => Value::String(node.0.text().unwrap_or_default().to_owned()),
        // the items of a node are nodes
        Kind::List => Value::Array(node.0.items().map(|item| to_value(PyNode(item))).collect()),
        Kind::Dict => Value::Object(
            node.0
                .members()
                .map(|(key, value)| (key.text().unwrap_or_default().to_owned(), to_value(PyNode(value))))
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
pub struct PyNumber<'a> {
    object: PyValue<'a>,
    value: Numeric,
}

impl JsonNumber for PyNumber<'_> {
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
            // SAFETY: a live int or float (see `PyValue`).
            let object = unsafe { Bound::from_borrowed_ptr(py, self.object.object) };
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
        self.0 .0.dict_len()
    }

    fn get(&self, key: &Py<PyString>) -> Option<PyNode<'a>> {
        // SAFETY: a dict whose keys are all str (a node's), so the lookup runs no Python code; a
        // reference the dict holds, borrowed (an item of the node: a node), or NULL.
        unsafe {
            let value = NonNull::new(ffi::PyDict_GetItem(self.0 .0.object, key.as_ptr()));
            value.map(|value| PyNode(self.0 .0.held(value)))
        }
    }

    fn members(&self) -> PyMembers<'a> {
        PyMembers(self.0 .0.members())
    }
}

pub struct PyMembers<'a>(Members<'a>);

impl<'a> Iterator for PyMembers<'a> {
    type Item = (&'a str, PyNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let (key, value) = self.0.next()?;
        // the items of a node are nodes
        Some((key.text().unwrap_or_default(), PyNode(value)))
    }
}

/// A list of plain values.
#[derive(Clone, Copy)]
pub struct PyArrayNode<'a>(PyNode<'a>);

impl<'a> Array<'a, PyJson> for PyArrayNode<'a> {
    type Node = PyNode<'a>;
    type ElementsIter = PyElements<'a>;

    fn len(&self) -> usize {
        let items = self.0 .0.items();
        usize::try_from(items.length).unwrap_or(0)
    }

    fn elements(&self) -> PyElements<'a> {
        PyElements(self.0 .0.items())
    }
}

pub struct PyElements<'a>(Items<'a>);

impl<'a> Iterator for PyElements<'a> {
    type Item = PyNode<'a>;

    fn next(&mut self) -> Option<PyNode<'a>> {
        // the items of a node are nodes
        self.0.next().map(PyNode)
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
