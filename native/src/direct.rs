//! `ExternalSchema`'s everyday message in one native call: `encode(topic, value)` looks up the
//! topic's kept writer, makes its checks and calls the format's write, with no Python frame
//! between the caller and the format; reading, every reader's door (`decode`, `decode_message`,
//! `decode_batch`) ends in the part's kept `DirectReader`. Where the extension is not installed
//! there is no kept writer or reader: the message takes the compiled plan in Python
//! (`codec/part.py`), which these objects run in one native call, answer for answer
//! (tests/unit/test_native_direct.py). Only the glue is here. What a message is
//! written or read as, and every decision on a message the kept writer or reader does not take,
//! stay Python's (`schema.py`, `codec/part.py`), which these objects call or hand the message
//! back to:
//!
//! * `DirectWriter` and `DirectReader` are what `PartCodec.direct_writer` and `PartCodec.direct`
//!   keep: a plan's expiry, its guard, its `write` or `read`, clearing a key part's original key;
//! * `Encoder` is what an `ExternalSchema` keeps as its instance's `encode` and `encode_for`:
//!   the everyday call looks up the topic's kept writer in the part's dict and answers with it;
//!   any other call, and a message the kept one does not take, goes to the class's method, which
//!   decides as without the extension.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::json::JsonCodec;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};

/// One plan's kept writer (`codec/part.py`'s `direct_writer`).
#[pyclass(frozen, module = "_pulsar_external_schema_native")]
pub struct DirectWriter {
    write: Py<PyAny>,
    /// The codec whose `write` `write` is, called here without Python's method call.
    json: Option<Py<JsonCodec>>,
    prefix: Option<Py<PyBytes>>,
    schema_id: Py<PyBytes>,
    upkeep: Upkeep,
}

#[pymethods]
impl DirectWriter {
    /// `write(value) -> payload`: the plan's steps and the format's writer; `prefix`: the id
    /// prefix of prefix mode (empty otherwise); `expires_in`: seconds the plan has left (None:
    /// no expiry); `key_parts`: non-empty once a key part exists, and then `clear_original_key()`
    /// runs after each write, as confluent-kafka's value serializer does.
    #[new]
    #[pyo3(signature = (write, *, prefix, schema_id, expires_in, key_parts, clear_original_key))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        write: Py<PyAny>,
        prefix: Bound<'_, PyBytes>,
        schema_id: Py<PyBytes>,
        expires_in: Option<f64>,
        key_parts: Py<PyList>,
        clear_original_key: Py<PyAny>,
    ) -> Self {
        let json = json_codec(write.bind(prefix.py()), "write");
        DirectWriter {
            write,
            json,
            prefix: (!prefix.as_bytes().is_empty()).then(|| prefix.unbind()),
            schema_id,
            upkeep: Upkeep::new(expires_in, key_parts, clear_original_key),
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.write)?;
        visit.call(&self.upkeep.clear_original_key)
    }

    /// `(payload, schema id)`, the payload id-prefixed in prefix mode; None where the long way
    /// decides (the plan expired or was dropped, or the write raised).
    fn __call__<'py>(&self, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let py = value.py();
        Ok(match self.written(value)? {
            Some(payload) => Some(PyTuple::new(
                py,
                [payload, self.schema_id.bind(py).clone().into_any()],
            )?),
            None => None,
        })
    }
}

impl DirectWriter {
    /// The payload, or None for the long way.
    #[inline]
    fn written<'py>(&self, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = value.py();
        if self.upkeep.expired() {
            return Ok(None);
        }
        let written = match &self.json {
            Some(codec) => codec.get().write(value),
            None => self.write.bind(py).call1((value,)),
        };
        let payload = match written {
            Ok(payload) => payload,
            Err(error) => return declined(py, error).map(|()| None),
        };
        self.upkeep.clear_key(py)?;
        Ok(Some(match &self.prefix {
            None => payload,
            Some(prefix) => {
                let payload = payload.cast_into::<PyBytes>().map_err(PyErr::from)?;
                PyBytes::new(py, &[prefix.bind(py).as_bytes(), payload.as_bytes()].concat()).into_any()
            }
        }))
    }
}

/// The `JsonCodec` of `function`, where it is that codec's method `name` (`write`, `read`).
fn json_codec(function: &Bound<'_, PyAny>, name: &str) -> Option<Py<JsonCodec>> {
    let py = function.py();
    let codec = function
        .getattr(intern!(py, "__self__"))
        .ok()?
        .cast_into::<JsonCodec>()
        .ok()?;
    let named = function.getattr(intern!(py, "__name__")).ok()?;
    (named.extract::<&str>().ok()? == name).then(|| codec.unbind())
}

