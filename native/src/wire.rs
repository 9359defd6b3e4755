//! A client's side of Pulsar's binary protocol, over one blocking TCP connection (TLS for
//! `pulsar+ssl://`: `tls.rs`): connect (with a token, or a client certificate), look the topic up, subscribe, ask for the last message id, give flow permits,
//! receive entries, answer pings. The commands are `proto.rs`'s (written from Pulsar's
//! `PulsarApi.proto`); the consumer around them is ours.
//!
//! Why not pulsar-rs's `Consumer`: it splits every batched entry into one message struct each
//! (its metadata cloned per message, a few moves of a large struct, a channel hop between two
//! threads, a timer per receive): more CPU a message than this whole reader's budget
//! (docs/spark.md, "What a row costs"). Here an entry stays one buffer, read once, checked once (CRC32C in
//! hardware), and its messages are read in place.
//!
//! Frames (Pulsar's "wire format"): `[total size][command size][BaseCommand]`, and for MESSAGE
//! `[0x0e01][CRC32C][metadata size][MessageMetadata][payload]` after the command, possibly after
//! a broker entry metadata section `[0x0e02][size][BrokerEntryMetadata]`.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message as _;

use crate::proto::{self, base_command::Type, command_lookup_topic_response::LookupType, BaseCommand};
use crate::tls::Stream;

/// The protocol version this client speaks (Pulsar 2.10's, which has everything used here).
const PROTOCOL_VERSION: i32 = 19;
/// A frame the broker may send: Pulsar's max message size is 5 MiB by default; a larger limit
/// than any broker setting seen, so that a corrupt length cannot make this allocate gigabytes.
pub const MAX_FRAME: usize = 128 << 20;
const CLIENT_VERSION: &str = concat!("pulsar-external-schema-native/", env!("CARGO_PKG_VERSION"));
const MAX_REDIRECTS: usize = 8;
/// A broker's maximum message size when it does not say (Pulsar's default, 5 MiB).
const DEFAULT_MAX_MESSAGE_SIZE: usize = 5 << 20;
/// Pulsar's magic number before a message's CRC32C checksum.
const CHECKSUM_MAGIC: [u8; 2] = [0x0e, 0x01];

/// Where a connection's token comes from: asked at each connection and each auth challenge, so
/// that a token the caller refreshes (OAuth2's, a rotated token file) reaches a long read.
pub type TokenSource = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

#[derive(Clone)]
pub struct Options {
    pub service_url: String,
    pub auth_token: Option<TokenSource>,
    /// TLS for `pulsar+ssl://` URLs (`tls::client_config`); None: plaintext only.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The client certificate authenticates (Pulsar's `AuthenticationTls`) where no token does.
    pub tls_authentication: bool,
    pub connect_timeout: Duration,
    pub operation_timeout: Duration,
}

impl Options {
    /// The CONNECT command's auth method and data: a token's, else mutual TLS's (the broker reads
    /// the certificate of the TLS session), else none.
    fn authentication(&self) -> Result<(Option<String>, Option<Vec<u8>>), String> {
        Ok(match (&self.auth_token, self.tls_authentication) {
            (Some(token), _) => (Some("token".into()), Some(token()?.into_bytes())),
            (None, true) => (Some("tls".into()), Some(Vec::new())),
            (None, false) => (None, None),
        })
    }
}

/// One received MESSAGE frame: its command and where its parts are in the frame buffer.
pub struct Entry {
    pub message: proto::CommandMessage,
    pub metadata: proto::MessageMetadata,
    /// The payload: `frame[payload.0..payload.1]` (compressed as `metadata` says).
    pub payload: (usize, usize),
}

pub struct Connection {
    stream: Stream,
    frame: Vec<u8>,
    request_id: u64,
    token: Option<TokenSource>,
    pub server_version: String,
    /// The largest frame the broker takes (`CommandConnected.max_message_size`).
    pub max_message_size: usize,
    /// The connection broke, or the broker closed what was opened on it (`lost`).
    lost: bool,
    /// The read timeout last set (`set_timeout`): what `next_entry` waits at most, pings or not.
    timeout: Duration,
}

