//! A batch's metadata columns, built as the messages arrive, with what pulsar-client's Python
//! `Message` would give for each (the Python path's `reading/rows.py` is the reference):
//! `partition_key() or None`, properties as its `std::map` (sorted by key, the first of a repeated
//! key kept), publish and event time in microseconds (an event time of 0 is none), the batch
//! index -1 for a message outside a batch.
//!
//! Each row's schema id is read here in its everyday forms: the `__schema_id` property of a
//! Confluent numeric id (`ff00` + 8 hex digits), the same bytes in PIP-420's `MessageMetadata`
//! field 32 of a message without the property (Java PIP-420 producers write only that field,
//! which pulsar-client's Python `Message` does not give), and the Confluent prefix of a message
//! without either. Any other form, a field 32 that says another id than the property, and any
//! message with `__rule.*` properties (a dead-letter copy, whose rules the Python path knows how to
//! treat), is a row for the Python path.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, BooleanArray, Int32Builder, Int64Builder, MapBuilder, PrimitiveBuilder,
    StringBuilder, StructArray,
};
use arrow::datatypes::{DataType, Field, Fields, TimestampMicrosecondType};
use arrow::error::ArrowError;

use crate::conform::conform;
use crate::receive::MessageView;

pub const SCHEMA_ID_PROPERTY: &str = "__schema_id";
const HEADER_PROPERTIES: [&str; 2] = ["__value_schema_id", "__key_schema_id"];
const RULE_PREFIX: &str = "__rule.";

/// How a message's value is read.
pub struct Framing {
    /// The Confluent numeric schema id, where it is in an everyday form.
    pub id: Option<u32>,
    /// Bytes of the payload before the Avro body (the Confluent prefix).
    pub skip: usize,
    /// The message is one for the Python path, whatever its id.
    pub python: bool,
    /// Where the id came from metadata: the bytes after its numeric id (a Protobuf writer's
    /// message indexes; Avro and JSON Schema ids have none), up to 8. None: the id came from
    /// the payload's prefix, and the indexes, if any, begin the body.
    pub tail: Option<Tail>,
}

/// The bytes of a metadata id after its numeric id.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Tail {
    bytes: [u8; 8],
    len: u8,
}

impl Tail {
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    fn of(bytes: &[u8]) -> Option<Tail> {
        let mut tail = Tail::default();
        tail.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        tail.len = bytes.len() as u8;
        Some(tail)
    }
}

pub struct Columns {
    keys: StringBuilder,
    ledgers: Int64Builder,
    entries: Int64Builder,
    batches: Int32Builder,
    publish: PrimitiveBuilder<TimestampMicrosecondType>,
    event: PrimitiveBuilder<TimestampMicrosecondType>,
    properties: MapBuilder<StringBuilder, StringBuilder>,
    schema_ids: Int32Builder,
    data: BinaryBuilder,
    ordering: BinaryBuilder,
    rows: usize,
}


