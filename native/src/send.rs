//! A producer's side of Pulsar's binary protocol, for the Spark sink's forwarded messages: one
//! blocking connection, one producer, messages grouped into batched entries exactly as
//! pulsar-client's C++ producer groups them when batches are closed by count and size only
//! (`ProducerImpl::sendAsync`, `BatchMessageContainer`), and each batch's frame written as its
//! `Commands::newSend` writes it.
//!
//! Why the grouping must be pulsar-client's: with deduplication, the broker drops a batched entry
//! whose first sequence id is at most the last it persisted for the producer name. A task run
//! again (on this path or, on an executor without the extension, on the Python path) must
//! therefore cut its messages into the same batches as the first run, or a batch of the re-run
//! that starts inside one the first run persisted would be written again.
//!
//! Sends are pipelined: up to `MAX_PENDING` batches wait for their receipts, which the broker
//! gives in order. A lost connection (a topic unloaded or moved, a broker restarting) is looked
//! up again, the producer created again under its name, and every batch without a receipt sent
//! again with its sequence ids, as pulsar-client's producer does: with deduplication the broker
//! drops what it had persisted. A broker's refusal, or a receipt for another batch than the
//! oldest, fails the producer (the task fails, and Spark runs it again).

use std::collections::VecDeque;
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message as _;

use crate::proto::{self, base_command::Type};
use crate::wire::{connect_for, opened, reconnect, Connection, Options};

/// Batches sent and not yet acknowledged, at most.
const MAX_PENDING: usize = 64;

/// When a batch is closed: pulsar-client's `batching_max_messages` and
/// `batching_max_allowed_size_in_bytes` (the sink's `DETERMINISTIC_BATCHES`).
#[derive(Clone, Copy)]
pub struct Batching {
    pub max_messages: usize,
    pub max_bytes: usize,
}

impl Batching {
    /// Where a message of `len` payload bytes cuts the open batch of `messages` messages and
    /// `bytes` payload bytes, as pulsar-client's producer cuts it (`ProducerImpl::sendAsync`):
    /// the open batch is sent before the message joins it if the message does not fit
    /// (`hasEnoughSpace`), and the batch with the message is sent at once if it is then full
    /// (`isFull`).
    pub fn cut(&self, messages: usize, bytes: usize, len: usize) -> Cut {
        let before = messages > 0 && !(messages < self.max_messages && bytes + len <= self.max_bytes);
        let (messages, bytes) = if before { (1, len) } else { (messages + 1, bytes + len) };
        Cut { before, after: messages >= self.max_messages || bytes >= self.max_bytes }
    }

    /// Where each batch starts among messages of these payload sizes sent in order (the index
    /// of each batch's first message): `cut` message after message, as `Producer::add` takes it.
    pub fn starts(&self, sizes: &[usize]) -> Vec<usize> {
        let (mut starts, mut messages, mut bytes) = (Vec::new(), 0, 0);
        for (index, &len) in sizes.iter().enumerate() {
            let cut = self.cut(messages, bytes, len);
            if cut.before {
                (messages, bytes) = (0, 0);
            }
            if messages == 0 {
                starts.push(index);
            }
            (messages, bytes) = if cut.after { (0, 0) } else { (messages + 1, bytes + len) };
        }
        starts
    }
}

/// The open batch's fate around one message (`Batching::cut`).
pub struct Cut {
    /// Sent before the message joins it.
    pub before: bool,
    /// Sent with the message as its last.
    pub after: bool,
}

/// One message to send.
pub struct Outgoing<'a> {
    pub data: &'a [u8],
    pub key: Option<&'a str>,
    /// Sorted by key, each key once (as pulsar-client's `std::map` gives them).
    pub properties: Vec<(&'a str, &'a str)>,
    pub event_time: Option<u64>,
    pub sequence_id: u64,
}

/// The batch being filled: its messages already written in the batch payload's format
/// (`[SingleMessageMetadata size][SingleMessageMetadata][payload]` each).
struct Open {
    payload: Vec<u8>,
    messages: usize,
    /// The messages' payload bytes (what pulsar-client counts against the size limit).
    bytes: usize,
    first_sequence_id: u64,
    partition_key: Option<String>,
    /// PIP-420's `MessageMetadata.schema_id` (field 32) for the entry: the bytes of the
    /// `__schema_id` its messages carry, where every one carries the same (an entry's metadata
    /// has room for one; the property stays on each message either way).
    schema_id: Option<Vec<u8>>,
}