/// `pulsar://host:port` or `pulsar+ssl://host:port` as (host, port); other schemes are refused.
pub fn host_port(url: &str) -> Result<(String, u16), String> {
    let (rest, default_port) = match (url.strip_prefix("pulsar://"), url.strip_prefix("pulsar+ssl://")) {
        (Some(rest), _) => (rest, 6650),
        (_, Some(rest)) => (rest, 6651),
        _ => return Err(format!("{url}: not a Pulsar service URL (pulsar:// or pulsar+ssl://)")),
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    let first = authority.split(',').next().unwrap_or(authority); // a list of hosts: the first
    let (host, port) = match first.rsplit_once(':') {
        Some((host, port)) => (host, port.parse::<u16>().map_err(|_| format!("{url}: bad port {port:?}"))?),
        None => (first, default_port),
    };
    Ok((host.trim_start_matches('[').trim_end_matches(']').to_string(), port))
}

/// Whether `url` speaks TLS (`pulsar+ssl://`).
pub fn is_tls(url: &str) -> bool {
    url.starts_with("pulsar+ssl://")
}

impl Connection {
    /// Connects to `url` (through the service URL as a proxy when `proxy_to` is given).
    pub fn open(url: &str, options: &Options, proxy_to: Option<&str>) -> Result<Self, String> {
        let (host, port) = host_port(url)?;
        let addresses: Vec<_> = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {url}: {e}"))?
            .collect();
        let mut last_error = format!("{url}: no address");
        let mut stream = None;
        for address in addresses {
            match TcpStream::connect_timeout(&address, options.connect_timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last_error = format!("cannot connect to {url}: {e}"),
            }
        }
        let socket = stream.ok_or(last_error)?;
        socket.set_nodelay(true).map_err(|e| e.to_string())?;
        let stream = if is_tls(url) {
            let config = options.tls.as_ref().ok_or_else(|| format!("{url}: a TLS URL, and no TLS settings given"))?;
            socket.set_read_timeout(Some(options.connect_timeout)).map_err(|e| e.to_string())?;
            socket.set_write_timeout(Some(options.connect_timeout)).map_err(|e| e.to_string())?;
            Stream::tls(config, &host, socket)?
        } else {
            Stream::Plain(socket)
        };
        let mut connection = Self {
            stream,
            frame: Vec::with_capacity(1 << 16),
            request_id: 0,
            token: options.auth_token.clone(),
            server_version: String::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            lost: false,
            timeout: options.operation_timeout,
        };
        connection.set_timeout(options.operation_timeout)?;
        let (auth_method_name, auth_data) = options.authentication()?;
        let connect = proto::CommandConnect {
            client_version: CLIENT_VERSION.into(),
            auth_method_name,
            auth_data,
            protocol_version: Some(PROTOCOL_VERSION),
            proxy_to_broker_url: proxy_to.map(str::to_string),
            ..Default::default()
        };
        connection.send(Type::Connect, |c| c.connect = Some(connect))?;
        loop {
            let command = connection.read_command(url)?;
            if let Some(connected) = command.connected {
                connection.server_version = connected.server_version;
                if let Some(size) = connected.max_message_size.filter(|s| *s > 0) {
                    connection.max_message_size = size as usize;
                }
                return Ok(connection);
            }
            if let Some(error) = command.error {
                return Err(format!("{url} refused the connection: {}", describe(&error)));
            }
        }
    }

    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), String> {
        self.timeout = timeout;
        self.stream.socket().set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        self.stream.socket().set_write_timeout(Some(timeout)).map_err(|e| e.to_string())
    }

    pub fn next_request_id(&mut self) -> u64 {
        self.request_id += 1;
        self.request_id
    }

    /// Sends a command of `kind`, its field set by `fill`.
    pub fn send(&mut self, kind: Type, fill: impl FnOnce(&mut BaseCommand)) -> Result<(), String> {
        let mut command = BaseCommand { r#type: kind as i32, ..Default::default() };
        fill(&mut command);
        let size = command.encoded_len();
        let mut out = Vec::with_capacity(8 + size);
        out.extend_from_slice(&((size + 4) as u32).to_be_bytes());
        out.extend_from_slice(&(size as u32).to_be_bytes());
        command.encode(&mut out).map_err(|e| e.to_string())?;
        let written = self.stream.write_all(&out);
        self.written(written)
    }

    /// A write's outcome; a failed write loses the connection.
    fn written(&mut self, outcome: std::io::Result<()>) -> Result<(), String> {
        outcome.map_err(|e| {
            self.lost = true;
            format!("cannot write to the broker: {e}")
        })
    }

    /// Whether the connection broke (a read or write failed other than by a timeout, the broker
    /// closed it) or the broker closed the consumer or producer on it (a topic unloaded or moved,
    /// a broker stopping): a new lookup may find the topic again, as pulsar-client reconnects.
    pub fn lost(&self) -> bool {
        self.lost
    }

    /// Marks the connection lost (the broker closed what was opened on it).
    pub fn mark_lost(&mut self) {
        self.lost = true;
    }

    /// Sends a message frame: `send`, then `metadata` and `payload` behind Pulsar's checksum
    /// (CRC32C of the metadata's size, the metadata and the payload), as the Java and C++
    /// clients write it.
    pub fn send_message(
        &mut self,
        send: proto::CommandSend,
        metadata: &proto::MessageMetadata,
        payload: &[u8],
    ) -> Result<(), String> {
        let command = BaseCommand { r#type: Type::Send as i32, send: Some(send), ..Default::default() };
        let command_size = command.encoded_len();
        let metadata_size = metadata.encoded_len();
        let total = 4 + command_size + 2 + 4 + 4 + metadata_size + payload.len();
        let mut out = Vec::with_capacity(4 + total - payload.len());
        out.extend_from_slice(&(total as u32).to_be_bytes());
        out.extend_from_slice(&(command_size as u32).to_be_bytes());
        command.encode(&mut out).map_err(|e| e.to_string())?;
        out.extend_from_slice(&CHECKSUM_MAGIC);
        let checksum_at = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&(metadata_size as u32).to_be_bytes());
        metadata.encode(&mut out).map_err(|e| e.to_string())?;
        let checksum = crc32c::crc32c_append(crc32c::crc32c(&out[checksum_at + 4..]), payload);
        out[checksum_at..checksum_at + 4].copy_from_slice(&checksum.to_be_bytes());
        let written = self.stream.write_all(&out).and_then(|()| self.stream.write_all(payload));
        self.written(written)
    }

    /// Reads the next frame into the frame buffer; returns its command and where its payload
    /// section starts (None: a command only).
    fn read_frame(&mut self, what: &str) -> Result<(BaseCommand, Option<usize>), String> {
        let mut size = [0u8; 4];
        self.read_exact(&mut size, what)?;
        let total = u32::from_be_bytes(size) as usize;
        if !(4..=MAX_FRAME).contains(&total) {
            return Err(format!("{what}: a frame of {total} bytes (limit {MAX_FRAME}): not a Pulsar broker?"));
        }
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        frame.resize(total, 0);
        let read = self.read_exact(&mut frame, what);
        self.frame = frame;
        read?;
        let command_size = u32::from_be_bytes(self.frame[..4].try_into().unwrap()) as usize;
        if command_size + 4 > total {
            return Err(format!("{what}: a command of {command_size} bytes in a frame of {total}"));
        }
        let command = BaseCommand::decode(&self.frame[4..4 + command_size])
            .map_err(|e| format!("{what}: a command that does not decode: {e}"))?;
        let rest = 4 + command_size;
        Ok((command, (rest < total).then_some(rest)))
    }

    fn read_exact(&mut self, buf: &mut [u8], what: &str) -> Result<(), String> {
        self.stream.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!("{what}: timed out"),
            kind => {
                self.lost = true;
                if kind == std::io::ErrorKind::UnexpectedEof {
                    format!("{what}: the broker closed the connection")
                } else {
                    let text = e.to_string();
                    format!("{what}: {text}{}", crate::tls::hint(&text))
                }
            }
        })
    }

    /// The next command that is not a ping (answered) or an auth challenge (answered with the
    /// token again).
    pub fn read_command(&mut self, what: &str) -> Result<BaseCommand, String> {
        loop {
            let (command, _) = self.read_frame(what)?;
            if !self.answered(&command)? {
                return Ok(command);
            }
        }
    }

    /// Answers pings and auth challenges; true if `command` was one.
    fn answered(&mut self, command: &BaseCommand) -> Result<bool, String> {
        if command.ping.is_some() || command.r#type == Type::Ping as i32 {
            self.send(Type::Pong, |c| c.pong = Some(proto::CommandPong {}))?;
            return Ok(true);
        }
        if command.auth_challenge.is_some() {
            let token = match &self.token {
                Some(token) => token()?,
                None => String::new(),
            };
            self.send(Type::AuthResponse, |c| {
                c.auth_response = Some(proto::CommandAuthResponse {
                    client_version: Some(CLIENT_VERSION.into()),
                    response: Some(proto::AuthData {
                        auth_method_name: Some("token".into()),
                        auth_data: Some(token.into_bytes()),
                    }),
                    protocol_version: Some(PROTOCOL_VERSION),
                })
            })?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Sends a request and waits for the answer with its request id (skipping anything else);
    /// a CommandError for it is an error naming `what`.
    pub fn request(
        &mut self,
        what: &str,
        kind: Type,
        fill: impl FnOnce(&mut BaseCommand, u64),
    ) -> Result<BaseCommand, String> {
        let id = self.next_request_id();
        self.send(kind, |c| fill(c, id))?;
        loop {
            let command = self.read_command(what)?;
            if let Some(error) = &command.error {
                if error.request_id == id {
                    return Err(format!("{what}: {}", describe(error)));
                }
            }
            if request_id_of(&command) == Some(id) {
                return Ok(command);
            }
        }
    }

    /// The next MESSAGE frame for `consumer_id` (pings answered, anything else an error unless
    /// it is harmless), its payload checked against its CRC32C; "timed out" once the read
    /// timeout has passed without one, however many pings came meanwhile (a broker keeps a
    /// connection alive with pings after it has dropped the consumer): within twice the timeout,
    /// as the last read may start just before it passes (the socket's timeout is not set per
    /// frame: a system call per entry).
    pub fn next_entry(&mut self, consumer_id: u64, what: &str) -> Result<Entry, String> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if Instant::now() >= deadline {
                return Err(format!("{what}: timed out"));
            }
            let (command, payload_start) = self.read_frame(what)?;
            if self.answered(&command)? {
                continue;
            }
            if let Some(message) = command.message {
                if message.consumer_id != consumer_id {
                    continue;
                }
                let start = payload_start.ok_or_else(|| format!("{what}: a message without a payload"))?;
                let (metadata, payload) = self.payload(start, what)?;
                return Ok(Entry { message, metadata, payload });
            }
            if command.reached_end_of_topic.is_some() {
                return Err(format!("{what}: the topic was terminated"));
            }
            if command.close_consumer.is_some() {
                self.lost = true;
                return Err(format!("{what}: the broker closed the consumer (topic unloaded or moved)"));
            }
            // active consumer changes, and answers to requests not waited for: nothing to do
        }
    }

    fn payload(&self, start: usize, what: &str) -> Result<(proto::MessageMetadata, (usize, usize)), String> {
        let frame = &self.frame;
        let mut at = start;
        let short = || format!("{what}: a message frame cut short");
        if frame.get(at..at + 2) == Some(&[0x0e, 0x02]) {
            // broker entry metadata (brokerEntryMetadataInterceptors): not used here
            let size = u32::from_be_bytes(frame.get(at + 2..at + 6).ok_or_else(short)?.try_into().unwrap());
            at += 6 + size as usize;
        }
        if frame.get(at..at + 2) != Some(&CHECKSUM_MAGIC) {
            return Err(format!("{what}: a message frame without Pulsar's checksum magic"));
        }
        let checksum = u32::from_be_bytes(frame.get(at + 2..at + 6).ok_or_else(short)?.try_into().unwrap());
        let body = frame.get(at + 6..).ok_or_else(short)?;
        if crc32c::crc32c(body) != checksum {
            return Err(format!("{what}: a message whose checksum does not match (corrupt in transit?)"));
        }
        let metadata_size = u32::from_be_bytes(body.get(..4).ok_or_else(short)?.try_into().unwrap()) as usize;
        let metadata_bytes = body.get(4..4 + metadata_size).ok_or_else(short)?;
        let metadata = proto::MessageMetadata::decode(metadata_bytes)
            .map_err(|e| format!("{what}: message metadata that does not decode: {e}"))?;
        let payload_start = at + 6 + 4 + metadata_size;
        Ok((metadata, (payload_start, frame.len())))
    }

    /// The frame buffer (the payload of the last entry is in it).
    pub fn frame(&self) -> &[u8] {
        &self.frame
    }

    pub fn close(&mut self) {
        self.stream.shutdown();
    }
}