impl Columns {
    pub fn new(capacity: usize) -> Self {
        Self {
            keys: StringBuilder::with_capacity(capacity, capacity * 8),
            ledgers: Int64Builder::with_capacity(capacity),
            entries: Int64Builder::with_capacity(capacity),
            batches: Int32Builder::with_capacity(capacity),
            publish: PrimitiveBuilder::with_capacity(capacity),
            event: PrimitiveBuilder::with_capacity(capacity),
            properties: MapBuilder::new(None, StringBuilder::new(), StringBuilder::new()),
            schema_ids: Int32Builder::with_capacity(capacity),
            data: BinaryBuilder::with_capacity(capacity, capacity * 64),
            ordering: BinaryBuilder::new(),
            rows: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    /// Adds a message's metadata; returns how its value is read.
    pub fn add(&mut self, row: &MessageView<'_>) -> Result<Framing, ArrowError> {
        match row.key {
            Some(key) if !key.is_empty() => self.keys.append_value(key),
            _ => self.keys.append_null(),
        }
        self.ledgers.append_value(row.ledger);
        self.entries.append_value(row.entry);
        self.batches.append_value(row.batch);
        self.publish.append_value(row.publish_ms as i64 * 1000);
        match row.event_ms {
            Some(ms) if ms != 0 => self.event.append_value(ms as i64 * 1000),
            _ => self.event.append_null(),
        }
        let sorted = sorted_properties(row.properties.iter().map(|pair| (pair.key.as_str(), pair.value.as_str())));
        for (key, value) in &sorted {
            self.properties.keys().append_value(key);
            self.properties.values().append_value(value);
        }
        self.properties.append(true)?;
        let framing = framing(&sorted, row.schema_id, row.data);
        match framing.id {
            Some(id) if !framing.python => self.schema_ids.append_option(i32::try_from(id).ok()),
            _ => self.schema_ids.append_null(), // the Python path's row replaces this one
        }
        self.data.append_value(row.data);
        match row.ordering_key {
            Some(key) if !key.is_empty() => self.ordering.append_value(key),
            _ => self.ordering.append_null(),
        }
        self.rows += 1;
        Ok(framing)
    }

    /// The columns of the rows added since the last call, named and typed as `declared` names
    /// them (`messageId`, `publishTime`, ..., the fields of the source's declared schema), then
    /// `_orderingKey` and `_native`.
    pub fn finish(
        &mut self,
        value: ArrayRef,
        native: BooleanArray,
        declared: &Fields,
    ) -> Result<(Vec<Arc<Field>>, Vec<ArrayRef>), ArrowError> {
        let id_fields = Fields::from(vec![
            Field::new("ledgerId", DataType::Int64, false),
            Field::new("entryId", DataType::Int64, false),
            Field::new("batchIndex", DataType::Int32, false),
        ]);
        let message_ids: ArrayRef = Arc::new(StructArray::try_new(
            id_fields,
            vec![
                Arc::new(self.ledgers.finish()),
                Arc::new(self.entries.finish()),
                Arc::new(self.batches.finish()),
            ],
            None,
        )?);
        let built: Vec<(&str, ArrayRef)> = vec![
            ("key", Arc::new(self.keys.finish())),
            ("value", value),
            ("messageId", message_ids),
            ("publishTime", Arc::new(self.publish.finish().with_timezone("UTC"))),
            ("eventTime", Arc::new(self.event.finish().with_timezone("UTC"))),
            ("properties", Arc::new(self.properties.finish())),
            ("schemaId", Arc::new(self.schema_ids.finish())),
            ("data", Arc::new(self.data.finish())),
        ];
        let mut fields = Vec::with_capacity(built.len() + 2);
        let mut arrays = Vec::with_capacity(built.len() + 2);
        for (name, array) in built {
            let field = match declared.find(name) {
                Some((_, field)) => field.clone(),
                None => Arc::new(Field::new(name, array.data_type().clone(), true)),
            };
            arrays.push(conform(&array, field.data_type())?);
            fields.push(field);
        }
        fields.push(Arc::new(Field::new("_orderingKey", DataType::Binary, true)));
        arrays.push(Arc::new(self.ordering.finish()));
        fields.push(Arc::new(Field::new("_native", DataType::Boolean, false)));
        arrays.push(Arc::new(native));
        self.rows = 0;
        Ok((fields, arrays))
    }
}

/// A message's properties as pulsar-client's `std::map` holds them: sorted by key, the first of a
/// repeated key kept (most messages have one or two: a sort of a few, no tree).
pub fn sorted_properties<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(&'a str, &'a str)> {
    let mut sorted: Vec<(&str, &str)> = pairs.collect();
    if sorted.len() > 1 {
        sorted.sort_by_key(|(key, _)| *key); // stable: the first of a repeated key stays first
        sorted.dedup_by_key(|(key, _)| *key);
    }
    sorted
}

fn property<'a>(properties: &[(&str, &'a str)], name: &str) -> Option<&'a str> {
    properties.iter().find(|(key, _)| *key == name).map(|(_, value)| *value)
}

/// How a message with these properties (`sorted_properties`), PIP-420 metadata id (field 32) and
/// payload is read (module doc).
pub fn framing(properties: &[(&str, &str)], metadata_id: Option<&[u8]>, data: &[u8]) -> Framing {
    let python = properties.iter().any(|(key, _)| key.starts_with(RULE_PREFIX));
    let metadata_id = metadata_id.filter(|id| !id.is_empty());
    if let Some(text) = property(properties, SCHEMA_ID_PROPERTY) {
        let found = numeric_id_property(text);
        let agrees = metadata_id.is_none_or(|bytes| numeric_id_bytes(bytes).is_some_and(|m| Some(m) == found));
        let (id, tail) = (found.map(|(id, _)| id), found.map(|(_, tail)| tail));
        return Framing { id, skip: 0, python: python || id.is_none() || !agrees, tail };
    }
    if let Some(bytes) = metadata_id {
        let found = numeric_id_bytes(bytes);
        let (id, tail) = (found.map(|(id, _)| id), found.map(|(_, tail)| tail));
        return Framing { id, skip: 0, python: python || id.is_none(), tail };
    }
    if HEADER_PROPERTIES.iter().any(|name| property(properties, name).is_some()) {
        return Framing { id: None, skip: 0, python: true, tail: None };
    }
    if data.len() >= 5 && data[0] == 0 {
        let id = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
        return Framing { id: Some(id), skip: 5, python, tail: None };
    }
    Framing { id: None, skip: 0, python: true, tail: None }
}

