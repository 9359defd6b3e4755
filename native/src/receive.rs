//! Receiving one range of a partition: an exclusive non-durable subscription from the range's
//! first entry, messages before the start skipped, the read ended at the end bound or at the
//! last entry written when it began.
//!
//! A non-durable subscription that acknowledges nothing costs the broker no cursor and
//! disappears with the connection. The broker starts it at the entry of its start message id (it
//! steps back one entry for ids it takes as batch positions, which all are on the wire), so the
//! first entry's messages before the start bound are skipped here. Messages are read in place
//! from their entry (`wire.rs`): a batched entry is one buffer, its messages slices of it.
//!
//! A lost connection (a topic unloaded or moved, a broker restarting) is looked up again and
//! subscribed again after the last message given, as pulsar-client's reader reconnects; what the
//! broker sends again up to that message is skipped, so no message is given twice.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message as _;

use crate::bounds::{Bound, Range, Verdict};
use crate::proto::{self, base_command::Type, CompressionType, KeyValue, SingleMessageMetadata};
use crate::wire::{connect_for, opened, reconnect, Connection, Options, MAX_FRAME};

/// Messages the broker may send ahead of the reader (flow permits); more are asked for when
/// half of them arrived. Permits count messages, and a batched entry holds up to ~1,000.
const PERMITS: u32 = 20_000;

static CONSUMERS: AtomicU64 = AtomicU64::new(0);

/// A message of the range, read in place (valid until the next call).
pub struct MessageView<'a> {
    pub ledger: i64,
    pub entry: i64,
    /// -1 for a message not in a batch (as pulsar-client's `MessageId.batch_index()`).
    pub batch: i32,
    pub key: Option<&'a str>,
    pub publish_ms: u64,
    pub event_ms: Option<u64>,
    pub properties: &'a [KeyValue],
    pub ordering_key: Option<&'a [u8]>,
    /// PIP-420's schema id (`MessageMetadata.schema_id`, field 32): the entry's, for each of its
    /// messages, as Pulsar's Java client gives it (`Message.getSchemaId()`).
    pub schema_id: Option<&'a [u8]>,
    pub data: &'a [u8],
}

pub enum Next<'a> {
    Message(MessageView<'a>),
    /// The range is read.
    End,
    /// A message this reader cannot give as pulsar-client would (chunked, encrypted, compressed
    /// in a way it does not know): the reason; the Python path reads on from there.
    Handover(String),
}

/// The entry whose messages are being given.
struct Current {
    ledger: i64,
    entry: i64,
    metadata: proto::MessageMetadata,
    /// The messages of a batch (None: one message, the whole payload).
    count: Option<i32>,
    index: i32,
    /// Where the next message of a batch starts in the payload.
    offset: usize,
    /// The payload is in `plain` (decompressed), else in the frame.
    decompressed: bool,
    payload: (usize, usize),
    /// Every message of the entry was given or skipped.
    exhausted: bool,
}

pub struct RangeConsumer {
    connection: Connection,
    consumer_id: u64,
    options: Options,
    read_timeout: Duration,
    range: Range,
    /// (ledger, entry, batch index) of the last message given: after a reconnect, what comes
    /// again up to it is skipped.
    given: Option<(i64, i64, i32)>,
    done: bool,
    topic: String,
    received: u32,
    current: Option<Current>,
    plain: Vec<u8>,
    single: SingleMessageMetadata,
}

impl RangeConsumer {
    pub fn open(
        options: &Options,
        topic: &str,
        start: Option<Bound>,
        end: Bound,
        read_timeout: Duration,
    ) -> Result<Self, String> {
        let unplaced = Range { start, end, last_written: (i64::MAX, i64::MAX) };
        let first = unplaced.first_entry();
        let (connection, consumer_id, last_written) = opened(options, || subscribe(options, topic, first))?;
        let range = Range { start, end, last_written };
        let mut consumer = Self {
            connection,
            consumer_id,
            options: options.clone(),
            read_timeout,
            range,
            given: None,
            done: range.nothing_written(),
            topic: topic.to_string(),
            received: 0,
            current: None,
            plain: Vec::new(),
            single: SingleMessageMetadata::default(),
        };
        consumer.start()?;
        Ok(consumer)
    }