/// A connection to the broker that serves `topic`: Pulsar's lookup from the service URL,
/// following redirects, through the service URL where the answer says it is a proxy.
pub fn connect_for(topic: &str, options: &Options) -> Result<Connection, String> {
    let mut connection = Connection::open(&options.service_url, options, None)?;
    let mut authoritative = false;
    for _ in 0..MAX_REDIRECTS {
        let answer = connection.request("looking the topic up", Type::Lookup, |c, id| {
            c.lookup_topic = Some(proto::CommandLookupTopic {
                topic: topic.to_string(),
                request_id: id,
                authoritative: Some(authoritative),
                ..Default::default()
            })
        })?;
        let response = answer
            .lookup_topic_response
            .ok_or_else(|| "looking the topic up: an answer that is not a lookup response".to_string())?;
        let proxy = response.proxy_through_service_url.unwrap_or(false);
        let kind = response.response.and_then(|r| LookupType::try_from(r).ok());
        match kind {
            Some(LookupType::Connect) | Some(LookupType::Redirect) => {
                // a TLS client goes on over TLS: the broker's TLS URL
                let url = if is_tls(&options.service_url) {
                    response.broker_service_url_tls.clone().filter(|url| !url.is_empty()).ok_or_else(|| {
                        "looking the topic up: its broker advertises no TLS URL (brokerServicePortTls)".to_string()
                    })?
                } else {
                    response.broker_service_url.clone().unwrap_or_default()
                };
                let next = if proxy {
                    Connection::open(&options.service_url, options, Some(&url))?
                } else if same_broker(&url, &options.service_url) && kind == Some(LookupType::Connect) {
                    return Ok(connection);
                } else {
                    Connection::open(&url, options, None)?
                };
                connection.close();
                connection = next;
                if kind == Some(LookupType::Connect) {
                    return Ok(connection);
                }
                authoritative = response.authoritative.unwrap_or(false);
            }
            _ => {
                let error = response.error.and_then(|e| proto::ServerError::try_from(e).ok());
                return Err(format!(
                    "looking the topic up failed: {:?}: {}",
                    error,
                    response.message.unwrap_or_default()
                ));
            }
        }
    }
    Err(format!("looking the topic up: more than {MAX_REDIRECTS} redirects"))
}

