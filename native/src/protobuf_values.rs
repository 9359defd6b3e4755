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
//! past protobuf's default recursion limit. A body is read twice: checked, then appended, so the
//! builders never hold half a row.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBufferBuilder, BooleanBuilder, Float32Builder, Float64Builder,
    Int32Builder, Int64Builder, ListArray, MapArray, StringBuilder, StructArray,
    TimestampMicrosecondBuilder,
};
use arrow::array::ArrayBuilder;
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, TimeUnit};
use base64::Engine;
use prost_reflect::{DescriptorPool, EnumDescriptor, Kind, MessageDescriptor, Syntax};

/// Nesting read here: well within protobuf's default recursion limit (100), which decides deeper.
const MAX_DEPTH: usize = 64;
const TIMESTAMP: &str = "google.protobuf.Timestamp";
/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in seconds since the epoch: the datetimes
/// Python holds.
const FIRST_SECOND: i64 = -62_135_596_800;
const LAST_SECOND: i64 = 253_402_300_799;

/// What a field's values are, and how the wire carries them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scalar {
    Int32,
    Sint32,
    Sfixed32,
    Uint32,
    Fixed32,
    Int64,
    Sint64,
    Sfixed64,
    Uint64,
    Fixed64,
    Float,
    Double,
    Bool,
    Str,
    Bytes,
    Enum(usize),
    Message(usize),
    Timestamp(usize),
}

impl Scalar {
    /// The wire type of one value.
    fn wire(self) -> u8 {
        match self {
            Scalar::Int32
            | Scalar::Sint32
            | Scalar::Uint32
            | Scalar::Int64
            | Scalar::Sint64
            | Scalar::Uint64
            | Scalar::Bool
            | Scalar::Enum(_) => 0,
            Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => 1,
            Scalar::Str | Scalar::Bytes | Scalar::Message(_) | Scalar::Timestamp(_) => 2,
            Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => 5,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    Single,
    List,
    /// A map: its entries are messages of plan `entry` (key: field 1, value: field 2).
    Map(usize),
}

#[derive(Debug)]
struct FieldPlan {
    scalar: Scalar,
    shape: Shape,
    presence: bool,
    /// The index of its oneof in the message (a proto3 `optional`'s own included).
    oneof: Option<usize>,
}

#[derive(Debug)]
struct MessagePlan {
    /// In declaration order, the order of the struct's fields.
    fields: Vec<FieldPlan>,
    /// Field number -> index in `fields`.
    numbers: HashMap<u32, usize>,
    /// For numbers below 64, the same (index + 1; 0: none): the usual lookup.
    small: [u8; 64],
}

impl MessagePlan {
    fn new() -> Self {
        MessagePlan { fields: Vec::new(), numbers: HashMap::new(), small: [0; 64] }
    }

    fn find(&self, number: u32) -> Option<usize> {
        if number < 64 {
            return match self.small[number as usize] {
                0 => None,
                i => Some(i as usize - 1),
            };
        }
        self.numbers.get(&number).copied()
    }
}

struct EnumPlan {
    /// (number, name), by number.
    names: Vec<(i32, String)>,
    /// A proto3 enum keeps a number it does not name; a proto2 one does not.
    open: bool,
}

impl EnumPlan {
    fn name(&self, number: i32) -> Option<&str> {
        self.names.binary_search_by_key(&number, |(n, _)| *n).ok().map(|i| self.names[i].1.as_str())
    }
}

/// A field occurrence in a message's bytes: its field's index, wire type and value bytes (a
/// varint's bytes, a fixed value's, a length-delimited payload), and a number's value.
#[derive(Clone, Copy)]
struct Occ {
    field: u32,
    wire: u8,
    start: u32,
    end: u32,
    number: u64,
}

impl Occ {
    fn value<'a>(&self, bytes: &'a [u8]) -> Value<'a> {
        match self.wire {
            2 => Value::Bytes(bytes.get(self.start as usize..self.end as usize).unwrap_or_default()),
            _ => Value::Number(self.number),
        }
    }
}

