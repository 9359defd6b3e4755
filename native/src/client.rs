//! `Client`: where and how to reach Pulsar, kept by the Python worker; each `read` (a
//! `RangeReader`) and each `producer` (a `Producer`) opens its own connection (`wire.rs`).

use std::sync::Arc;
use std::time::Duration;

use arrow::datatypes::{Schema, SchemaRef};
use arrow::pyarrow::PyArrowType;
use pyo3::prelude::*;

use crate::bounds::Position;
use crate::errors::error;
use crate::producer::Producer;
use crate::range_reader::RangeReader;
use crate::receive::RangeConsumer;
use crate::wire::{self, Options};
use crate::{send, tls};

/// A token given as a string, or a callable asked for it at each connection and auth challenge
/// (the Python side fetches an OAuth2 token again before it expires).
fn token_source(given: Bound<'_, PyAny>) -> PyResult<wire::TokenSource> {
    if let Ok(token) = given.extract::<String>() {
        return Ok(Arc::new(move || Ok(token.clone())));
    }
    if !given.is_callable() {
        return Err(error("auth_token takes a token, or a callable that returns one"));
    }
    let ask = given.unbind();
    Ok(Arc::new(move || {
        Python::attach(|py| ask.call0(py).and_then(|token| token.extract::<String>(py)))
            .map_err(|e| format!("the token could not be had: {e}"))
    }))
}

/// Where and how to reach Pulsar (kept by the Python worker; each read opens its connection).
#[pyclass(frozen, module = "_pulsar_external_schema_native")]
pub struct Client {
    options: Arc<Options>,
}

impl Client {
    /// The settings each connection of this client is opened with.
    pub fn options(&self) -> Arc<Options> {
        self.options.clone()
    }
}

#[pymethods]
impl Client {
    #[new]
    /// A `pulsar+ssl://` URL takes the TLS settings of Pulsar's client configuration (read by
    /// `connections.py`); their files are read here, once.
    #[pyo3(signature = (
        service_url, *, auth_token=None, tls_trust_certs_file_path=None, tls_certificate_file_path=None,
        tls_key_file_path=None, tls_hostname_verification=false, tls_allow_insecure_connection=false,
        operation_timeout_ms=30_000, connection_timeout_ms=10_000,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        service_url: String,
        auth_token: Option<Bound<'_, PyAny>>,
        tls_trust_certs_file_path: Option<String>,
        tls_certificate_file_path: Option<String>,
        tls_key_file_path: Option<String>,
        tls_hostname_verification: bool,
        tls_allow_insecure_connection: bool,
        operation_timeout_ms: u64,
        connection_timeout_ms: u64,
    ) -> PyResult<Self> {
        wire::host_port(&service_url).map_err(error)?;
        let auth_token = auth_token.map(token_source).transpose()?;
        let certificate = match (tls_certificate_file_path, tls_key_file_path) {
            (Some(certificate), Some(key)) => Some((certificate, key)),
            (None, None) => None,
            _ => return Err(error("a client certificate needs its key, and a key its certificate")),
        };
        let tls_authentication = certificate.is_some();
        let tls = if wire::is_tls(&service_url) {
            let settings = tls::TlsSettings {
                trust_file: tls_trust_certs_file_path,
                certificate,
                verify_hostname: tls_hostname_verification,
                allow_insecure: tls_allow_insecure_connection,
            };
            Some(tls::client_config(&settings).map_err(error)?)
        } else {
            None
        };
        Ok(Self {
            options: Arc::new(Options {
                service_url,
                auth_token,
                tls,
                tls_authentication,
                connect_timeout: Duration::from_millis(connection_timeout_ms),
                operation_timeout: Duration::from_millis(operation_timeout_ms),
            }),
        })
    }

    /// A producer on `topic` (one partition or a topic without partitions), named
    /// `producer_name` (None: the broker names it), closing batches by count and size only.
    #[pyo3(signature = (topic, producer_name=None, *, batching_max_messages=1000, batching_max_bytes=131_072))]
    fn producer(
        &self,
        py: Python<'_>,
        topic: String,
        producer_name: Option<String>,
        batching_max_messages: usize,
        batching_max_bytes: usize,
    ) -> PyResult<Producer> {
        let options = self.options.clone();
        let batching = send::Batching { max_messages: batching_max_messages, max_bytes: batching_max_bytes };
        let producer = py
            .detach(|| send::Producer::open(&options, &topic, producer_name.as_deref(), batching))
            .map_err(error)?;
        Ok(Producer::new(producer))
    }

    /// Reads `topic` (one partition) after `start` (None: from its earliest message) up to
    /// `end`, in batches of the columns `schema` declares (see `columns.rs`). `writer(id)` says
    /// how to decode bodies of a writer schema id (`decode::WriterSpec`), or None.
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
            .detach(|| RangeConsumer::open(&options, &topic, start.map(Into::into), end.into(), timeout))
            .map_err(error)?;
        Ok(RangeReader::new(consumer, declared, value_type, reader_schema, writer, rows_per_batch))
    }
}