/// Whether an error of the format's call hands the message to the long way (which runs it again
/// and says why): an `Exception`, as the compiled plan's `except Exception`; an interrupt or exit goes
/// on up.
fn declined(py: Python<'_>, error: PyErr) -> PyResult<()> {
    if error.is_instance_of::<PyException>(py) {
        Ok(())
    } else {
        Err(error)
    }
}

/// What a kept writer and a kept reader do besides their call: the plan's expiry, and clearing
/// the original key a key part set, as confluent-kafka's value serdes clear it, once any key part
/// exists (`key_parts` non-empty).
struct Upkeep {
    deadline: Option<Deadline>,
    key_parts: Py<PyList>,
    clear_original_key: Py<PyAny>,
}

impl Upkeep {
    fn new(expires_in: Option<f64>, key_parts: Py<PyList>, clear_original_key: Py<PyAny>) -> Self {
        Upkeep {
            deadline: expires_in.map(Deadline::after),
            key_parts,
            clear_original_key,
        }
    }

    #[inline]
    fn expired(&self) -> bool {
        self.deadline.as_ref().is_some_and(Deadline::passed)
    }

    #[inline]
    fn clear_key(&self, py: Python<'_>) -> PyResult<()> {
        if !self.key_parts.bind(py).is_empty() {
            self.clear_original_key.bind(py).call0()?;
        }
        Ok(())
    }
}

/// One read plan's kept reader (`codec/part.py`'s `direct`).
#[pyclass(frozen, module = "_pulsar_external_schema_native")]
pub struct DirectReader {
    read: Py<PyAny>,
    /// The codec whose `read` `read` is, called here without Python's method call.
    json: Option<Py<JsonCodec>>,
    longest: isize,
    check: Option<Py<PyAny>>,
    upkeep: Upkeep,
    fallback: Py<PyAny>,
}

#[pymethods]
impl DirectReader {
    /// `read(payload) -> value`: the format's reader and the plan's steps; `check(payload)`: the
    /// plan's guard, for a payload longer than `longest` (None: no guard); `expires_in`, `key_parts`,
    /// `clear_original_key`: as `DirectWriter`'s; `fallback`: the answer for an expired plan and
    /// for a payload this does not take (`codec.part`'s FALLBACK: the compiled plan, else the
    /// reference path, decides).
    #[new]
    #[pyo3(signature = (read, *, longest, check, expires_in, key_parts, clear_original_key, fallback))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        read: Bound<'_, PyAny>,
        longest: isize,
        check: Option<Py<PyAny>>,
        expires_in: Option<f64>,
        key_parts: Py<PyList>,
        clear_original_key: Py<PyAny>,
        fallback: Py<PyAny>,
    ) -> Self {
        DirectReader {
            json: json_codec(&read, "read"),
            read: read.unbind(),
            longest,
            check,
            upkeep: Upkeep::new(expires_in, key_parts, clear_original_key),
            fallback,
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.read)?;
        visit.call(&self.check)?;
        visit.call(&self.upkeep.clear_original_key)
    }

    /// The payload's value; `fallback` once the plan has expired and where the payload is empty
    /// or the guard or read raised (the long way says why).
    fn __call__<'py>(&self, payload: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = payload.py();
        if self.upkeep.expired() {
            return Ok(self.fallback.bind(py).clone());
        }
        if !payload.is_truthy()? {
            return Ok(self.fallback.bind(py).clone());
        }
        let read = || -> PyResult<Bound<'py, PyAny>> {
            if let Some(check) = &self.check {
                if isize::try_from(payload.len()?).unwrap_or(isize::MAX) > self.longest {
                    check.bind(py).call1((payload,))?;
                }
            }
            match &self.json {
                Some(codec) => codec.get().read(payload),
                None => self.read.bind(py).call1((payload,)),
            }
        };
        let value = match read() {
            Ok(value) => value,
            Err(error) => return declined(py, error).map(|()| self.fallback.bind(py).clone()),
        };
        self.upkeep.clear_key(py)?;
        Ok(value)
    }
}

/// Whether a call is the everyday one: `arity` positional arguments, the first a `str` (the
/// topic), or with `context` one more that is None (`encode_for`'s and `decode`'s context), and
/// no keywords.
#[inline]
fn everyday(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
    arity: usize,
    context: bool,
) -> PyResult<bool> {
    let shape = match args.len() {
        n if n == arity => true,
        n if context && n == arity + 1 => args.get_item(arity)?.is_none(),
        _ => false,
    };
    Ok(shape
        && kwargs.is_none_or(|kwargs| kwargs.is_empty())
        && args.get_item(0)?.is_exact_instance_of::<PyString>())
}

