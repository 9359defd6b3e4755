//! The Pulsar binary protocol's messages this crate sends and reads (package `pulsar.proto` of
//! Pulsar's `PulsarApi.proto`), written by hand with prost's derives from the .proto's field
//! numbers and types, under the names prost-build gives them: so the crate needs neither the
//! `pulsar` crate nor `protoc`.
//!
//! Only the fields used here are declared (prost skips the others when decoding), with every
//! `required` field of what is sent (the broker refuses a command that lacks one; prost writes a
//! required field even when it holds its zero value). The messages built with
//! `..Default::default()` keep one optional field more, left unset, where the code sets all the
//! others. An optional field's `default` is the .proto's (what prost's getter gives when the
//! field is absent).

/// `BaseCommand`: the envelope of every command, its `type` naming the one field set.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BaseCommand {
    #[prost(enumeration = "base_command::Type", required, tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub connect: Option<CommandConnect>,
    #[prost(message, optional, tag = "3")]
    pub connected: Option<CommandConnected>,
    #[prost(message, optional, tag = "4")]
    pub subscribe: Option<CommandSubscribe>,
    #[prost(message, optional, tag = "5")]
    pub producer: Option<CommandProducer>,
    #[prost(message, optional, tag = "6")]
    pub send: Option<CommandSend>,
    #[prost(message, optional, tag = "7")]
    pub send_receipt: Option<CommandSendReceipt>,
    #[prost(message, optional, tag = "8")]
    pub send_error: Option<CommandSendError>,
    #[prost(message, optional, tag = "9")]
    pub message: Option<CommandMessage>,
    #[prost(message, optional, tag = "11")]
    pub flow: Option<CommandFlow>,
    #[prost(message, optional, tag = "13")]
    pub success: Option<CommandSuccess>,
    #[prost(message, optional, tag = "14")]
    pub error: Option<CommandError>,
    #[prost(message, optional, tag = "15")]
    pub close_producer: Option<CommandCloseProducer>,
    #[prost(message, optional, tag = "16")]
    pub close_consumer: Option<CommandCloseConsumer>,
    #[prost(message, optional, tag = "17")]
    pub producer_success: Option<CommandProducerSuccess>,
    #[prost(message, optional, tag = "18")]
    pub ping: Option<CommandPing>,
    #[prost(message, optional, tag = "19")]
    pub pong: Option<CommandPong>,
    #[prost(message, optional, tag = "23")]
    pub lookup_topic: Option<CommandLookupTopic>,
    #[prost(message, optional, tag = "24")]
    pub lookup_topic_response: Option<CommandLookupTopicResponse>,
    #[prost(message, optional, tag = "27")]
    pub reached_end_of_topic: Option<CommandReachedEndOfTopic>,
    #[prost(message, optional, tag = "29")]
    pub get_last_message_id: Option<CommandGetLastMessageId>,
    #[prost(message, optional, tag = "30")]
    pub get_last_message_id_response: Option<CommandGetLastMessageIdResponse>,
    #[prost(message, optional, tag = "36")]
    pub auth_challenge: Option<CommandAuthChallenge>,
    #[prost(message, optional, tag = "37")]
    pub auth_response: Option<CommandAuthResponse>,
}

