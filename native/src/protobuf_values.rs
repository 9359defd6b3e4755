//! Protobuf bodies into the `value` column: the wire bytes read straight into Arrow builders
//! (no message object per body), in the column's type as the Python path's converter puts a
//! parsed message (`reading/types.py`, `protobuf_type`, Spark's `from_protobuf` conventions):
//! a field with presence that is not set is null (a message, a proto3 `optional`, a oneof's
//! members that were not chosen, a proto2 field), one without it its default; an enum its
//! value's name (a number an open enum does not name: the number's digits);
//! `google.protobuf.Timestamp` a UTC timestamp in microseconds (the nanoseconds cut toward
//! zero); a map its entries ordered by key, the last of a key kept; unknown fields skipped.
//!
//! The message is the one the Python side names, in the descriptor set it gives (the reader's
//! `.proto` file and those it imports, as the Python path's `DescriptorPool` holds them): both
//! paths read with one descriptor.
//!
//! Only what is sure is answered here; the rest goes to the Python path, which decides and words
//! it: a body that does not parse (a varint past 10 bytes, a length past the end, a wire type its
//! field does not take, a group), a singular field twice or two members of a oneof (protobuf
//! merges or clears), a string that is not UTF-8, a 64-bit unsigned value past `i64::MAX`, a
//! number a closed (proto2) enum does not name, a timestamp outside the years 1 to 9999, nesting
//! past the depth read here. A body is read once, its values appended as they come (each field's
//! column its own builder, so the wire's order does not matter; a map's entries kept to the
//! message's end, to be written by key); a body found not sure part-way is taken back, every
//! column cut to the rows before it.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, BooleanBufferBuilder, Float32Array, Float64Array, Int32Array,
    Int64Array, ListArray, MapArray, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{ArrowNativeType, DataType, TimeUnit};
use arrow::error::ArrowError;

use crate::protobuf_schema::{integer, MessagePlan, Scalar, Schema, Shape, FIRST_SECOND, LAST_SECOND};

/// Nesting read here: well within protobuf's default recursion limit (100), which decides deeper.
const MAX_DEPTH: usize = 64;

/// A map entry of the message being read, kept until the message's end (its map is written in
/// key order): its field, its key, where its value lies in the message's bytes.
#[derive(Clone, Copy)]
struct Entry {
    field: u32,
    key: KeyAt,
    value: Option<Field>,
}

/// A map key: an integer (bools as 0 and 1) or the span of a UTF-8 string.
#[derive(Clone, Copy)]
enum KeyAt {
    Int(i64),
    Str(u32, u32),
}

/// A field's value on the wire: the span of its bytes, a number's value.
#[derive(Clone, Copy)]
struct Field {
    start: u32,
    end: u32,
    number: u64,
}

impl Field {
    fn bytes<'a>(&self, message: &'a [u8]) -> &'a [u8] {
        message.get(self.start as usize..self.end as usize).unwrap_or_default()
    }
}

/// The decoder of one message type's bodies into rows of the `value` column, a batch at a time.
pub struct ProtobufDecoder {
    schema: Schema,
    root: usize,
    /// The message indexes a body of this message starts with (prefix framing) or its schema id
    /// ends with (metadata framing), as Confluent writes them.
    pub indexes: Vec<u8>,
    pub longest: usize,
    /// None once its rows could not be given as a column: its next rows are the Python path's.
    column: Option<StructCol>,
    rows: usize,
    /// Map entries by depth, kept from body to body.
    entries: Vec<Vec<Entry>>,
}

impl ProtobufDecoder {
    /// The decoder of message `message` of `descriptor_set` (a `FileDescriptorSet`, base64) into
    /// `target`; None where the set does not parse, has no such message, or the message's column
    /// is not `target` (the Python path reads those rows).
    pub fn new(descriptor_set: &str, message: &str, indexes: &str, longest: usize, target: &DataType) -> Option<Self> {
        let (schema, root) = Schema::new(descriptor_set, message)?;
        let column = StructCol::new(&schema.plans, root, target)?;
        Some(ProtobufDecoder {
            schema,
            root,
            indexes: hex(indexes)?,
            longest,
            column: Some(column),
            rows: 0,
            entries: Vec::new(),
        })
    }

    /// Its next rows go to the Python path.
    pub fn stop(&mut self) {
        self.column = None;
    }