/// An `ExternalSchema`'s `encode` or `encode_for`, as its instance keeps it.
#[pyclass(frozen, module = "_pulsar_external_schema_native")]
pub struct Encoder {
    schema: Py<PyAny>,
    /// The part's kept writers by topic: `(writer, expires)` each.
    writers: Py<PyDict>,
    /// `planned(schema, topic, value, context)`: the class's way past a kept writer.
    planned: Py<PyAny>,
    /// `other(schema, *args, **kwargs)`: the class's method, for what the native path leaves.
    other: Py<PyAny>,
    closed: AtomicBool,
    encode_data: Py<PyType>,
    with_id: bool,
    with_context: bool,
    /// `tuple.__new__`, which makes each `EncodeData` as `ExternalSchema` itself makes it.
    tuple_new: Py<PyAny>,
}

#[pymethods]
impl Encoder {
    /// `schema`: the `ExternalSchema` (which holds this: the collector sees the cycle);
    /// `writers`: its part's kept writers by topic, `(writer, expires)` each; `encode_data`: the
    /// `EncodeData` class; `with_id`: False in prefix mode (the id is in the payload);
    /// `with_context`: a third argument None is the everyday call too (`encode_for`'s context);
    /// `planned(schema, topic, value, context)`: the way past a kept writer that does not take
    /// the message; `other(schema, *args, **kwargs)`: the class's method, for any other call and
    /// a topic with no kept `DirectWriter`.
    #[new]
    #[pyo3(signature = (schema, *, writers, encode_data, with_id, with_context, planned, other))]
    fn new(
        schema: &Bound<'_, PyAny>,
        writers: Py<PyDict>,
        encode_data: Bound<'_, PyType>,
        with_id: bool,
        with_context: bool,
        planned: Py<PyAny>,
        other: Py<PyAny>,
    ) -> PyResult<Self> {
        let py = schema.py();
        if !encode_data.is_subclass(&py.get_type::<PyTuple>())? {
            return Err(PyTypeError::new_err("encode_data must be a tuple class"));
        }
        Ok(Encoder {
            schema: schema.clone().unbind(),
            writers,
            planned,
            other,
            closed: AtomicBool::new(false),
            encode_data: encode_data.unbind(),
            with_id,
            with_context,
            tuple_new: py.get_type::<PyTuple>().getattr(intern!(py, "__new__"))?.unbind(),
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.schema)?;
        visit.call(&self.writers)?;
        visit.call(&self.planned)?;
        visit.call(&self.other)
    }

    /// The schema was closed: every call goes the class's way (which says so).
    fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let everyday = !self.closed.load(Ordering::Relaxed) && everyday(args, kwargs, 2, self.with_context)?;
        if everyday {
            let topic = args.get_item(0)?;
            let value = args.get_item(1)?;
            if let Some(writer) = self.kept_writer(&topic)? {
                if let Some(payload) = writer.get().written(&value)? {
                    let id = match self.with_id {
                        true => writer.get().schema_id.bind(py).clone().into_any(),
                        false => py.None().into_bound(py),
                    };
                    return self.encode_data(py, payload, id);
                }
                let schema = self.schema.bind(py);
                return self.planned.bind(py).call1((schema, topic, value, py.None()));
            }
        }
        self.class_call(args, kwargs)
    }
}

impl Encoder {
    /// The kept writer of `topic`, where it is a `DirectWriter` (a Python one, or none, goes the
    /// class's way): the first item of its `(writer, expires)` pair.
    #[inline]
    fn kept_writer<'py>(&self, topic: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, DirectWriter>>> {
        let Some(entry) = self.writers.bind(topic.py()).get_item(topic)? else {
            return Ok(None);
        };
        let Ok(entry) = entry.cast_into_exact::<PyTuple>() else {
            return Ok(None);
        };
        Ok(entry.get_item(0)?.cast_into::<DirectWriter>().ok())
    }

    /// `other(schema, *args, **kwargs)`: the class's method, for what the native path leaves.
    fn class_call<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let mut call = vec![self.schema.bind(py).clone()];
        call.extend(args.iter());
        self.other.bind(py).call(PyTuple::new(py, call)?, kwargs)
    }

    /// `EncodeData(payload, id)`, made as `tuple.__new__(EncodeData, (payload, id))` makes it
    /// (the NamedTuple's own constructor takes its arguments by name: slower).
    #[inline]
    fn encode_data<'py>(
        &self,
        py: Python<'py>,
        payload: Bound<'py, PyAny>,
        id: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.tuple_new.bind(py).call1((self.encode_data.bind(py), (payload, id)))
    }
}

/// When a plan expires (a plan's time to live is seconds or more).
struct Deadline(Instant);

impl Deadline {
    /// `seconds` from now (none or less: passed).
    fn after(seconds: f64) -> Self {
        let now = Instant::now();
        Deadline(now.checked_add(Duration::from_secs_f64(seconds.clamp(0.0, 1e9))).unwrap_or(now))
    }

    fn passed(&self) -> bool {
        self.0 <= Instant::now()
    }
}