/// The id of PIP-420 metadata id bytes `0xFF 0x00` + a 4-byte big-endian id (a Confluent numeric
/// id of a value schema) + up to 8 bytes of Protobuf message indexes, and those bytes; None for
/// any other form.
fn numeric_id_bytes(bytes: &[u8]) -> Option<(u32, Tail)> {
    match bytes {
        [0xff, 0x00, a, b, c, d, rest @ ..] => Some((u32::from_be_bytes([*a, *b, *c, *d]), Tail::of(rest)?)),
        _ => None,
    }
}

/// The id of a `__schema_id` value `ff00` + 8 hex digits (either case) + up to 8 bytes in hex
/// (Protobuf message indexes), the PIP-420 metadata of a Confluent numeric id, and those bytes;
/// None for any other form (GUIDs, key/value ids).
fn numeric_id_property(text: &str) -> Option<(u32, Tail)> {
    let bytes = text.as_bytes();
    if bytes.len() < 12 || bytes.len() % 2 != 0 || !bytes[..4].eq_ignore_ascii_case(b"ff00") || !bytes[4..].iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let id = u32::from_str_radix(&text[4..12], 16).ok()?; // ASCII from byte 4 on: a character boundary
    let rest = &bytes[12..];
    let mut tail = Tail { bytes: [0; 8], len: u8::try_from(rest.len() / 2).ok().filter(|n| *n <= 8)? };
    for (byte, pair) in tail.bytes.iter_mut().zip(rest.chunks_exact(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some((id, tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn framing(p: &BTreeMap<&str, &str>, metadata_id: Option<&[u8]>, data: &[u8]) -> Framing {
        super::framing(&sorted_properties(p.iter().map(|(k, v)| (*k, *v))), metadata_id, data)
    }

    #[test]
    fn properties_sorted_as_a_std_map_keeps_them() {
        let pairs = [("b", "1"), ("a", "2"), ("b", "3"), ("c", "4"), ("a", "5")];
        assert_eq!(sorted_properties(pairs.into_iter()), vec![("a", "2"), ("b", "1"), ("c", "4")]);
        assert_eq!(sorted_properties([("z", "")].into_iter()), vec![("z", "")]);
    }

    #[test]
    fn everyday_ids_and_the_rest() {
        let mut p = BTreeMap::new();
        p.insert(SCHEMA_ID_PROPERTY, "ff000000000b");
        let f = framing(&p, None, b"x");
        assert_eq!((f.id, f.skip, f.python), (Some(11), 0, false));
        p.insert(SCHEMA_ID_PROPERTY, "FF00000000Ab");
        assert_eq!(framing(&p, None, b"x").id, Some(0xab));
        p.insert(SCHEMA_ID_PROPERTY, "ff01000000000000000000000000000000"); // a GUID
        assert!(framing(&p, None, b"x").python);
        p.insert(SCHEMA_ID_PROPERTY, "ff00+0000001");
        assert!(framing(&p, None, b"x").python);
        p.insert(SCHEMA_ID_PROPERTY, "fffé0000001"); // 12 bytes, byte 4 inside the é
        assert!(framing(&p, None, b"x").python);
        let mut dlq = BTreeMap::new();
        dlq.insert("__rule.name", "r");
        dlq.insert(SCHEMA_ID_PROPERTY, "ff000000000b");
        assert!(framing(&dlq, None, b"x").python);
        let none = BTreeMap::new();
        let prefixed = framing(&none, None, &[0, 0, 0, 1, 2, 9]);
        assert_eq!((prefixed.id, prefixed.skip, prefixed.python), (Some(258), 5, false));
        assert!(framing(&none, None, &[1, 0]).python);
        let mut header = BTreeMap::new();
        header.insert("__value_schema_id", "11");
        assert!(framing(&header, None, &[0, 0, 0, 1, 2, 9]).python);
        // PIP-420's field 32: read where the property is absent, and held to it where present
        let field32 = [0xff, 0x00, 0, 0, 0, 0x0c];
        let only = framing(&none, Some(&field32), &[0, 0, 0, 0, 9, 1]);
        assert_eq!((only.id, only.skip, only.python), (Some(12), 0, false));
        assert!(framing(&none, Some(&[0xfe, 0, 0, 0, 1]), b"x").python); // a key/value id
        assert!(!framing(&none, Some(&[]), &[0, 0, 0, 0, 1]).python); // empty: no id there
        p.insert(SCHEMA_ID_PROPERTY, "ff000000000c");
        assert!(!framing(&p, Some(&field32), b"x").python);
        p.insert(SCHEMA_ID_PROPERTY, "ff000000000b");
        assert!(framing(&p, Some(&field32), b"x").python); // they disagree
    }
}