pub mod base_command {
    /// `BaseCommand.Type`, every value of the .proto.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
    #[repr(i32)]
    pub enum Type {
        Connect = 2,
        Connected = 3,
        Subscribe = 4,
        Producer = 5,
        Send = 6,
        SendReceipt = 7,
        SendError = 8,
        Message = 9,
        Ack = 10,
        Flow = 11,
        Unsubscribe = 12,
        Success = 13,
        Error = 14,
        CloseProducer = 15,
        CloseConsumer = 16,
        ProducerSuccess = 17,
        Ping = 18,
        Pong = 19,
        RedeliverUnacknowledgedMessages = 20,
        PartitionedMetadata = 21,
        PartitionedMetadataResponse = 22,
        Lookup = 23,
        LookupResponse = 24,
        ConsumerStats = 25,
        ConsumerStatsResponse = 26,
        ReachedEndOfTopic = 27,
        Seek = 28,
        GetLastMessageId = 29,
        GetLastMessageIdResponse = 30,
        ActiveConsumerChange = 31,
        GetTopicsOfNamespace = 32,
        GetTopicsOfNamespaceResponse = 33,
        GetSchema = 34,
        GetSchemaResponse = 35,
        AuthChallenge = 36,
        AuthResponse = 37,
        AckResponse = 38,
        GetOrCreateSchema = 39,
        GetOrCreateSchemaResponse = 40,
        NewTxn = 50,
        NewTxnResponse = 51,
        AddPartitionToTxn = 52,
        AddPartitionToTxnResponse = 53,
        AddSubscriptionToTxn = 54,
        AddSubscriptionToTxnResponse = 55,
        EndTxn = 56,
        EndTxnResponse = 57,
        EndTxnOnPartition = 58,
        EndTxnOnPartitionResponse = 59,
        EndTxnOnSubscription = 60,
        EndTxnOnSubscriptionResponse = 61,
        TcClientConnectRequest = 62,
        TcClientConnectResponse = 63,
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandConnect {
    #[prost(string, required, tag = "1")]
    pub client_version: String,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub auth_data: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "4", default = "0")]
    pub protocol_version: Option<i32>,
    #[prost(string, optional, tag = "5")]
    pub auth_method_name: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub proxy_to_broker_url: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub original_principal: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandConnected {
    #[prost(string, required, tag = "1")]
    pub server_version: String,
    #[prost(int32, optional, tag = "3")]
    pub max_message_size: Option<i32>,
}

/// Only whether the broker sent one is read: it is answered with the token again.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandAuthChallenge {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandAuthResponse {
    #[prost(string, optional, tag = "1")]
    pub client_version: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub response: Option<AuthData>,
    #[prost(int32, optional, tag = "3", default = "0")]
    pub protocol_version: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthData {
    #[prost(string, optional, tag = "1")]
    pub auth_method_name: Option<String>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub auth_data: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandLookupTopic {
    #[prost(string, required, tag = "1")]
    pub topic: String,
    #[prost(uint64, required, tag = "2")]
    pub request_id: u64,
    #[prost(bool, optional, tag = "3", default = "false")]
    pub authoritative: Option<bool>,
    #[prost(string, optional, tag = "7")]
    pub advertised_listener_name: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandLookupTopicResponse {
    #[prost(string, optional, tag = "1")]
    pub broker_service_url: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub broker_service_url_tls: Option<String>,
    #[prost(enumeration = "command_lookup_topic_response::LookupType", optional, tag = "3")]
    pub response: Option<i32>,
    #[prost(uint64, required, tag = "4")]
    pub request_id: u64,
    #[prost(bool, optional, tag = "5", default = "false")]
    pub authoritative: Option<bool>,
    #[prost(enumeration = "ServerError", optional, tag = "6")]
    pub error: Option<i32>,
    #[prost(string, optional, tag = "7")]
    pub message: Option<String>,
    #[prost(bool, optional, tag = "8", default = "false")]
    pub proxy_through_service_url: Option<bool>,
}

pub mod command_lookup_topic_response {
    #[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
    #[repr(i32)]
    pub enum LookupType {
        Redirect = 0,
        Connect = 1,
        Failed = 2,
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandSubscribe {
    #[prost(string, required, tag = "1")]
    pub topic: String,
    #[prost(string, required, tag = "2")]
    pub subscription: String,
    #[prost(enumeration = "command_subscribe::SubType", required, tag = "3")]
    pub sub_type: i32,
    #[prost(uint64, required, tag = "4")]
    pub consumer_id: u64,
    #[prost(uint64, required, tag = "5")]
    pub request_id: u64,
    #[prost(string, optional, tag = "6")]
    pub consumer_name: Option<String>,
    #[prost(bool, optional, tag = "8", default = "true")]
    pub durable: Option<bool>,
    #[prost(message, optional, tag = "9")]
    pub start_message_id: Option<MessageIdData>,
    #[prost(bool, optional, tag = "11")]
    pub read_compacted: Option<bool>,
    #[prost(enumeration = "command_subscribe::InitialPosition", optional, tag = "13", default = "Latest")]
    pub initial_position: Option<i32>,
    #[prost(bool, optional, tag = "15", default = "true")]
    pub force_topic_creation: Option<bool>,
}

pub mod command_subscribe {
    #[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
    #[repr(i32)]
    pub enum SubType {
        Exclusive = 0,
        Shared = 1,
        Failover = 2,
        KeyShared = 3,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
    #[repr(i32)]
    pub enum InitialPosition {
        Latest = 0,
        Earliest = 1,
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandFlow {
    #[prost(uint64, required, tag = "1")]
    pub consumer_id: u64,
    #[prost(uint32, required, tag = "2")]
    pub message_permits: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandGetLastMessageId {
    #[prost(uint64, required, tag = "1")]
    pub consumer_id: u64,
    #[prost(uint64, required, tag = "2")]
    pub request_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandGetLastMessageIdResponse {
    #[prost(message, required, tag = "1")]
    pub last_message_id: MessageIdData,
    #[prost(uint64, required, tag = "2")]
    pub request_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandMessage {
    #[prost(uint64, required, tag = "1")]
    pub consumer_id: u64,
    #[prost(message, required, tag = "2")]
    pub message_id: MessageIdData,
}

/// Only whether the broker sent one is read: the topic was terminated.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandReachedEndOfTopic {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandCloseConsumer {
    #[prost(uint64, required, tag = "1")]
    pub consumer_id: u64,
    #[prost(uint64, required, tag = "2")]
    pub request_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandProducer {
    #[prost(string, required, tag = "1")]
    pub topic: String,
    #[prost(uint64, required, tag = "2")]
    pub producer_id: u64,
    #[prost(uint64, required, tag = "3")]
    pub request_id: u64,
    #[prost(string, optional, tag = "4")]
    pub producer_name: Option<String>,
    #[prost(bool, optional, tag = "5", default = "false")]
    pub encrypted: Option<bool>,
    #[prost(bool, optional, tag = "9", default = "true")]
    pub user_provided_producer_name: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandProducerSuccess {
    #[prost(uint64, required, tag = "1")]
    pub request_id: u64,
    #[prost(string, required, tag = "2")]
    pub producer_name: String,
    #[prost(int64, optional, tag = "3", default = "-1")]
    pub last_sequence_id: Option<i64>,
    #[prost(bool, optional, tag = "6", default = "true")]
    pub producer_ready: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandSend {
    #[prost(uint64, required, tag = "1")]
    pub producer_id: u64,
    #[prost(uint64, required, tag = "2")]
    pub sequence_id: u64,
    #[prost(int32, optional, tag = "3", default = "1")]
    pub num_messages: Option<i32>,
    #[prost(uint64, optional, tag = "6", default = "0")]
    pub highest_sequence_id: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandSendReceipt {
    #[prost(uint64, required, tag = "1")]
    pub producer_id: u64,
    #[prost(uint64, required, tag = "2")]
    pub sequence_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandSendError {
    #[prost(uint64, required, tag = "2")]
    pub sequence_id: u64,
    #[prost(enumeration = "ServerError", required, tag = "3")]
    pub error: i32,
    #[prost(string, required, tag = "4")]
    pub message: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandCloseProducer {
    #[prost(uint64, required, tag = "1")]
    pub producer_id: u64,
    #[prost(uint64, required, tag = "2")]
    pub request_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandSuccess {
    #[prost(uint64, required, tag = "1")]
    pub request_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandError {
    #[prost(uint64, required, tag = "1")]
    pub request_id: u64,
    #[prost(enumeration = "ServerError", required, tag = "2")]
    pub error: i32,
    #[prost(string, required, tag = "3")]
    pub message: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandPing {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CommandPong {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MessageIdData {
    #[prost(uint64, required, tag = "1")]
    pub ledger_id: u64,
    #[prost(uint64, required, tag = "2")]
    pub entry_id: u64,
    #[prost(int32, optional, tag = "3", default = "-1")]
    pub partition: Option<i32>,
    #[prost(int32, optional, tag = "4", default = "-1")]
    pub batch_index: Option<i32>,
    #[prost(int32, optional, tag = "6")]
    pub batch_size: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, required, tag = "1")]
    pub key: String,
    #[prost(string, required, tag = "2")]
    pub value: String,
}

/// An entry's metadata (after its checksum in a MESSAGE or SEND frame).
#[derive(Clone, PartialEq, prost::Message)]
pub struct MessageMetadata {
    #[prost(string, required, tag = "1")]
    pub producer_name: String,
    #[prost(uint64, required, tag = "2")]
    pub sequence_id: u64,
    #[prost(uint64, required, tag = "3")]
    pub publish_time: u64,
    #[prost(message, repeated, tag = "4")]
    pub properties: Vec<KeyValue>,
    #[prost(string, optional, tag = "6")]
    pub partition_key: Option<String>,
    #[prost(enumeration = "CompressionType", optional, tag = "8", default = "None")]
    pub compression: Option<i32>,
    #[prost(uint32, optional, tag = "9", default = "0")]
    pub uncompressed_size: Option<u32>,
    #[prost(int32, optional, tag = "11", default = "1")]
    pub num_messages_in_batch: Option<i32>,
    #[prost(uint64, optional, tag = "12", default = "0")]
    pub event_time: Option<u64>,
    #[prost(message, repeated, tag = "13")]
    pub encryption_keys: Vec<EncryptionKeys>,
    #[prost(bytes = "vec", optional, tag = "18")]
    pub ordering_key: Option<Vec<u8>>,
    #[prost(bool, optional, tag = "25", default = "false")]
    pub null_value: Option<bool>,
    #[prost(int32, optional, tag = "27")]
    pub num_chunks_from_msg: Option<i32>,
    #[prost(int32, optional, tag = "29")]
    pub chunk_id: Option<i32>,
    /// PIP-420's schema id of an external schema registry (`optional bytes schema_id = 32`, in
    /// PulsarApi.proto since PIP-420; the copy of pulsar-rs 6.9.1 predates it).
    #[prost(bytes = "vec", optional, tag = "32")]
    pub schema_id: Option<Vec<u8>>,
}

/// Only whether a message has any is read: the reader cannot decrypt it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EncryptionKeys {}

/// A batched message's metadata (before its payload in the batch).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SingleMessageMetadata {
    #[prost(message, repeated, tag = "1")]
    pub properties: Vec<KeyValue>,
    #[prost(string, optional, tag = "2")]
    pub partition_key: Option<String>,
    #[prost(int32, required, tag = "3")]
    pub payload_size: i32,
    #[prost(uint64, optional, tag = "5", default = "0")]
    pub event_time: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "7")]
    pub ordering_key: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "8")]
    pub sequence_id: Option<u64>,
    #[prost(bool, optional, tag = "9", default = "false")]
    pub null_value: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum CompressionType {
    None = 0,
    Lz4 = 1,
    Zlib = 2,
    Zstd = 3,
    Snappy = 4,
}

/// The broker's error codes, every value of the .proto (their names appear in error messages,
/// and `wire::FINAL_ERRORS` matches some).
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum ServerError {
    UnknownError = 0,
    MetadataError = 1,
    PersistenceError = 2,
    AuthenticationError = 3,
    AuthorizationError = 4,
    ConsumerBusy = 5,
    ServiceNotReady = 6,
    ProducerBlockedQuotaExceededError = 7,
    ProducerBlockedQuotaExceededException = 8,
    ChecksumError = 9,
    UnsupportedVersionError = 10,
    TopicNotFound = 11,
    SubscriptionNotFound = 12,
    ConsumerNotFound = 13,
    TooManyRequests = 14,
    TopicTerminatedError = 15,
    ProducerBusy = 16,
    InvalidTopicName = 17,
    IncompatibleSchema = 18,
    ConsumerAssignError = 19,
    TransactionCoordinatorNotFound = 20,
    InvalidTxnStatus = 21,
    NotAllowedError = 22,
    TransactionConflict = 23,
    TransactionNotFound = 24,
    ProducerFenced = 25,
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::base_command::Type;
    use super::{BaseCommand, CommandSend, CompressionType, MessageMetadata};

    #[test]
    fn a_send_and_its_metadata_round_trip() {
        let send = CommandSend { producer_id: 3, sequence_id: 41, num_messages: Some(5), ..Default::default() };
        let command = BaseCommand { r#type: Type::Send as i32, send: Some(send), ..Default::default() };
        assert_eq!(BaseCommand::decode(command.encode_to_vec().as_slice()).unwrap(), command);

        let metadata = MessageMetadata {
            producer_name: "producer".into(),
            sequence_id: 41,
            publish_time: 1_700_000_000_000,
            num_messages_in_batch: Some(5),
            compression: Some(CompressionType::Zstd as i32),
            schema_id: Some(vec![0xff, 0, 0, 0, 7]),
            ..Default::default()
        };
        assert_eq!(MessageMetadata::decode(metadata.encode_to_vec().as_slice()).unwrap(), metadata);
    }

    // Bytes written from the protobuf wire format (a key is `field number << 3 | wire type`, 0 a
    // varint, 2 length-delimited), so the field numbers are checked apart from prost.

    #[test]
    fn message_metadata_field_numbers() {
        let wire = [0x0a, 1, b'p', 0x10, 7, 0x18, 9];
        let metadata =
            MessageMetadata { producer_name: "p".into(), sequence_id: 7, publish_time: 9, ..Default::default() };
        assert_eq!(MessageMetadata::decode(&wire[..]).unwrap(), metadata);
        assert_eq!(metadata.encode_to_vec(), wire);
        // required fields are written even when zero: the broker refuses metadata without them
        assert_eq!(MessageMetadata::default().encode_to_vec(), [0x0a, 0, 0x10, 0, 0x18, 0]);
        // compression 8 (LZ4), num_messages_in_batch 11, schema_id 32 (key 258: varint 0x82 0x02)
        let wire = [0x40, 1, 0x58, 3, 0x82, 0x02, 2, 0xff, 0x01];
        let decoded = MessageMetadata::decode(&wire[..]).unwrap();
        assert_eq!(decoded.compression, Some(CompressionType::Lz4 as i32));
        assert_eq!(decoded.num_messages_in_batch, Some(3));
        assert_eq!(decoded.schema_id, Some(vec![0xff, 0x01]));
    }

    #[test]
    fn base_command_field_numbers() {
        // type 1 = SEND (6); send 6 = {producer_id 1: 1, sequence_id 2: 2}
        let wire = [0x08, 6, 0x32, 4, 0x08, 1, 0x10, 2];
        let send = CommandSend { producer_id: 1, sequence_id: 2, ..Default::default() };
        let command = BaseCommand { r#type: Type::Send as i32, send: Some(send), ..Default::default() };
        assert_eq!(BaseCommand::decode(&wire[..]).unwrap(), command);
        assert_eq!(command.encode_to_vec(), wire);
    }
}