/// The decoder of one message type's bodies into rows of the `value` column, a batch at a time.
pub struct ProtobufDecoder {
    plans: Vec<MessagePlan>,
    enums: Vec<EnumPlan>,
    root: usize,
    /// The message indexes a body of this message starts with (prefix framing) or its schema id
    /// ends with (metadata framing), as Confluent writes them.
    pub indexes: Vec<u8>,
    pub longest: usize,
    /// None once its rows could not be given as a column: its next rows are the Python path's.
    column: Option<StructCol>,
    rows: usize,
    /// Occurrences by depth, kept from body to body.
    scratch: Vec<Vec<Occ>>,
    /// The body's messages' occurrences as the check found them, in the order the append takes
    /// them (a message, then the messages of its fields, in field order), and their counts; not
    /// those of map entries and timestamps, which the append finds again.
    tape: Vec<Occ>,
    counts: Vec<u32>,
    /// Where the append is on the tape.
    taken: (usize, usize),
}

impl ProtobufDecoder {
    /// The decoder of message `message` of `descriptor_set` (a `FileDescriptorSet`, base64) into
    /// `target`; None where the set does not parse, has no such message, or the message's column
    /// is not `target` (the Python path reads those rows).
    pub fn new(descriptor_set: &str, message: &str, indexes: &str, longest: usize, target: &DataType) -> Option<Self> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(descriptor_set).ok()?;
        let pool = DescriptorPool::decode(bytes.as_slice()).ok()?;
        let descriptor = pool.get_message_by_name(message)?;
        let mut planner = Planner::default();
        let root = planner.message(&descriptor)?;
        let column = StructCol::new(&planner.plans, root, target)?;
        Some(ProtobufDecoder {
            plans: planner.plans,
            enums: planner.enums,
            root,
            indexes: hex(indexes)?,
            longest,
            column: Some(column),
            rows: 0,
            scratch: Vec::new(),
            tape: Vec::new(),
            counts: Vec::new(),
            taken: (0, 0),
        })
    }

    /// Its next rows go to the Python path.
    pub fn stop(&mut self) {
        self.column = None;
    }

    /// Takes one body (without its message indexes); its index in this decoder's rows of the
    /// batch, or None (the Python path's).
    pub fn decode(&mut self, body: &[u8]) -> Option<usize> {
        self.column.as_ref()?;
        self.tape.clear();
        self.counts.clear();
        if !self.check(self.root, body, 0, true) {
            return None;
        }
        let mut column = self.column.take()?;
        self.taken = (0, 0);
        self.append(&mut column, self.root, body, 0, true);
        column.valid.append(true);
        self.column = Some(column);
        self.rows += 1;
        Some(self.rows - 1)
    }

    /// The rows taken since the last call, as an array of `target`.
    pub fn finish(&mut self, target: &DataType) -> Result<ArrayRef, String> {
        let column = self.column.as_mut().ok_or("the decoder was stopped")?;
        self.rows = 0;
        let array = column.finish(target).map_err(|e| e.to_string())?;
        Ok(array)
    }

    /// The occurrences of a message's fields (`scratch[depth]`, sorted by field), or false where
    /// the bytes do not parse as the plan's message or hold what is not sure (see the module).
    fn scan(plan: &MessagePlan, bytes: &[u8], occ: &mut Vec<Occ>) -> bool {
        occ.clear();
        let mut pos = 0;
        while pos < bytes.len() {
            let Some((key, after_key)) = varint(bytes, pos) else { return false };
            let (number, wire) = (key >> 3, (key & 7) as u8);
            if number == 0 || number > u64::from(u32::MAX >> 3) {
                return false;
            }
            let Some((start, end, value)) = value_span(bytes, after_key, wire) else { return false };
            let next = if wire == 3 {
                match skip_group(bytes, end, number) {
                    Some(after) => after,
                    None => return false,
                }
            } else {
                end
            };
            if let Some(i) = plan.find(number as u32) {
                let field = &plan.fields[i];
                let fits = match field.shape {
                    Shape::Map(_) => wire == 2,
                    Shape::List => wire == field.scalar.wire() || (wire == 2 && field.scalar.wire() != 2),
                    Shape::Single => wire == field.scalar.wire(),
                };
                if !fits {
                    return false;
                }
                occ.push(Occ { field: i as u32, wire, start: start as u32, end: end as u32, number: value });
            }
            pos = next;
        }
        if !occ.is_sorted_by_key(|o| o.field) {
            occ.sort_by_key(|o| o.field);
        }
        let mut oneofs: u64 = 0;
        for (i, o) in occ.iter().enumerate() {
            let field = &plan.fields[o.field as usize];
            if field.shape != Shape::Single {
                continue;
            }
            if i > 0 && occ[i - 1].field == o.field {
                return false; // a singular field twice: protobuf keeps the last or merges
            }
            if let Some(oneof) = field.oneof {
                if oneof >= 64 || oneofs & (1 << oneof) != 0 {
                    return false;
                }
                oneofs |= 1 << oneof;
            }
        }
        true
    }

    fn occurrences(&mut self, plan: usize, bytes: &[u8], depth: usize) -> Option<Vec<Occ>> {
        if depth > MAX_DEPTH || bytes.len() > u32::MAX as usize {
            return None;
        }
        if self.scratch.len() <= depth {
            self.scratch.resize_with(depth + 1, Vec::new);
        }
        let mut occ = std::mem::take(&mut self.scratch[depth]);
        if Self::scan(&self.plans[plan], bytes, &mut occ) {
            Some(occ)
        } else {
            self.scratch[depth] = occ;
            None
        }
    }

    /// Whether a message's bytes are read here as the Python path reads them; `taped`: its
    /// occurrences (and those of its fields' messages) go on the tape.
    fn check(&mut self, plan: usize, bytes: &[u8], depth: usize, taped: bool) -> bool {
        let Some(occ) = self.occurrences(plan, bytes, depth) else { return false };
        if taped {
            self.counts.push(occ.len() as u32);
            self.tape.extend_from_slice(&occ);
        }
        let ok = occ.iter().all(|o| {
            let field = &self.plans[plan].fields[o.field as usize];
            let (scalar, shape) = (field.scalar, field.shape);
            let value = &bytes[o.start as usize..o.end as usize];
            match shape {
                Shape::Map(entry) => self.check(entry, value, depth + 1, false),
                _ if o.wire != scalar.wire() => {
                    packed(scalar, value, |v| self.check_scalar(scalar, Value::Number(v), depth, false))
                }
                _ => self.check_scalar(scalar, o.value(bytes), depth, taped),
            }
        });
        self.scratch[depth] = occ;
        ok
    }

    fn check_scalar(&mut self, scalar: Scalar, value: Value<'_>, depth: usize, taped: bool) -> bool {
        match (scalar, value) {
            (Scalar::Uint64 | Scalar::Fixed64, Value::Number(n)) => i64::try_from(n).is_ok(),
            (Scalar::Enum(e), Value::Number(n)) => {
                let plan = &self.enums[e];
                plan.open || plan.name(n as i32).is_some()
            }
            (Scalar::Str, Value::Bytes(b)) => std::str::from_utf8(b).is_ok(),
            (Scalar::Message(m), Value::Bytes(b)) => self.check(m, b, depth + 1, taped),
            (Scalar::Timestamp(m), Value::Bytes(b)) => {
                self.check(m, b, depth + 1, false) && self.timestamp(m, b, depth + 1).is_some()
            }
            (Scalar::Bytes, Value::Bytes(_)) => true,
            (_, Value::Number(_)) => true,
            _ => false,
        }
    }

    /// A checked Timestamp's microseconds, where Python's datetime holds it.
    fn timestamp(&mut self, plan: usize, bytes: &[u8], depth: usize) -> Option<i64> {
        let occ = self.occurrences(plan, bytes, depth)?;
        let (mut seconds, mut nanos) = (0i64, 0i64);
        for o in &occ {
            let Value::Number(n) = o.value(bytes) else { continue };
            match self.plans[plan].fields[o.field as usize].scalar {
                Scalar::Int64 => seconds = n as i64,
                Scalar::Int32 => nanos = i64::from(n as i32),
                _ => {}
            }
        }
        self.scratch[depth] = occ;
        if !(FIRST_SECOND..=LAST_SECOND).contains(&seconds) || !(0..1_000_000_000).contains(&nanos) {
            return None;
        }
        Some(seconds * 1_000_000 + nanos / 1000)
    }

    /// Appends a checked message's fields to the children of `column` (not its validity);
    /// `taped`: its occurrences are the tape's next (else they are found again).
    fn append(&mut self, column: &mut StructCol, plan: usize, bytes: &[u8], depth: usize, taped: bool) {
        let occ = if taped {
            let (at, count) = self.taken;
            let n = self.counts.get(count).copied().unwrap_or(0) as usize;
            self.taken = (at + n, count + 1);
            if self.scratch.len() <= depth {
                self.scratch.resize_with(depth + 1, Vec::new);
            }
            let mut occ = std::mem::take(&mut self.scratch[depth]);
            occ.clear();
            occ.extend_from_slice(self.tape.get(at..at + n).unwrap_or_default());
            occ
        } else {
            self.occurrences(plan, bytes, depth).unwrap_or_default()
        };
        let mut next = 0;
        for (i, child) in column.children.iter_mut().enumerate() {
            let first = next;
            while next < occ.len() && occ[next].field as usize == i {
                next += 1;
            }
            let found = &occ[first..next];
            let field = &self.plans[plan].fields[i];
            let (scalar, shape, presence) = (field.scalar, field.shape, field.presence);
            match shape {
                Shape::Single => match found.first() {
                    Some(o) => {
                        let value = o.value(bytes);
                        self.append_scalar(child, scalar, value, depth, taped);
                    }
                    None if presence => child.append_null(),
                    None => self.append_default(child, scalar, depth),
                },
                Shape::List => {
                    let Col::List(list) = child else { continue };
                    for o in found {
                        let value = &bytes[o.start as usize..o.end as usize];
                        if o.wire != scalar.wire() {
                            packed(scalar, value, |n| {
                                self.append_scalar(&mut list.values, scalar, Value::Number(n), depth, false);
                                true
                            });
                        } else {
                            self.append_scalar(&mut list.values, scalar, o.value(bytes), depth, taped);
                        }
                    }
                    list.offsets.push(list.values.len() as i32);
                }
                Shape::Map(entry) => {
                    let Col::Map(map) = child else { continue };
                    let mut entries: Vec<(Key<'_>, Option<Occ>, &[u8])> = Vec::with_capacity(found.len());
                    for o in found {
                        let body = &bytes[o.start as usize..o.end as usize];
                        let (key, value) = self.entry(entry, body, depth + 1);
                        entries.push((key, value, body));
                    }
                    entries.sort_by(|a, b| a.0.cmp(&b.0)); // stable: the last of a key stays last
                    let (key_scalar, value_scalar) =
                        (self.plans[entry].fields[0].scalar, self.plans[entry].fields[1].scalar);
                    for (j, (key, value, body)) in entries.iter().enumerate() {
                        if j + 1 < entries.len() && entries[j + 1].0 == *key {
                            continue;
                        }
                        match key {
                            Key::Int(n) => map.keys.append_key(key_scalar, *n),
                            Key::Str(s) => map.keys.append_str(s),
                        }
                        match value {
                            Some(o) => {
                                let v = o.value(body);
                                self.append_scalar(&mut map.values, value_scalar, v, depth + 1, false);
                            }
                            None => self.append_default(&mut map.values, value_scalar, depth + 1),
                        }
                    }
                    map.offsets.push(map.keys.len() as i32);
                }
            }
        }
        self.scratch[depth] = occ;
    }

    /// A checked map entry's key and its value's occurrence (None: not written).
    fn entry<'b>(&mut self, plan: usize, bytes: &'b [u8], depth: usize) -> (Key<'b>, Option<Occ>) {
        let occ = self.occurrences(plan, bytes, depth).unwrap_or_default();
        let key_scalar = self.plans[plan].fields[0].scalar;
        let mut key = match key_scalar {
            Scalar::Str => Key::Str(b""),
            _ => Key::Int(0),
        };
        let mut value = None;
        for o in &occ {
            if o.field == 0 {
                key = match o.value(bytes) {
                    Value::Bytes(b) => Key::Str(b),
                    Value::Number(n) => Key::Int(integer(key_scalar, n)),
                };
            } else {
                value = Some(*o);
            }
        }
        self.scratch[depth] = occ;
        (key, value)
    }

    fn append_scalar(&mut self, column: &mut Col, scalar: Scalar, value: Value<'_>, depth: usize, taped: bool) {
        match (column, value) {
            (Col::Struct(child), Value::Bytes(b)) => {
                if let Scalar::Message(m) = scalar {
                    self.append(child, m, b, depth + 1, taped);
                }
                child.valid.append(true);
            }
            (Col::Timestamp(builder), Value::Bytes(b)) => {
                if let Scalar::Timestamp(m) = scalar {
                    builder.append_option(self.timestamp(m, b, depth + 1));
                }
            }
            (Col::Str(builder), Value::Bytes(b)) => builder.append_value(std::str::from_utf8(b).unwrap_or_default()),
            (Col::Str(builder), Value::Number(n)) => {
                if let Scalar::Enum(e) = scalar {
                    let number = n as i32;
                    match self.enums[e].name(number) {
                        Some(name) => builder.append_value(name),
                        None => builder.append_value(number.to_string()),
                    }
                }
            }
            (Col::Bin(builder), Value::Bytes(b)) => builder.append_value(b),
            (Col::Bool(builder), Value::Number(n)) => builder.append_value(n != 0),
            (Col::Int32(builder), Value::Number(n)) => builder.append_value(integer(scalar, n) as i32),
            (Col::Int64(builder), Value::Number(n)) => builder.append_value(integer(scalar, n)),
            (Col::Float32(builder), Value::Number(n)) => builder.append_value(f32::from_bits(n as u32)),
            (Col::Float64(builder), Value::Number(n)) => builder.append_value(f64::from_bits(n)),
            (column, _) => column.append_null(), // not reached: the plan and the column agree
        }
    }

    /// A field without presence that is not set: its type's default (a message value of a map
    /// entry: the empty message).
    fn append_default(&mut self, column: &mut Col, scalar: Scalar, depth: usize) {
        match (column, scalar) {
            (Col::Struct(child), Scalar::Message(m)) => {
                self.append(child, m, &[], depth + 1, false);
                child.valid.append(true);
            }
            (Col::Str(builder), Scalar::Enum(e)) => match self.enums[e].name(0) {
                Some(name) => builder.append_value(name),
                None => builder.append_value("0"),
            },
            (Col::Str(builder), _) => builder.append_value(""),
            (Col::Bin(builder), _) => builder.append_value(b""),
            (Col::Bool(builder), _) => builder.append_value(false),
            (Col::Int32(builder), _) => builder.append_value(0),
            (Col::Int64(builder), _) => builder.append_value(0),
            (Col::Float32(builder), _) => builder.append_value(0.0),
            (Col::Float64(builder), _) => builder.append_value(0.0),
            (column, _) => column.append_null(),
        }
    }
}