    /// Asks for the first messages, and sets the read timeout.
    fn start(&mut self) -> Result<(), String> {
        self.received = 0;
        if !self.done {
            let consumer_id = self.consumer_id;
            self.connection.send(Type::Flow, |c| {
                c.flow = Some(proto::CommandFlow { consumer_id, message_permits: PERMITS })
            })?;
        }
        self.connection.set_timeout(self.read_timeout)
    }

    /// After `lost`: a new connection and subscription from the entry of the last message given
    /// (the range's first entry where none was), the read's end kept.
    fn resubscribe(&mut self, lost: String) -> Result<(), String> {
        self.connection.close();
        let from = match self.given {
            Some((ledger, entry, _)) => Some((ledger, entry)),
            None => self.range.first_entry(),
        };
        let (options, topic) = (&self.options, &self.topic);
        let (connection, consumer_id, _) = reconnect(options, &lost, || subscribe(options, topic, from))?;
        self.connection = connection;
        self.consumer_id = consumer_id;
        self.start()
    }

    /// The next message of the range.
    pub fn next(&mut self) -> Result<Next<'_>, String> {
        loop {
            if self.current.as_ref().is_some_and(|c| c.exhausted) {
                self.current = None;
            }
            if self.current.is_none() {
                if self.done {
                    return Ok(Next::End);
                }
                if let Some(reason) = self.receive_entry()? {
                    self.done = true;
                    return Ok(Next::Handover(reason));
                }
                continue;
            }
            let current = self.current.as_mut().unwrap();
            let (ledger, entry) = (current.ledger, current.entry);
            let batch = if current.count.is_some() { current.index } else { -1 };
            let last_in_entry = current.count.is_none_or(|n| current.index >= n - 1);
            // Where this message's data is, and its single metadata for a batch.
            let payload = if current.decompressed {
                &self.plain[..]
            } else {
                &self.connection.frame()[current.payload.0..current.payload.1]
            };
            let data_range = match current.count {
                None => (0, payload.len()),
                Some(_) => {
                    let at = current.offset;
                    let size = payload
                        .get(at..at + 4)
                        .map(|b| u32::from_be_bytes(b.try_into().unwrap()) as usize)
                        .ok_or_else(|| "a batch cut short".to_string())?;
                    let meta = payload
                        .get(at + 4..at + 4 + size)
                        .ok_or_else(|| "a batch cut short".to_string())?;
                    self.single.clear();
                    self.single.merge(meta).map_err(|e| format!("a batched message's metadata: {e}"))?;
                    let start = at + 4 + size;
                    let end = start + self.single.payload_size.max(0) as usize;
                    if end > payload.len() {
                        return Err("a batch cut short".to_string());
                    }
                    current.offset = end;
                    (start, end)
                }
            };
            current.index += 1;
            current.exhausted = last_in_entry;
            if last_in_entry && self.range.done_after_entry(ledger, entry) {
                self.done = true;
            }
            if self.given.is_some_and(|given| (ledger, entry, batch) <= given) {
                continue; // sent again after a reconnect
            }
            match self.range.place(ledger, entry, batch) {
                Verdict::Before => continue,
                Verdict::After => {
                    self.done = true;
                    self.current = None;
                    return Ok(Next::End);
                }
                Verdict::Inside => {}
            }
            self.given = Some((ledger, entry, batch));
            // The view borrows the entry: it is dropped from `current` on the next call.
            let current = self.current.as_ref().unwrap();
            let metadata = &current.metadata;
            let payload = if current.decompressed {
                &self.plain[..]
            } else {
                &self.connection.frame()[current.payload.0..current.payload.1]
            };
            let data = &payload[data_range.0..data_range.1];
            let view = if current.count.is_some() {
                let single = &self.single;
                MessageView {
                    ledger,
                    entry,
                    batch,
                    key: single.partition_key.as_deref(),
                    publish_ms: metadata.publish_time,
                    event_ms: single.event_time,
                    properties: &single.properties,
                    ordering_key: single.ordering_key.as_deref(),
                    schema_id: metadata.schema_id.as_deref(),
                    data: if single.null_value.unwrap_or(false) { &[] } else { data },
                }
            } else {
                MessageView {
                    ledger,
                    entry,
                    batch,
                    key: metadata.partition_key.as_deref(),
                    publish_ms: metadata.publish_time,
                    event_ms: metadata.event_time,
                    properties: &metadata.properties,
                    ordering_key: metadata.ordering_key.as_deref(),
                    schema_id: metadata.schema_id.as_deref(),
                    data: if metadata.null_value.unwrap_or(false) { &[] } else { data },
                }
            };
            return Ok(Next::Message(view));
        }
    }

    /// Receives the next entry into `current`; Some(reason) where the Python path must go on.
    fn receive_entry(&mut self) -> Result<Option<String>, String> {
        let what = "receiving";
        let mut silent = false;
        let entry = loop {
            match self.connection.next_entry(self.consumer_id, what) {
                Ok(entry) => break entry,
                Err(lost) if self.connection.lost() => self.resubscribe(lost)?,
                // Messages are due and none came: the consumer may be gone on the broker's side
                // without a word (a topic unloaded in the middle of a subscribe); subscribed
                // again once, as after a lost connection, before the read fails.
                Err(e) if e.ends_with("timed out") && !silent => {
                    silent = true;
                    self.resubscribe(format!("{what}: no message within the read timeout"))?
                }
                Err(e) if e.ends_with("timed out") => {
                    return Err("the broker announced more messages but none arrived within the read timeout".into())
                }
                Err(e) => return Err(e),
            }
        };
        let metadata = entry.metadata;
        let count = metadata.num_messages_in_batch;
        self.received += count.unwrap_or(1).max(1) as u32;
        if self.received >= PERMITS / 2 {
            let permits = std::mem::take(&mut self.received);
            let consumer_id = self.consumer_id;
            // A lost connection is found, and mended, at the next entry's read.
            let _ = self.connection.send(Type::Flow, |c| {
                c.flow = Some(proto::CommandFlow { consumer_id, message_permits: permits })
            });
        }
        let id = &entry.message.message_id;
        let (ledger, entry_id) = (id.ledger_id as i64, id.entry_id as i64);
        if metadata.num_chunks_from_msg.is_some_and(|n| n > 1) || metadata.chunk_id.is_some() {
            return Ok(Some("a chunked message (the native reader does not reassemble chunks)".into()));
        }
        if !metadata.encryption_keys.is_empty() {
            return Ok(Some("a message encrypted by Pulsar (the native reader has no crypto key reader)".into()));
        }
        let decompressed = match decompress(&metadata, &self.connection.frame()[entry.payload.0..entry.payload.1], &mut self.plain) {
            Ok(done) => done,
            Err(reason) => return Ok(Some(reason)),
        };
        self.current = Some(Current {
            ledger,
            entry: entry_id,
            metadata,
            count,
            index: 0,
            offset: 0,
            decompressed,
            payload: entry.payload,
            exhausted: false,
        });
        Ok(None)
    }

    pub fn close(&mut self) {
        if !self.done || self.current.is_some() {
            let consumer_id = self.consumer_id;
            let id = self.connection.next_request_id();
            let _ = self.connection.send(Type::CloseConsumer, |c| {
                c.close_consumer = Some(proto::CommandCloseConsumer { consumer_id, request_id: id })
            });
        }
        self.done = true;
        self.current = None;
        self.connection.close();
    }
}