/// The first wait before a new lookup after a lost connection (pulsar-client's initial backoff),
/// doubled at each failed try up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Errors that a new try cannot mend: the topic is gone or closed for good, the credentials are
/// refused, or TLS failed (a certificate not trusted, or none shown where the broker wants one).
const FINAL_ERRORS: [&str; 10] = [
    "TopicNotFound",
    "TopicTerminatedError",
    "InvalidTopicName",
    "AuthenticationError",
    "AuthorizationError",
    "NotAllowedError",
    "invalid peer certificate",
    "CertificateRequired",
    "BadCertificate",
    "UnknownCA",
];

/// Why `retried` gave up: the last try's failure, and whether it was final (no retry mends it)
/// or the operation timeout passed.
pub struct GaveUp {
    pub failure: String,
    pub final_error: bool,
}

/// `attempt` (a lookup, and a consumer or producer opened on its answer) tried as pulsar-client
/// tries: at once, then after a backoff of 100 ms doubling up to 2 s, until the operation timeout
/// has passed (a topic being unloaded answers ServiceNotReady for a moment, a restarting broker
/// refuses connections); an error no retry mends ends it at once.
pub fn retried<T>(options: &Options, mut attempt: impl FnMut() -> Result<T, String>) -> Result<T, GaveUp> {
    let deadline = Instant::now() + options.operation_timeout;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let failure = match attempt() {
            Ok(done) => return Ok(done),
            Err(failure) => failure,
        };
        let final_error = FINAL_ERRORS.iter().any(|name| failure.contains(name));
        if final_error || Instant::now() + backoff > deadline {
            return Err(GaveUp { failure, final_error });
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// `attempt` tried until it opens (`retried`), its error the last try's failure.
pub fn opened<T>(options: &Options, attempt: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    retried(options, attempt).map_err(|gave_up| gave_up.failure)
}

/// After `lost` (why a connection was lost), `attempt` (a new lookup, and the consumer or producer
/// opened again) tried as pulsar-client reconnects (`retried`). The error names what was lost and
/// the last try's failure.
pub fn reconnect<T>(options: &Options, lost: &str, attempt: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    retried(options, attempt).map_err(|GaveUp { failure, final_error }| {
        if final_error {
            format!("{lost}; it could not be opened again: {failure}")
        } else {
            let waited = options.operation_timeout.as_millis();
            format!("{lost}; its broker was not reached again within the operation timeout ({waited} ms): {failure}")
        }
    })
}

fn same_broker(a: &str, b: &str) -> bool {
    matches!((host_port(a), host_port(b)), (Ok(x), Ok(y)) if x == y)
}

fn describe(error: &proto::CommandError) -> String {
    let kind = proto::ServerError::try_from(error.error).map(|e| format!("{e:?}")).unwrap_or_else(|_| error.error.to_string());
    format!("{kind}: {}", error.message)
}

fn request_id_of(command: &BaseCommand) -> Option<u64> {
    if let Some(c) = &command.success {
        return Some(c.request_id);
    }
    if let Some(c) = &command.producer_success {
        return Some(c.request_id);
    }
    if let Some(c) = &command.lookup_topic_response {
        return Some(c.request_id);
    }
    if let Some(c) = &command.get_last_message_id_response {
        return Some(c.request_id);
    }
    None
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{host_port, reconnect, Options};

    fn options(operation_timeout_ms: u64) -> Options {
        Options {
            service_url: "pulsar://127.0.0.1:6650".into(),
            auth_token: None,
            tls: None,
            tls_authentication: false,
            connect_timeout: Duration::from_millis(100),
            operation_timeout: Duration::from_millis(operation_timeout_ms),
        }
    }

    #[test]
    fn a_lost_connection_is_tried_again_until_it_is_back() {
        let mut tries = 0;
        let back = reconnect(&options(5_000), "lost", || {
            tries += 1;
            if tries < 3 { Err("cannot connect: Connection refused".to_string()) } else { Ok(tries) }
        });
        assert_eq!(back, Ok(3));
    }

    #[test]
    fn tries_end_with_the_operation_timeout_and_say_why() {
        let started = Instant::now();
        let failed = reconnect::<()>(&options(400), "the broker closed the connection", || {
            Err("cannot connect: Connection refused".to_string())
        })
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(1_000));
        assert!(failed.starts_with("the broker closed the connection; its broker was not reached again"));
        assert!(failed.contains("(400 ms)") && failed.ends_with("Connection refused"));
    }

    #[test]
    fn a_topic_gone_is_not_tried_again() {
        let mut tries = 0;
        let failed = reconnect::<()>(&options(5_000), "lost", || {
            tries += 1;
            Err("subscribing: TopicNotFound: Topic does not exist".to_string())
        })
        .unwrap_err();
        assert_eq!(tries, 1);
        assert_eq!(failed, "lost; it could not be opened again: subscribing: TopicNotFound: Topic does not exist");
    }

    /// A broker that answers CONNECT and then sends only pings, every 50 ms, for 3 s.
    fn pinging_broker() -> String {
        use prost::Message as _;
        use std::io::{Read, Write};

        use crate::proto::{self, base_command::Type, BaseCommand};

        fn frame(kind: Type, fill: impl FnOnce(&mut BaseCommand)) -> Vec<u8> {
            let mut command = BaseCommand { r#type: kind as i32, ..Default::default() };
            fill(&mut command);
            let body = command.encode_to_vec();
            let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
            out.extend_from_slice(&(body.len() as u32).to_be_bytes());
            out.extend_from_slice(&body);
            out
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("pulsar://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut size = [0u8; 4];
            socket.read_exact(&mut size).unwrap();
            socket.read_exact(&mut vec![0u8; u32::from_be_bytes(size) as usize]).unwrap(); // CONNECT
            let connected = proto::CommandConnected { server_version: "fake".into(), ..Default::default() };
            socket.write_all(&frame(Type::Connected, |c| c.connected = Some(connected))).unwrap();
            for _ in 0..60 {
                std::thread::sleep(Duration::from_millis(50));
                if socket.write_all(&frame(Type::Ping, |c| c.ping = Some(proto::CommandPing {}))).is_err() {
                    return;
                }
            }
        });
        url
    }

    #[test]
    fn pings_do_not_keep_a_read_waiting_past_its_timeout() {
        let url = pinging_broker();
        let mut connection = super::Connection::open(&url, &options(5_000), None).unwrap();
        connection.set_timeout(Duration::from_millis(300)).unwrap();
        let started = Instant::now();
        let waited = connection.next_entry(1, "receiving").err().unwrap();
        assert_eq!(waited, "receiving: timed out");
        assert!(started.elapsed() < Duration::from_millis(1_000), "{:?}", started.elapsed());
    }

    #[test]
    fn service_urls() {
        assert_eq!(host_port("pulsar://127.0.0.1:6650").unwrap(), ("127.0.0.1".into(), 6650));
        assert_eq!(host_port("pulsar://broker").unwrap(), ("broker".into(), 6650));
        assert_eq!(host_port("pulsar://a:1,b:2/").unwrap(), ("a".into(), 1));
        assert_eq!(host_port("pulsar://[::1]:6651").unwrap(), ("::1".into(), 6651));
        assert_eq!(host_port("pulsar+ssl://a").unwrap(), ("a".into(), 6651));
        assert!(host_port("http://a:8080").is_err());
    }
}