/// A value as the wire holds it: a number (a varint, or a fixed value's bits) or bytes.
#[derive(Clone, Copy)]
enum Value<'a> {
    Number(u64),
    Bytes(&'a [u8]),
}


/// A map key, as the Python path orders keys (integers by value, strings by code point, which
/// is their UTF-8 bytes' order).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Int(i64),
    Str(&'a [u8]),
}

/// A varint-or-fixed number as its field's integer (the wire's 64 bits cut as protobuf cuts them).
fn integer(scalar: Scalar, n: u64) -> i64 {
    match scalar {
        Scalar::Int32 | Scalar::Enum(_) | Scalar::Sfixed32 => i64::from(n as i32),
        Scalar::Sint32 => {
            let n = n as u32;
            i64::from((n >> 1) as i32 ^ -((n & 1) as i32))
        }
        Scalar::Uint32 | Scalar::Fixed32 => i64::from(n as u32),
        Scalar::Sint64 => (n >> 1) as i64 ^ -((n & 1) as i64),
        Scalar::Bool => i64::from(n != 0),
        _ => n as i64,
    }
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

/// The plans of a message and the messages and enums it uses.
#[derive(Default)]
struct Planner {
    plans: Vec<MessagePlan>,
    enums: Vec<EnumPlan>,
    messages: HashMap<String, usize>,
    enum_names: HashMap<String, usize>,
    /// Messages being planned (a recursive message has no column).
    open: Vec<String>,
}

impl Planner {
    fn message(&mut self, descriptor: &MessageDescriptor) -> Option<usize> {
        let name = descriptor.full_name().to_string();
        if let Some(&i) = self.messages.get(&name) {
            return Some(i);
        }
        if self.open.contains(&name) {
            return None;
        }
        self.open.push(name.clone());
        let mut plan = MessagePlan::new();
        let oneofs: Vec<String> = descriptor.oneofs().map(|o| o.name().to_string()).collect();
        for raw in &descriptor.descriptor_proto().field {
            let field = descriptor.get_field(u32::try_from(raw.number()).ok()?)?;
            if field.is_group() {
                return None;
            }
            let kind = field.kind();
            let shape = if field.is_map() {
                Shape::Map(self.message(kind.as_message()?)?)
            } else if field.is_list() {
                Shape::List
            } else {
                Shape::Single
            };
            let scalar = match shape {
                Shape::Map(_) => Scalar::Bytes,
                _ => self.scalar(&kind)?,
            };
            let index = plan.fields.len();
            plan.numbers.insert(field.number(), index);
            if field.number() < 64 {
                plan.small[field.number() as usize] = u8::try_from(index + 1).ok()?;
            }
            plan.fields.push(FieldPlan {
                scalar,
                shape,
                presence: field.supports_presence(),
                oneof: field.containing_oneof().and_then(|o| oneofs.iter().position(|n| n == o.name())),
            });
        }
        self.open.pop();
        self.plans.push(plan);
        self.messages.insert(name, self.plans.len() - 1);
        Some(self.plans.len() - 1)
    }

    fn scalar(&mut self, kind: &Kind) -> Option<Scalar> {
        Some(match kind {
            Kind::Double => Scalar::Double,
            Kind::Float => Scalar::Float,
            Kind::Int32 => Scalar::Int32,
            Kind::Int64 => Scalar::Int64,
            Kind::Uint32 => Scalar::Uint32,
            Kind::Uint64 => Scalar::Uint64,
            Kind::Sint32 => Scalar::Sint32,
            Kind::Sint64 => Scalar::Sint64,
            Kind::Fixed32 => Scalar::Fixed32,
            Kind::Fixed64 => Scalar::Fixed64,
            Kind::Sfixed32 => Scalar::Sfixed32,
            Kind::Sfixed64 => Scalar::Sfixed64,
            Kind::Bool => Scalar::Bool,
            Kind::String => Scalar::Str,
            Kind::Bytes => Scalar::Bytes,
            Kind::Enum(e) => Scalar::Enum(self.enumeration(e)?),
            Kind::Message(m) if m.full_name() == TIMESTAMP => Scalar::Timestamp(self.message(m)?),
            Kind::Message(m) => Scalar::Message(self.message(m)?),
        })
    }

    fn enumeration(&mut self, descriptor: &EnumDescriptor) -> Option<usize> {
        let name = descriptor.full_name().to_string();
        if let Some(&i) = self.enum_names.get(&name) {
            return Some(i);
        }
        let mut names: Vec<(i32, String)> = descriptor.values().map(|v| (v.number(), v.name().to_string())).collect();
        names.sort_by_key(|(n, _)| *n);
        if names.windows(2).any(|w| w[0].0 == w[1].0) {
            return None; // aliases: which name the Python path shows is its own
        }
        let open = descriptor.parent_file().syntax() == Syntax::Proto3;
        self.enums.push(EnumPlan { names, open });
        self.enum_names.insert(name, self.enums.len() - 1);
        Some(self.enums.len() - 1)
    }
}

/// The builders of a struct column.
struct StructCol {
    children: Vec<Col>,
    valid: BooleanBufferBuilder,
}

struct ListCol {
    offsets: Vec<i32>,
    values: Col,
}

struct MapCol {
    offsets: Vec<i32>,
    keys: Col,
    values: Col,
}

enum Col {
    Bool(BooleanBuilder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Str(StringBuilder),
    Bin(BinaryBuilder),
    Timestamp(TimestampMicrosecondBuilder),
    Struct(Box<StructCol>),
    List(Box<ListCol>),
    Map(Box<MapCol>),
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

    fn finish(&mut self, target: &DataType) -> Result<ArrayRef, arrow::error::ArrowError> {
        let DataType::Struct(fields) = target else { return Err(mismatch(target)) };
        let arrays = self
            .children
            .iter_mut()
            .zip(fields.iter())
            .map(|(child, field)| child.finish(field.data_type()))
            .collect::<Result<Vec<_>, _>>()?;
        let valid = self.valid.finish();
        let nulls = Some(NullBuffer::new(valid)).filter(|n| n.null_count() > 0);
        if arrays.is_empty() {
            return Ok(Arc::new(StructArray::new_empty_fields(nulls.as_ref().map_or(0, |n| n.len()), nulls)));
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

fn mismatch(target: &DataType) -> arrow::error::ArrowError {
    arrow::error::ArrowError::SchemaError(format!("a Protobuf column cannot be {target}"))
}

impl Col {
    fn new(plans: &[MessagePlan], scalar: Scalar, target: &DataType) -> Option<Self> {
        Some(match (scalar, target) {
            (Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32, DataType::Int32) => Col::Int32(Int32Builder::new()),
            (
                Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64 | Scalar::Uint32 | Scalar::Fixed32 | Scalar::Uint64 | Scalar::Fixed64,
                DataType::Int64,
            ) => Col::Int64(Int64Builder::new()),
            (Scalar::Float, DataType::Float32) => Col::Float32(Float32Builder::new()),
            (Scalar::Double, DataType::Float64) => Col::Float64(Float64Builder::new()),
            (Scalar::Bool, DataType::Boolean) => Col::Bool(BooleanBuilder::new()),
            (Scalar::Str | Scalar::Enum(_), DataType::Utf8) => Col::Str(StringBuilder::new()),
            (Scalar::Bytes, DataType::Binary) => Col::Bin(BinaryBuilder::new()),
            (Scalar::Timestamp(_), DataType::Timestamp(TimeUnit::Microsecond, Some(zone))) if zone.as_ref() == "UTC" => {
                Col::Timestamp(TimestampMicrosecondBuilder::new())
            }
            (Scalar::Message(m), DataType::Struct(_)) => Col::Struct(Box::new(StructCol::new(plans, m, target)?)),
            _ => return None,
        })
    }

    fn len(&self) -> usize {
        match self {
            Col::Bool(b) => b.len(),
            Col::Int32(b) => b.len(),
            Col::Int64(b) => b.len(),
            Col::Float32(b) => b.len(),
            Col::Float64(b) => b.len(),
            Col::Str(b) => b.len(),
            Col::Bin(b) => b.len(),
            Col::Timestamp(b) => b.len(),
            Col::Struct(s) => s.valid.len(),
            Col::List(l) => l.offsets.len() - 1,
            Col::Map(m) => m.offsets.len() - 1,
        }
    }

    fn append_null(&mut self) {
        match self {
            Col::Bool(b) => b.append_null(),
            Col::Int32(b) => b.append_null(),
            Col::Int64(b) => b.append_null(),
            Col::Float32(b) => b.append_null(),
            Col::Float64(b) => b.append_null(),
            Col::Str(b) => b.append_null(),
            Col::Bin(b) => b.append_null(),
            Col::Timestamp(b) => b.append_null(),
            Col::Struct(s) => s.append_null(),
            Col::List(l) => l.offsets.push(l.values.len() as i32),
            Col::Map(m) => m.offsets.push(m.keys.len() as i32),
        }
    }

    fn append_key(&mut self, scalar: Scalar, n: i64) {
        match self {
            Col::Bool(b) => b.append_value(n != 0),
            Col::Int32(b) => b.append_value(n as i32),
            Col::Int64(b) => b.append_value(n),
            _ => {
                let _ = scalar;
                self.append_null();
            }
        }
    }

    fn append_str(&mut self, text: &[u8]) {
        if let Col::Str(b) = self {
            b.append_value(std::str::from_utf8(text).unwrap_or_default());
        }
    }

    fn finish(&mut self, target: &DataType) -> Result<ArrayRef, arrow::error::ArrowError> {
        Ok(match self {
            Col::Bool(b) => Arc::new(b.finish()),
            Col::Int32(b) => Arc::new(b.finish()),
            Col::Int64(b) => Arc::new(b.finish()),
            Col::Float32(b) => Arc::new(b.finish()),
            Col::Float64(b) => Arc::new(b.finish()),
            Col::Str(b) => Arc::new(b.finish()),
            Col::Bin(b) => Arc::new(b.finish()),
            Col::Timestamp(b) => Arc::new(b.finish().with_timezone("UTC")),
            Col::Struct(s) => s.finish(target)?,
            Col::List(l) => {
                let DataType::List(item) = target else { return Err(mismatch(target)) };
                let values = l.values.finish(item.data_type())?;
                let offsets = OffsetBuffer::new(std::mem::replace(&mut l.offsets, vec![0]).into());
                Arc::new(ListArray::try_new(item.clone(), offsets, values, None)?)
            }
            Col::Map(m) => {
                let DataType::Map(entries, ordered) = target else { return Err(mismatch(target)) };
                let DataType::Struct(kv) = entries.data_type() else { return Err(mismatch(target)) };
                let keys = m.keys.finish(kv[0].data_type())?;
                let values = m.values.finish(kv[1].data_type())?;
                let offsets = OffsetBuffer::new(std::mem::replace(&mut m.offsets, vec![0]).into());
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