    /// Takes one body (without its message indexes); its index in this decoder's rows of the
    /// batch, or None (the Python path's: what it appended of the body is taken back).
    pub fn decode(&mut self, body: &[u8]) -> Option<usize> {
        let column = self.column.as_mut()?;
        let mut reading = Reading { schema: &self.schema, entries: &mut self.entries };
        if !reading.message(column, self.root, body, 0) {
            column.truncate(self.rows);
            return None;
        }
        column.valid.append(true);
        self.rows += 1;
        Some(self.rows - 1)
    }

    /// The rows taken since the last call, as an array of `target`.
    pub fn finish(&mut self, target: &DataType) -> Result<ArrayRef, String> {
        let column = self.column.as_mut().ok_or("the decoder was stopped")?;
        self.rows = 0;
        column.finish(target).map_err(|e| e.to_string())
    }
}

/// One body being read: the schema, and the map entries' scratch.
struct Reading<'s> {
    schema: &'s Schema,
    entries: &'s mut Vec<Vec<Entry>>,
}

impl Reading<'_> {
    /// Appends message `plan`'s fields, read from `bytes`, to the children of `column` (not its
    /// validity); false where the bytes are not what is sure (see the module): the caller takes
    /// the row back.
    fn message(&mut self, column: &mut StructCol, plan: usize, bytes: &[u8], depth: usize) -> bool {
        if depth > MAX_DEPTH || bytes.len() > u32::MAX as usize {
            return false;
        }
        if let Some(kept) = self.entries.get_mut(depth) {
            kept.clear(); // a message before that was not sure may have left some
        }
        let schema = self.schema;
        let fields = &schema.plans[plan].fields;
        let mut seen: u128 = 0;
        let mut oneofs: u64 = 0;
        let mut maps = false;
        let mut pos = 0;
        while pos < bytes.len() {
            let Some((key, after_key)) = varint(bytes, pos) else { return false };
            let (number, wire) = (key >> 3, (key & 7) as u8);
            if number == 0 || number > u64::from(u32::MAX >> 3) {
                return false;
            }
            let Some((start, end, value)) = value_span(bytes, after_key, wire) else { return false };
            let Some(i) = schema.plans[plan].find(number as u32) else {
                pos = if wire == 3 {
                    match skip_group(bytes, end, number) {
                        Some(after) => after,
                        None => return false,
                    }
                } else {
                    end
                };
                continue; // an unknown field: skipped, as protobuf keeps it aside
            };
            pos = end;
            let field = &fields[i];
            let at = Field { start: start as u32, end: end as u32, number: value };
            let ok = match (field.shape, &mut column.children[i]) {
                (Shape::Single, child) => {
                    if wire != field.scalar.wire() || seen & (1 << i) != 0 {
                        return false; // another wire type: protobuf keeps it unknown; twice: merged
                    }
                    if let Some(oneof) = field.oneof {
                        if oneofs & (1 << oneof) != 0 {
                            return false; // two members: protobuf keeps the last
                        }
                        oneofs |= 1 << oneof;
                    }
                    seen |= 1 << i;
                    self.value(child, field.scalar, at, bytes, depth)
                }
                (Shape::List, Col::List(list)) if wire == field.scalar.wire() => {
                    self.value(&mut list.values, field.scalar, at, bytes, depth)
                }
                (Shape::List, Col::List(list)) if wire == 2 => {
                    let scalar = field.scalar;
                    packed(scalar, at.bytes(bytes), |n| {
                        let one = Field { start: 0, end: 0, number: n };
                        self.value(&mut list.values, scalar, one, &[], depth)
                    })
                }
                (Shape::Map(entry), Col::Map(_)) if wire == 2 => {
                    maps = true;
                    self.entry(i, entry, at, bytes, depth)
                }
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        let mut entries = if maps { std::mem::take(&mut self.entries[depth]) } else { Vec::new() };
        let mut ok = true;
        for (i, (field, child)) in fields.iter().zip(column.children.iter_mut()).enumerate() {
            match (field.shape, child) {
                (Shape::Single, child) if seen & (1 << i) == 0 => {
                    if field.presence {
                        child.append_null();
                    } else {
                        ok = ok && self.default(child, field.scalar, depth);
                    }
                }
                (Shape::List, Col::List(list)) => list.close(),
                (Shape::Map(entry), Col::Map(map)) => {
                    ok = ok && self.map(map, entry, &entries, i as u32, bytes, depth);
                    map.close();
                }
                _ => {}
            }
        }
        if maps {
            entries.clear();
            self.entries[depth] = entries;
        }
        ok
    }

    /// Keeps a map entry of field `field` (an entry message of plan `plan`) for its message's
    /// end; false where the entry does not parse, or its key is not sure.
    fn entry(&mut self, field: usize, plan: usize, at: Field, message: &[u8], depth: usize) -> bool {
        let bytes = at.bytes(message);
        let entry = &self.schema.plans[plan];
        let (key_scalar, value_scalar) = (entry.fields[0].scalar, entry.fields[1].scalar);
        let mut key = match key_scalar {
            Scalar::Str => KeyAt::Str(at.start, at.start),
            _ => KeyAt::Int(0),
        };
        let (mut value, mut seen) = (None, 0u8);
        let mut pos = 0;
        while pos < bytes.len() {
            let Some((tag, after)) = varint(bytes, pos) else { return false };
            let (number, wire) = (tag >> 3, (tag & 7) as u8);
            let Some((start, end, n)) = value_span(bytes, after, wire) else { return false };
            if wire == 3 {
                return false; // a group in an entry: the Python path's
            }
            pos = end;
            let (base, inner) = (at.start, Field { start: start as u32, end: end as u32, number: n });
            match number {
                1 if wire == key_scalar.wire() && seen & 1 == 0 => {
                    seen |= 1;
                    key = match key_scalar {
                        Scalar::Str => match std::str::from_utf8(inner.bytes(bytes)) {
                            Ok(_) => KeyAt::Str(base + inner.start, base + inner.end),
                            Err(_) => return false,
                        },
                        Scalar::Uint64 | Scalar::Fixed64 if i64::try_from(n).is_err() => return false,
                        _ => KeyAt::Int(integer(key_scalar, n)),
                    };
                }
                2 if wire == value_scalar.wire() && seen & 2 == 0 => {
                    seen |= 2;
                    value = Some(Field { start: base + inner.start, end: base + inner.end, number: n });
                }
                1 | 2 => return false,
                _ => {}
            }
        }
        if self.entries.len() <= depth {
            self.entries.resize_with(depth + 1, Vec::new);
        }
        self.entries[depth].push(Entry { field: field as u32, key, value });
        true
    }

    /// Writes field `field`'s kept entries into `map`, by key (the last of a key kept).
    fn map(&mut self, map: &mut MapCol, plan: usize, entries: &[Entry], field: u32, message: &[u8], depth: usize) -> bool {
        let value_scalar = self.schema.plans[plan].fields[1].scalar;
        let key_of = |entry: &Entry| match entry.key {
            KeyAt::Int(n) => (n, &[][..]),
            KeyAt::Str(start, end) => (0, message.get(start as usize..end as usize).unwrap_or_default()),
        };
        let mut mine: Vec<Entry> = entries.iter().filter(|e| e.field == field).copied().collect();
        mine.sort_by(|a, b| key_of(a).cmp(&key_of(b))); // stable: the last of a key stays last
        for (j, entry) in mine.iter().enumerate() {
            if mine.get(j + 1).is_some_and(|next| key_of(next) == key_of(entry)) {
                continue;
            }
            match entry.key {
                KeyAt::Int(n) => map.keys.append_integer(n),
                KeyAt::Str(start, end) => {
                    if !map.keys.append_bytes(message.get(start as usize..end as usize).unwrap_or_default()) {
                        return false;
                    }
                }
            }
            let ok = match entry.value {
                Some(value) => self.value(&mut map.values, value_scalar, value, message, depth + 1),
                None => self.default(&mut map.values, value_scalar, depth + 1),
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// Appends one value of `scalar` (at `at` in `message`) to `column`; false where it is not sure.
    fn value(&mut self, column: &mut Col, scalar: Scalar, at: Field, message: &[u8], depth: usize) -> bool {
        let n = at.number;
        match (column, scalar) {
            (Col::Struct(child), Scalar::Message(m)) => {
                if !self.message(child, m, at.bytes(message), depth + 1) {
                    return false;
                }
                child.valid.append(true);
            }
            (Col::Int64(values), Scalar::Timestamp(_)) => match timestamp(at.bytes(message)) {
                Some(micros) => values.push(micros),
                None => return false,
            },
            (Col::Bytes(values), Scalar::Str) => {
                let text = at.bytes(message);
                if std::str::from_utf8(text).is_err() {
                    return false;
                }
                return values.push(text);
            }
            (Col::Bytes(values), Scalar::Bytes) => return values.push(at.bytes(message)),
            (Col::Bytes(values), Scalar::Enum(e)) => {
                let plan = &self.schema.enums[e];
                let number = n as i32;
                return match plan.name(number) {
                    Some(name) => values.push(name.as_bytes()),
                    None if plan.open => values.push(number.to_string().as_bytes()),
                    None => false, // a closed enum keeps an unknown number aside
                };
            }
            (Col::Bool(values), _) => values.push(n != 0),
            (Col::Int32(values), _) => values.push(integer(scalar, n) as i32),
            (Col::Int64(values), Scalar::Uint64 | Scalar::Fixed64) => match i64::try_from(n) {
                Ok(v) => values.push(v),
                Err(_) => return false,
            },
            (Col::Int64(values), _) => values.push(integer(scalar, n)),
            (Col::Float32(values), _) => values.push(f32::from_bits(n as u32)),
            (Col::Float64(values), _) => values.push(f64::from_bits(n)),
            _ => return false, // not reached: the plan and the column agree
        }
        true
    }

    /// A field without presence that is not set: its type's default (a message value of a map
    /// entry: the empty message); false where it cannot be appended.
    fn default(&mut self, column: &mut Col, scalar: Scalar, depth: usize) -> bool {
        match (column, scalar) {
            (Col::Struct(child), Scalar::Message(m)) => {
                if !self.message(child, m, &[], depth + 1) {
                    return false;
                }
                child.valid.append(true);
            }
            (Col::Bytes(values), Scalar::Enum(e)) => {
                return values.push(self.schema.enums[e].name(0).unwrap_or("0").as_bytes());
            }
            (Col::Bytes(values), _) => return values.push(b""),
            (Col::Bool(values), _) => values.push(false),
            (Col::Int32(values), _) => values.push(0),
            (Col::Int64(values), _) => values.push(0),
            (Col::Float32(values), _) => values.push(0.0),
            (Col::Float64(values), _) => values.push(0.0),
            (column, _) => column.append_null(),
        }
        true
    }
}

/// A `google.protobuf.Timestamp`'s microseconds (its nanoseconds cut toward zero), where the
/// message parses and Python's datetime holds it.
fn timestamp(bytes: &[u8]) -> Option<i64> {
    let (mut seconds, mut nanos, mut seen) = (0i64, 0i64, 0u8);
    let mut pos = 0;
    while pos < bytes.len() {
        let (tag, after) = varint(bytes, pos)?;
        let (number, wire) = (tag >> 3, (tag & 7) as u8);
        let (_, end, n) = value_span(bytes, after, wire)?;
        pos = if wire == 3 { skip_group(bytes, end, number)? } else { end };
        match (number, wire) {
            (1, 0) if seen & 1 == 0 => {
                seen |= 1;
                seconds = n as i64;
            }
            (2, 0) if seen & 2 == 0 => {
                seen |= 2;
                nanos = i64::from(n as i32);
            }
            (1 | 2, _) => return None,
            _ if number == 0 => return None,
            _ => {}
        }
    }
    if !(FIRST_SECOND..=LAST_SECOND).contains(&seconds) || !(0..1_000_000_000).contains(&nanos) {
        return None;
    }
    Some(seconds * 1_000_000 + nanos / 1000)
}

/// A varint at `pos`: its value and the position after it. None past 10 bytes, a 10th byte
/// above 1, or the end of the bytes.
#[inline]
fn varint(bytes: &[u8], pos: usize) -> Option<(u64, usize)> {
    let first = *bytes.get(pos)?;
    if first < 0x80 {
        return Some((u64::from(first), pos + 1)); // the usual key, and small numbers
    }
    let mut value = 0u64;
    for i in 0..10 {
        let byte = *bytes.get(pos + i)?;
        if i == 9 && byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, pos + i + 1));
        }
    }
    None
}

/// Where the value of wire type `wire` that starts at `pos` lies (a group: its start, twice),
/// and a number's value.
#[inline]
fn value_span(bytes: &[u8], pos: usize, wire: u8) -> Option<(usize, usize, u64)> {
    match wire {
        0 => varint(bytes, pos).map(|(n, end)| (pos, end, n)),
        1 => {
            let fixed: [u8; 8] = bytes.get(pos..pos + 8)?.try_into().ok()?;
            Some((pos, pos + 8, u64::from_le_bytes(fixed)))
        }
        5 => {
            let fixed: [u8; 4] = bytes.get(pos..pos + 4)?.try_into().ok()?;
            Some((pos, pos + 4, u64::from(u32::from_le_bytes(fixed))))
        }
        2 => {
            let (length, start) = varint(bytes, pos)?;
            let length = usize::try_from(length).ok()?;
            (length <= bytes.len() - start).then_some((start, start + length, 0))
        }
        3 => Some((pos, pos, 0)),
        _ => None,
    }
}

/// The position after the group of field `number` whose fields start at `pos`.
fn skip_group(bytes: &[u8], mut pos: usize, number: u64) -> Option<usize> {
    let mut open = vec![number];
    while let Some(&inner) = open.last() {
        let (key, after) = varint(bytes, pos)?;
        let (n, wire) = (key >> 3, (key & 7) as u8);
        if wire == 4 {
            if n != inner {
                return None;
            }
            open.pop();
            pos = after;
            continue;
        }
        if wire == 3 {
            if open.len() >= MAX_DEPTH {
                return None;
            }
            open.push(n);
            pos = after;
            continue;
        }
        pos = value_span(bytes, after, wire)?.1;
    }
    Some(pos)
}

/// Calls `each` with the values of a packed repeated scalar field, in order, while it answers
/// true; false where they do not parse or `each` answered false.
fn packed(scalar: Scalar, bytes: &[u8], mut each: impl FnMut(u64) -> bool) -> bool {
    match scalar.wire() {
        0 => {
            let mut pos = 0;
            while pos < bytes.len() {
                let Some((n, next)) = varint(bytes, pos) else { return false };
                if !each(n) {
                    return false;
                }
                pos = next;
            }
            true
        }
        1 if bytes.len() % 8 == 0 => {
            bytes.chunks_exact(8).all(|c| each(u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))))
        }
        5 if bytes.len() % 4 == 0 => {
            bytes.chunks_exact(4).all(|c| each(u64::from(u32::from_le_bytes(c.try_into().unwrap_or([0; 4])))))
        }
        _ => false,
    }
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.is_ascii() {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

/// A column's values and validity, as the body is read (taken back to a row count when a body
/// is not sure).
struct Prim<T> {
    values: Vec<T>,
    valid: BooleanBufferBuilder,
}

impl<T: ArrowNativeType> Prim<T> {
    fn new() -> Self {
        Prim { values: Vec::new(), valid: BooleanBufferBuilder::new(0) }
    }

    fn push(&mut self, value: T) {
        self.values.push(value);
        self.valid.append(true);
    }

    fn null(&mut self) {
        self.values.push(T::default());
        self.valid.append(false);
    }

    fn truncate(&mut self, rows: usize) {
        self.values.truncate(rows);
        self.valid.truncate(rows);
    }

    fn take(&mut self) -> (ScalarBuffer<T>, Option<NullBuffer>) {
        (ScalarBuffer::from(std::mem::take(&mut self.values)), nulls(&mut self.valid))
    }
}

struct Bools {
    values: BooleanBufferBuilder,
    valid: BooleanBufferBuilder,
}

impl Bools {
    fn push(&mut self, value: bool) {
        self.values.append(value);
        self.valid.append(true);
    }
}

/// Strings or binaries: offsets into one buffer.
struct BytesCol {
    offsets: Vec<i32>,
    data: Vec<u8>,
    valid: BooleanBufferBuilder,
}

impl BytesCol {
    fn new() -> Self {
        BytesCol { offsets: vec![0], data: Vec::new(), valid: BooleanBufferBuilder::new(0) }
    }

    /// False where the column's buffer would pass 2 GiB (an i32 offset).
    fn push(&mut self, bytes: &[u8]) -> bool {
        let Ok(end) = i32::try_from(self.data.len() + bytes.len()) else { return false };
        self.data.extend_from_slice(bytes);
        self.offsets.push(end);
        self.valid.append(true);
        true
    }

    fn null(&mut self) {
        self.offsets.push(self.data.len() as i32);
        self.valid.append(false);
    }

    fn truncate(&mut self, rows: usize) {
        self.offsets.truncate(rows + 1);
        self.data.truncate(self.offsets[rows] as usize);
        self.valid.truncate(rows);
    }
}

/// A struct column's fields and validity.
struct StructCol {
    children: Vec<Col>,
    valid: BooleanBufferBuilder,
}

/// A list column: each row's end in `values`.
struct ListCol {
    offsets: Vec<i32>,
    values: Col,
}

impl ListCol {
    fn close(&mut self) {
        self.offsets.push(self.values.len() as i32);
    }
}

/// A map column: each row's end in `keys` and `values`.
struct MapCol {
    offsets: Vec<i32>,
    keys: Col,
    values: Col,
}

impl MapCol {
    fn close(&mut self) {
        self.offsets.push(self.keys.len() as i32);
    }
}

enum Col {
    Bool(Bools),
    Int32(Prim<i32>),
    /// Also a timestamp's microseconds.
    Int64(Prim<i64>),
    Float32(Prim<f32>),
    Float64(Prim<f64>),
    /// Strings (enums' names too) and binaries.
    Bytes(BytesCol),
    Struct(Box<StructCol>),
    List(Box<ListCol>),
    Map(Box<MapCol>),
}

fn nulls(valid: &mut BooleanBufferBuilder) -> Option<NullBuffer> {
    Some(NullBuffer::new(valid.finish())).filter(|n| n.null_count() > 0)
}

impl StructCol {
    /// The builders of message `plan`'s column, where `target` is the struct the Python path
    /// types it as (`protobuf_type`); None where it is not.
    fn new(plans: &[MessagePlan], plan: usize, target: &DataType) -> Option<Self> {
        let DataType::Struct(fields) = target else { return None };
        let plan_fields = &plans[plan].fields;
        if fields.len() != plan_fields.len() || !fields.iter().all(|f| f.is_nullable()) {
            return None;
        }
        let children = plan_fields
            .iter()
            .zip(fields.iter())
            .map(|(field, target)| match field.shape {
                Shape::Single => Col::new(plans, field.scalar, target.data_type()),
                Shape::List => match target.data_type() {
                    DataType::List(item) if !item.is_nullable() => Some(Col::List(Box::new(ListCol {
                        offsets: vec![0],
                        values: Col::new(plans, field.scalar, item.data_type())?,
                    }))),
                    _ => None,
                },
                Shape::Map(entry) => match target.data_type() {
                    DataType::Map(entries, false) => match entries.data_type() {
                        DataType::Struct(kv) if kv.len() == 2 && !kv[0].is_nullable() && kv[1].is_nullable() => {
                            let (key, value) = (&plans[entry].fields[0], &plans[entry].fields[1]);
                            if !matches!(key.scalar, Scalar::Str) && !integral(key.scalar) {
                                return None;
                            }
                            Some(Col::Map(Box::new(MapCol {
                                offsets: vec![0],
                                keys: Col::new(plans, key.scalar, kv[0].data_type())?,
                                values: Col::new(plans, value.scalar, kv[1].data_type())?,
                            })))
                        }
                        _ => None,
                    },
                    _ => None,
                },
            })
            .collect::<Option<Vec<_>>>()?;
        Some(StructCol { children, valid: BooleanBufferBuilder::new(0) })
    }

    fn append_null(&mut self) {
        for child in &mut self.children {
            child.append_null();
        }
        self.valid.append(false);
    }

    /// Back to `rows` rows (a body that was not sure, taken back).
    fn truncate(&mut self, rows: usize) {
        for child in &mut self.children {
            child.truncate(rows);
        }
        self.valid.truncate(rows);
    }

    fn finish(&mut self, target: &DataType) -> Result<ArrayRef, ArrowError> {
        let DataType::Struct(fields) = target else { return Err(mismatch(target)) };
        let rows = self.valid.len();
        let arrays = self
            .children
            .iter_mut()
            .zip(fields.iter())
            .map(|(child, field)| child.finish(field.data_type()))
            .collect::<Result<Vec<_>, _>>()?;
        let nulls = nulls(&mut self.valid);
        if arrays.is_empty() {
            return Ok(Arc::new(StructArray::new_empty_fields(rows, nulls)));
        }
        Ok(Arc::new(StructArray::try_new(fields.clone(), arrays, nulls)?))
    }
}

fn integral(scalar: Scalar) -> bool {
    !matches!(
        scalar,
        Scalar::Float | Scalar::Double | Scalar::Str | Scalar::Bytes | Scalar::Enum(_) | Scalar::Message(_) | Scalar::Timestamp(_)
    )
}

fn mismatch(target: &DataType) -> ArrowError {
    ArrowError::SchemaError(format!("a Protobuf column cannot be {target}"))
}

impl Col {
    fn new(plans: &[MessagePlan], scalar: Scalar, target: &DataType) -> Option<Self> {
        Some(match (scalar, target) {
            (Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32, DataType::Int32) => Col::Int32(Prim::new()),
            (
                Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64 | Scalar::Uint32 | Scalar::Fixed32 | Scalar::Uint64 | Scalar::Fixed64,
                DataType::Int64,
            ) => Col::Int64(Prim::new()),
            (Scalar::Float, DataType::Float32) => Col::Float32(Prim::new()),
            (Scalar::Double, DataType::Float64) => Col::Float64(Prim::new()),
            (Scalar::Bool, DataType::Boolean) => {
                Col::Bool(Bools { values: BooleanBufferBuilder::new(0), valid: BooleanBufferBuilder::new(0) })
            }
            (Scalar::Str | Scalar::Enum(_), DataType::Utf8) | (Scalar::Bytes, DataType::Binary) => Col::Bytes(BytesCol::new()),
            (Scalar::Timestamp(_), DataType::Timestamp(TimeUnit::Microsecond, Some(zone))) if zone.as_ref() == "UTC" => {
                Col::Int64(Prim::new())
            }
            (Scalar::Message(m), DataType::Struct(_)) => Col::Struct(Box::new(StructCol::new(plans, m, target)?)),
            _ => return None,
        })
    }

    fn len(&self) -> usize {
        match self {
            Col::Bool(b) => b.valid.len(),
            Col::Int32(p) => p.values.len(),
            Col::Int64(p) => p.values.len(),
            Col::Float32(p) => p.values.len(),
            Col::Float64(p) => p.values.len(),
            Col::Bytes(b) => b.offsets.len() - 1,
            Col::Struct(s) => s.valid.len(),
            Col::List(l) => l.offsets.len() - 1,
            Col::Map(m) => m.offsets.len() - 1,
        }
    }

    fn append_null(&mut self) {
        match self {
            Col::Bool(b) => {
                b.values.append(false);
                b.valid.append(false);
            }
            Col::Int32(p) => p.null(),
            Col::Int64(p) => p.null(),
            Col::Float32(p) => p.null(),
            Col::Float64(p) => p.null(),
            Col::Bytes(b) => b.null(),
            Col::Struct(s) => s.append_null(),
            Col::List(l) => l.close(),
            Col::Map(m) => m.close(),
        }
    }

    /// A map key: an integer (a bool's 0 or 1).
    fn append_integer(&mut self, n: i64) {
        match self {
            Col::Bool(b) => b.push(n != 0),
            Col::Int32(p) => p.push(n as i32),
            Col::Int64(p) => p.push(n),
            _ => self.append_null(), // not reached: the key's column is of its scalar
        }
    }

    /// A map key: a string (checked); false where it cannot be appended.
    fn append_bytes(&mut self, bytes: &[u8]) -> bool {
        match self {
            Col::Bytes(b) => b.push(bytes),
            _ => false,
        }
    }

    fn truncate(&mut self, rows: usize) {
        match self {
            Col::Bool(b) => {
                b.values.truncate(rows);
                b.valid.truncate(rows);
            }
            Col::Int32(p) => p.truncate(rows),
            Col::Int64(p) => p.truncate(rows),
            Col::Float32(p) => p.truncate(rows),
            Col::Float64(p) => p.truncate(rows),
            Col::Bytes(b) => b.truncate(rows),
            Col::Struct(s) => s.truncate(rows),
            Col::List(l) => {
                l.offsets.truncate(rows + 1);
                l.values.truncate(l.offsets[rows] as usize);
            }
            Col::Map(m) => {
                m.offsets.truncate(rows + 1);
                let entries = m.offsets[rows] as usize;
                m.keys.truncate(entries);
                m.values.truncate(entries);
            }
        }
    }

    fn finish(&mut self, target: &DataType) -> Result<ArrayRef, ArrowError> {
        Ok(match self {
            Col::Bool(b) => Arc::new(BooleanArray::new(b.values.finish(), nulls(&mut b.valid))),
            Col::Int32(p) => {
                let (values, nulls) = p.take();
                Arc::new(Int32Array::new(values, nulls))
            }
            Col::Int64(p) => {
                let (values, nulls) = p.take();
                match target {
                    DataType::Timestamp(TimeUnit::Microsecond, Some(zone)) => {
                        Arc::new(TimestampMicrosecondArray::new(values, nulls).with_timezone(zone.clone()))
                    }
                    _ => Arc::new(Int64Array::new(values, nulls)),
                }
            }
            Col::Float32(p) => {
                let (values, nulls) = p.take();
                Arc::new(Float32Array::new(values, nulls))
            }
            Col::Float64(p) => {
                let (values, nulls) = p.take();
                Arc::new(Float64Array::new(values, nulls))
            }
            Col::Bytes(b) => {
                let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(&mut b.offsets, vec![0])));
                let data = Buffer::from_vec(std::mem::take(&mut b.data));
                let nulls = nulls(&mut b.valid);
                match target {
                    DataType::Utf8 => Arc::new(StringArray::try_new(offsets, data, nulls)?),
                    _ => Arc::new(BinaryArray::try_new(offsets, data, nulls)?),
                }
            }
            Col::Struct(s) => s.finish(target)?,
            Col::List(l) => {
                let DataType::List(item) = target else { return Err(mismatch(target)) };
                let values = l.values.finish(item.data_type())?;
                let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(&mut l.offsets, vec![0])));
                Arc::new(ListArray::try_new(item.clone(), offsets, values, None)?)
            }
            Col::Map(m) => {
                let DataType::Map(entries, ordered) = target else { return Err(mismatch(target)) };
                let DataType::Struct(kv) = entries.data_type() else { return Err(mismatch(target)) };
                let keys = m.keys.finish(kv[0].data_type())?;
                let values = m.values.finish(kv[1].data_type())?;
                let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(&mut m.offsets, vec![0])));
                let pairs = StructArray::try_new(kv.clone(), vec![keys, values], None)?;
                Arc::new(MapArray::try_new(entries.clone(), offsets, pairs, None, *ordered)?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_past_ten_bytes_or_with_a_tenth_byte_above_one_are_refused() {
        assert_eq!(varint(&[0x96, 0x01], 0), Some((150, 2)));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint(&max, 0), Some((u64::MAX, 10)));
        assert_eq!(varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], 0), None);
        assert_eq!(varint(&[0x80; 11], 0), None);
        assert_eq!(varint(&[0x80], 0), None); // cut short
    }

    #[test]
    fn groups_are_skipped_to_their_own_end() {
        // field 1 group { field 2 varint 5; field 3 group {} } then field 4
        let bytes = [0x0b, 0x10, 0x05, 0x1b, 0x1c, 0x0c, 0x20, 0x01];
        assert_eq!(skip_group(&bytes, 1, 1), Some(6));
        assert_eq!(skip_group(&[0x0b, 0x14], 1, 1), None); // ended by another field's end
        assert_eq!(skip_group(&[0x0b, 0x10], 1, 1), None); // never ended
    }

    #[test]
    fn packed_values_of_each_width() {
        let mut seen = Vec::new();
        assert!(packed(Scalar::Int64, &[0x01, 0x96, 0x01], |n| {
            seen.push(n);
            true
        }));
        assert_eq!(seen, [1, 150]);
        assert!(!packed(Scalar::Fixed32, &[1, 0, 0], |_| true)); // not a whole number of values
        assert!(!packed(Scalar::Int32, &[0x80], |_| true));
        assert_eq!(integer(Scalar::Sint32, 3), -2);
        assert_eq!(integer(Scalar::Int32, u64::MAX), -1);
        assert_eq!(integer(Scalar::Uint32, u64::MAX), i64::from(u32::MAX));
    }
}