impl Drop for RangeConsumer {
    fn drop(&mut self) {
        self.connection.close();
    }
}

/// The payload decompressed into `plain` (true), or left where it is (false, not compressed);
/// Err: a codec this reader does not take, or a payload that does not decompress.
fn decompress(metadata: &proto::MessageMetadata, payload: &[u8], plain: &mut Vec<u8>) -> Result<bool, String> {
    let codec = metadata.compression.and_then(|c| CompressionType::try_from(c).ok()).unwrap_or(CompressionType::None);
    if codec == CompressionType::None {
        return Ok(false);
    }
    let size = metadata.uncompressed_size.unwrap_or(0) as usize;
    if size > MAX_FRAME {
        return Err(format!("a {codec:?} payload of {size} bytes uncompressed (limit {MAX_FRAME})"));
    }
    plain.clear();
    let failed = |e: &dyn std::fmt::Display| format!("a {codec:?} payload that does not decompress: {e}");
    match codec {
        CompressionType::Lz4 => {
            plain.resize(size, 0);
            let n = lz4_flex::block::decompress_into(payload, plain).map_err(|e| failed(&e))?;
            plain.truncate(n);
        }
        CompressionType::Zlib => {
            plain.reserve(size);
            flate2::read::ZlibDecoder::new(payload).take(size as u64).read_to_end(plain).map_err(|e| failed(&e))?;
        }
        CompressionType::Zstd => {
            plain.reserve(size);
            zstd::stream::read::Decoder::new(payload)
                .map_err(|e| failed(&e))?
                .take(size as u64)
                .read_to_end(plain)
                .map_err(|e| failed(&e))?;
        }
        CompressionType::Snappy => {
            let n = snap::raw::decompress_len(payload).map_err(|e| failed(&e))?;
            if n > MAX_FRAME {
                return Err(failed(&"too large"));
            }
            plain.resize(n, 0);
            let n = snap::raw::Decoder::new().decompress(payload, plain).map_err(|e| failed(&e))?;
            plain.truncate(n);
        }
        CompressionType::None => unreachable!(),
    }
    if plain.len() != size {
        return Err(format!("a {codec:?} payload of {} bytes, not the {size} its metadata says", plain.len()));
    }
    Ok(true)
}