/// A batch sent and not acknowledged yet: what it takes to send it again.
struct Sent {
    messages: usize,
    metadata: proto::MessageMetadata,
    payload: Vec<u8>,
}

impl Sent {
    fn first_sequence_id(&self) -> u64 {
        self.metadata.sequence_id
    }
}

pub struct Producer {
    connection: Connection,
    options: Options,
    topic: String,
    producer_id: u64,
    pub name: String,
    /// Whether the caller named the producer (else the broker did).
    named: bool,
    /// The sequence id after the last one added (at first, after the broker's last for this
    /// name): a message's when the caller gives none.
    pub next_sequence_id: u64,
    batching: Batching,
    max_message_size: usize,
    open: Open,
    /// The batches sent and not yet acknowledged, oldest first.
    pending: VecDeque<Sent>,
    pub acknowledged: usize,
    failed: Option<String>,
}

impl Producer {
    /// Connects to the broker of `topic` and creates a producer there, named `name` (None: the
    /// broker names it).
    pub fn open(options: &Options, topic: &str, name: Option<&str>, batching: Batching) -> Result<Self, String> {
        let producer_id = 1;
        let (connection, success) = opened(options, || {
            let mut connection = connect_for(topic, options)?;
            let success = create(&mut connection, topic, producer_id, name, name.is_some())?;
            Ok((connection, success))
        })?;
        let max_message_size = connection.max_message_size;
        Ok(Self {
            connection,
            options: options.clone(),
            topic: topic.to_string(),
            producer_id,
            name: success.producer_name,
            named: name.is_some(),
            next_sequence_id: (success.last_sequence_id.unwrap_or(-1) + 1).max(0) as u64,
            batching,
            max_message_size,
            open: Open {
                payload: Vec::new(),
                messages: 0,
                bytes: 0,
                first_sequence_id: 0,
                partition_key: None,
                schema_id: None,
            },
            pending: VecDeque::new(),
            acknowledged: 0,
            failed: None,
        })
    }

    /// After `lost`: a new connection and the producer created again under its name, every
    /// batch without a receipt sent again.
    fn recover(&mut self, lost: String) -> Result<(), String> {
        self.connection.close();
        let (options, topic, name, named) = (&self.options, &self.topic, &self.name, self.named);
        let (producer_id, pending) = (self.producer_id, &self.pending);
        let again = reconnect(options, &lost, || {
            let mut connection = connect_for(topic, options)?;
            create(&mut connection, topic, producer_id, Some(name.as_str()), named)?;
            for sent in pending {
                connection.send_message(send_command(producer_id, sent), &sent.metadata, &sent.payload)?;
            }
            Ok(connection)
        });
        match again {
            Ok(connection) => {
                self.connection = connection;
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Adds a message to the open batch, sending batches as pulsar-client would: the open batch
    /// first if the message does not fit in it, then the batch with the message if it is full.
    pub fn add(&mut self, message: &Outgoing<'_>) -> Result<(), String> {
        self.check()?;
        let cut = self.batching.cut(self.open.messages, self.open.bytes, message.data.len());
        if cut.before {
            self.send_open()?;
        }
        self.append(message);
        self.next_sequence_id = message.sequence_id + 1;
        if cut.after {
            self.send_open()?;
        }
        Ok(())
    }

    fn append(&mut self, message: &Outgoing<'_>) {
        let open = &mut self.open;
        let schema_id = metadata_id(&message.properties);
        if open.messages == 0 {
            open.first_sequence_id = message.sequence_id;
            open.partition_key = message.key.map(str::to_string);
            open.schema_id = schema_id;
        } else if open.schema_id != schema_id {
            open.schema_id = None; // and it stays none: no later message can agree with all
        }
        let single = proto::SingleMessageMetadata {
            properties: message
                .properties
                .iter()
                .map(|(k, v)| proto::KeyValue { key: k.to_string(), value: v.to_string() })
                .collect(),
            partition_key: message.key.map(str::to_string),
            payload_size: message.data.len() as i32,
            event_time: message.event_time,
            sequence_id: Some(message.sequence_id),
            ..Default::default()
        };
        open.payload.extend_from_slice(&(single.encoded_len() as u32).to_be_bytes());
        single.encode(&mut open.payload).expect("a Vec grows");
        open.payload.extend_from_slice(message.data);
        open.messages += 1;
        open.bytes += message.data.len();
    }

    /// Sends the open batch (if any) as one entry.
    fn send_open(&mut self) -> Result<(), String> {
        if self.open.messages == 0 {
            return Ok(());
        }
        let publish_time = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        let metadata = proto::MessageMetadata {
            producer_name: self.name.clone(),
            sequence_id: self.open.first_sequence_id,
            publish_time,
            partition_key: self.open.partition_key.take(),
            num_messages_in_batch: Some(self.open.messages as i32),
            schema_id: self.open.schema_id.take(),
            ..Default::default()
        };
        if self.open.payload.len() > self.max_message_size {
            return Err(self.fail(format!(
                "a batch of {} bytes, above the broker's maximum message size of {} bytes",
                self.open.payload.len(),
                self.max_message_size
            )));
        }
        let capacity = self.open.payload.len();
        let payload = std::mem::replace(&mut self.open.payload, Vec::with_capacity(capacity));
        let sent = Sent { messages: self.open.messages, metadata, payload };
        self.open.messages = 0;
        self.open.bytes = 0;
        let written = self.connection.send_message(send_command(self.producer_id, &sent), &sent.metadata, &sent.payload);
        self.pending.push_back(sent);
        match written {
            Ok(()) => {}
            Err(lost) if self.connection.lost() => self.recover(lost)?,
            Err(e) => return Err(self.fail(e)),
        }
        while self.pending.len() > MAX_PENDING {
            self.receive_receipt()?;
        }
        Ok(())
    }

    /// Reads the broker's answer to the oldest pending batch.
    fn receive_receipt(&mut self) -> Result<(), String> {
        let what = "sending";
        loop {
            let command = match self.connection.read_command(what) {
                Ok(command) => command,
                Err(lost) if self.connection.lost() => {
                    self.recover(lost)?;
                    continue;
                }
                Err(e) => return Err(self.fail(e)),
            };
            if let Some(receipt) = command.send_receipt {
                if receipt.producer_id != self.producer_id {
                    continue;
                }
                let Some(sent) = self.pending.pop_front() else {
                    return Err(self.fail(format!("{what}: a receipt for a batch not sent")));
                };
                let (first, messages) = (sent.first_sequence_id(), sent.messages);
                if receipt.sequence_id != first {
                    return Err(self.fail(format!(
                        "{what}: a receipt for sequence id {}, where {first} was the oldest sent",
                        receipt.sequence_id
                    )));
                }
                self.acknowledged += messages;
                return Ok(());
            }
            if let Some(error) = command.send_error {
                let kind = proto::ServerError::try_from(error.error)
                    .map(|e| format!("{e:?}"))
                    .unwrap_or_else(|_| error.error.to_string());
                return Err(self.fail(format!(
                    "{what}: the broker refused the batch from sequence id {}: {kind}: {}",
                    error.sequence_id, error.message
                )));
            }
            if command.close_producer.is_some() {
                self.connection.mark_lost();
                self.recover(format!("{what}: the broker closed the producer (topic unloaded or moved)"))?;
            }
        }
    }

    /// Sends the open batch and waits for every receipt; the messages acknowledged so far.
    pub fn flush(&mut self) -> Result<usize, String> {
        self.check()?;
        self.send_open()?;
        while !self.pending.is_empty() {
            self.receive_receipt()?;
        }
        Ok(self.acknowledged)
    }

    /// Closes the producer on the broker (when nothing failed) and the connection.
    pub fn close(&mut self) {
        if self.failed.is_none() {
            let producer_id = self.producer_id;
            let _ = self.connection.request("closing the producer", Type::CloseProducer, |c, id| {
                c.close_producer = Some(proto::CommandCloseProducer { producer_id, request_id: id })
            });
        }
        self.failed.get_or_insert_with(|| "the producer is closed".to_string());
        self.connection.close();
    }

    fn check(&self) -> Result<(), String> {
        match &self.failed {
            Some(reason) => Err(reason.clone()),
            None => Ok(()),
        }
    }

    /// Marks the producer failed (nothing more is sent on it) and gives the reason back.
    fn fail(&mut self, reason: String) -> String {
        self.failed = Some(reason.clone());
        reason
    }
}

/// Creates the producer `producer_id` on `connection`, named `name` (None: the broker names it;
/// `named`: the caller chose the name), waiting while the broker makes it ready.
fn create(
    connection: &mut Connection,
    topic: &str,
    producer_id: u64,
    name: Option<&str>,
    named: bool,
) -> Result<proto::CommandProducerSuccess, String> {
    let what = "creating the producer";
    let mut answer = connection.request(what, Type::Producer, |c, id| {
        c.producer = Some(proto::CommandProducer {
            topic: topic.to_string(),
            producer_id,
            request_id: id,
            producer_name: name.map(str::to_string),
            user_provided_producer_name: Some(named),
            ..Default::default()
        })
    })?;
    loop {
        let success = answer
            .producer_success
            .take()
            .ok_or_else(|| format!("{what}: an answer that is not the producer's"))?;
        if success.producer_ready.unwrap_or(true) {
            return Ok(success);
        }
        // waiting for exclusive access (not asked for here): the broker says again when ready
        answer = connection.read_command(what)?;
    }
}

/// The SEND command of a batch.
fn send_command(producer_id: u64, sent: &Sent) -> proto::CommandSend {
    proto::CommandSend {
        producer_id,
        sequence_id: sent.first_sequence_id(),
        num_messages: Some(sent.messages as i32),
        ..Default::default()
    }
}

/// The PIP-420 metadata id a message's `__schema_id` property carries (its hex, as the Python
/// path writes it, `schema_id.py`), for `MessageMetadata.schema_id`; None without one, or for a
/// value that is not hex.
fn metadata_id(properties: &[(&str, &str)]) -> Option<Vec<u8>> {
    let (_, text) = properties.iter().find(|(key, _)| *key == crate::columns::SCHEMA_ID_PROPERTY)?;
    if text.is_empty() || text.len() % 2 != 0 {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// boost's `hash<std::string>` on 64-bit platforms (`boost::hash_range` over chars, boost 1.81 and
/// later, in `boost/container_hash/detail/hash_range.hpp`): what pulsar-client's `BoostHash`
/// routes keyed messages by. Checked against the routing of pulsar-client's own producer by
/// `tests/spark/test_write.py`.
pub fn boost_hash(key: &[u8]) -> u64 {
    const Q: u64 = 0x9e37_79b9_7f4a_7c15;
    const K: u64 = 0xdf44_2d22_ce48_59b9; // Q * Q
    fn mulx(x: u64, y: u64) -> u64 {
        let r = (x as u128) * (y as u128);
        (r as u64) ^ ((r >> 64) as u64)
    }
    fn le32(p: &[u8]) -> u64 {
        u32::from_le_bytes([p[0], p[1], p[2], p[3]]) as u64
    }
    let mut n = key.len();
    let mut p = key;
    let mut w = mulx(Q, K); // the seed is 0
    let mut h = w ^ n as u64;
    while n >= 8 {
        let v = u64::from_le_bytes(p[..8].try_into().expect("8 bytes"));
        w = w.wrapping_add(Q);
        h ^= mulx(v.wrapping_add(w), K);
        p = &p[8..];
        n -= 8;
    }
    let v = if n >= 4 {
        (le32(&p[n - 4..]) << ((n - 4) * 8)) | le32(p)
    } else if n >= 1 {
        let (x1, x2) = ((n - 1) & 2, n >> 1);
        ((p[x1] as u64) << (x1 * 8)) | ((p[x2] as u64) << (x2 * 8)) | p[0] as u64
    } else {
        0
    };
    w = w.wrapping_add(Q);
    h ^= mulx(v.wrapping_add(w), K);
    mulx(h.wrapping_add(w), K)
}

#[cfg(test)]
mod tests {
    use super::{boost_hash, metadata_id};

    #[test]
    fn the_schema_id_property_as_field_32s_bytes() {
        assert_eq!(metadata_id(&[("__schema_id", "ff000000000c")]), Some(vec![0xff, 0, 0, 0, 0, 0x0c]));
        assert_eq!(metadata_id(&[("a", "b"), ("__schema_id", "FE0A")]), Some(vec![0xfe, 0x0a]));
        for odd in ["", "f", "zz", "ff0", "éé"] {
            assert_eq!(metadata_id(&[("__schema_id", odd)]), None, "{odd}");
        }
        assert_eq!(metadata_id(&[("other", "ff")]), None);
    }

    #[test]
    fn boost_hash_routes_as_pulsar_client() {
        // partitions of 7 that pulsar-client 3.x's producer chose for these keys (see
        // tests/spark/test_write.py, which checks many more on the broker)
        let partition = |k: &str| (boost_hash(k.as_bytes()) & 0x7fff_ffff) % 7;
        let routed: Vec<u64> = ["k0", "a", "hello world", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]
            .iter()
            .map(|k| partition(k))
            .collect();
        assert_eq!(routed, EXPECTED.to_vec());
    }

    const EXPECTED: [u64; 4] = [3, 4, 3, 5];
}