/// A connection to the broker of `topic` with an exclusive non-durable subscription from `from`
/// (ledger, entry; None: the earliest message): (connection, consumer id, (ledger, entry) of the
/// last message written, (-1, -1) where none was).
fn subscribe(options: &Options, topic: &str, from: Option<(i64, i64)>) -> Result<(Connection, u64, (i64, i64)), String> {
    let mut connection = connect_for(topic, options)?;
    let consumer_id = CONSUMERS.fetch_add(1, Ordering::Relaxed) + 1;
    // pulsar-client's MessageId.earliest is (-1, -1): u64::MAX on the wire.
    let (ledger, entry) = from.unwrap_or((-1, -1));
    let name = subscription_name();
    connection.request("subscribing", Type::Subscribe, |c, id| {
        c.subscribe = Some(proto::CommandSubscribe {
            topic: topic.to_string(),
            subscription: name.clone(),
            sub_type: proto::command_subscribe::SubType::Exclusive as i32,
            consumer_id,
            request_id: id,
            consumer_name: Some(name.clone()),
            durable: Some(false),
            start_message_id: Some(proto::MessageIdData {
                ledger_id: ledger as u64,
                entry_id: entry as u64,
                partition: Some(-1),
                batch_index: Some(-1),
                ..Default::default()
            }),
            initial_position: Some(proto::command_subscribe::InitialPosition::Earliest as i32),
            force_topic_creation: Some(false),
            ..Default::default()
        })
    })?;
    let last = connection.request("asking for the last message id", Type::GetLastMessageId, |c, id| {
        c.get_last_message_id = Some(proto::CommandGetLastMessageId { consumer_id, request_id: id })
    })?;
    let last_id = last.get_last_message_id_response.map(|r| r.last_message_id);
    let last_written = last_id.map(|id| (id.ledger_id as i64, id.entry_id as i64)).unwrap_or((-1, -1));
    Ok((connection, consumer_id, last_written))
}

fn subscription_name() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("pulsar-external-schema-native-{}-{nanos:x}", std::process::id())
}
