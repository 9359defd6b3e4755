//! Arrow rows into Protobuf bodies (`arrow.write_table`'s and the Spark sink's `value` column):
//! the bytes protobuf's `SerializeToString` gives for the message the Python path builds of the
//! same row (`writing/python_values.py`: the row's Python value, `json_format.ParseDict`), or no
//! answer.
//!
//! A `ProtobufEncoder` pairs the message's plan (`protobuf_schema.rs`) with the column's Arrow
//! type, field by field, by name: a struct whose every field the message names, each of a type
//! it takes (below). A column it does not pair (a field the message does not name, which
//! `ParseDict` would drop, a type below it does not know) compiles to nothing: the whole column
//! takes the Python path. A row it is not sure of gets no body and takes the Python path, which
//! writes it or refuses it with its error: an integer out of its field's range, a float NaN or
//! infinite (or past a `float`'s range), a name its enum does not have, two members of a oneof,
//! a null inside a list, a map with entries (protobuf writes a map's entries in an order of its
//! own), a time outside the years 1 to 9999.
//!
//! As protobuf writes a message: fields by number; a field without presence not written at its
//! default (0, an empty string, false; a float whose bits are all zero); a null is a field not
//! set; a repeated scalar packed where the field is; a `google.protobuf.Timestamp` from a UTC
//! timestamp column as seconds and nanoseconds.
//!
//! The pairs, Protobuf <- Arrow: integers <- any signed or unsigned integer column (range
//! checked); float <- float32 or float64; double <- float64 or float32; bool <- boolean; string
//! <- string; bytes <- binary; enum <- string (a name); message <- struct; Timestamp <- timestamp
//! (s, ms or us) in UTC; repeated <- list; map <- map (empty only).

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryBuilder, BooleanArray, Float32Array, Float64Array, Int64Array,
};
use arrow::buffer::NullBuffer;
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type, TimeUnit};

use crate::encode::{Bytes, Offsets};
use crate::protobuf_schema::{Scalar, Schema, Shape, FIRST_SECOND, LAST_SECOND};

/// Why the pair of a message and an Arrow type has no encoder (the column takes the Python path).
type Unpaired = String;

/// How a field's values come from its column.
#[derive(Debug)]
enum Source {
    /// An integer column (cast to 64 bits), in `range`.
    Integer((i64, i64)),
    Float32,
    Float64,
    /// A float field from a float64 column (a value past a float's range refused).
    NarrowFloat,
    /// A double field from a float32 column.
    WideFloat,
    Boolean,
    Bytes,
    Enum(usize),
    /// A timestamp column's values in this many units a second.
    Timestamp(i64),
    Message(Box<Paired>),
}

/// A field paired with its column: its plan, and the index of the struct's child that holds it.
#[derive(Debug)]
struct FieldPair {
    number: u32,
    scalar: Scalar,
    shape: Shape,
    presence: bool,
    packed: bool,
    oneof: Option<usize>,
    child: usize,
    source: Source,
}

/// A message paired with a struct column: its fields by number.
#[derive(Debug)]
struct Paired {
    fields: Vec<FieldPair>,
}

/// Arrow rows into Protobuf bodies (see the module).
pub struct Encoder {
    schema: Schema,
    paired: Paired,
    prefix: Vec<u8>,
}

impl Encoder {
    /// The encoder of message `message` of `descriptor_set` (a `FileDescriptorSet`, base64) from
    /// a column of `arrow`, each body after `prefix`; Err: why the pair has none.
    pub fn new(descriptor_set: &str, message: &str, arrow: &DataType, prefix: &[u8]) -> Result<Self, Unpaired> {
        let (schema, root) =
            Schema::new(descriptor_set, message).ok_or("the descriptors do not plan this message natively")?;
        let paired = pair(&schema, root, arrow, 0)?;
        Ok(Encoder { schema, paired, prefix: prefix.to_vec() })
    }

    /// Each row's body (the prefix, then the message's bytes), None for a row the Python path writes.
    pub fn encode(&self, column: &ArrayRef) -> Result<BinaryArray, Unpaired> {
        let bound = bind(&self.paired, column)?;
        let mut builder = BinaryBuilder::with_capacity(column.len(), column.len() * 32);
        let mut writer = Writer { schema: &self.schema, scratch: Vec::new() };
        let mut out = Vec::with_capacity(256);
        for row in 0..column.len() {
            out.clear();
            out.extend_from_slice(&self.prefix);
            // a None value: the Python path refuses it
            if !bound.is_null(row) && writer.message(&self.paired, &bound, row, &mut out, 0) {
                builder.append_value(&out);
            } else {
                builder.append_null();
            }
        }
        Ok(builder.finish())
    }
}

fn pair(schema: &Schema, plan: usize, arrow: &DataType, depth: usize) -> Result<Paired, Unpaired> {
    if depth > 64 {
        return Err("the message nests deeper than 64 messages".into());
    }
    let DataType::Struct(columns) = arrow else { return Err(format!("a message from {arrow}")) };
    let plan_fields = &schema.plans[plan].fields;
    let mut fields = Vec::with_capacity(columns.len());
    for (child, column) in columns.iter().enumerate() {
        let Some(field) = plan_fields.iter().find(|f| f.name == *column.name()) else {
            return Err(format!("a field the message does not have: {}", column.name()));
        };
        let element = match (field.shape, column.data_type()) {
            (Shape::Single, kind) => kind.clone(),
            (Shape::List, DataType::List(item)) => item.data_type().clone(),
            (Shape::Map(_), DataType::Map(..)) => {
                // written only when empty: no values to pair
                fields.push(FieldPair {
                    number: field.number,
                    scalar: field.scalar,
                    shape: field.shape,
                    presence: false,
                    packed: false,
                    oneof: None,
                    child,
                    source: Source::Boolean,
                });
                continue;
            }
            (_, kind) => return Err(format!("field {} from {kind}", field.name)),
        };
        let source = source(schema, field.scalar, &element, depth)
            .map_err(|why| format!("field {}: {why}", field.name))?;
        fields.push(FieldPair {
            number: field.number,
            scalar: field.scalar,
            shape: field.shape,
            presence: field.presence,
            packed: field.packed,
            oneof: field.oneof,
            child,
            source,
        });
    }
    fields.sort_by_key(|f| f.number);
    Ok(Paired { fields })
}

fn source(schema: &Schema, scalar: Scalar, arrow: &DataType, depth: usize) -> Result<Source, Unpaired> {
    use DataType::*;
    let integer = matches!(arrow, Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32);
    Ok(match (scalar, arrow) {
        (Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32, _) if integer => {
            Source::Integer((i64::from(i32::MIN), i64::from(i32::MAX)))
        }
        (Scalar::Uint32 | Scalar::Fixed32, _) if integer => Source::Integer((0, i64::from(u32::MAX))),
        (Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64, _) if integer => Source::Integer((i64::MIN, i64::MAX)),
        (Scalar::Uint64 | Scalar::Fixed64, _) if integer => Source::Integer((0, i64::MAX)),
        (Scalar::Float, Float32) => Source::Float32,
        (Scalar::Float, Float64) => Source::NarrowFloat,
        (Scalar::Double, Float64) => Source::Float64,
        (Scalar::Double, Float32) => Source::WideFloat,
        (Scalar::Bool, Boolean) => Source::Boolean,
        (Scalar::Str, Utf8 | LargeUtf8) | (Scalar::Bytes, Binary | LargeBinary) => Source::Bytes,
        (Scalar::Enum(e), Utf8 | LargeUtf8) => Source::Enum(e),
        // (nanoseconds: Python's datetime refuses a part finer than a microsecond)
        (Scalar::Timestamp(_), Timestamp(unit, Some(zone))) if zone.as_ref() == "UTC" => Source::Timestamp(match unit {
            TimeUnit::Second => 1,
            TimeUnit::Millisecond => 1_000,
            TimeUnit::Microsecond => 1_000_000,
            TimeUnit::Nanosecond => return Err("a timestamp of nanoseconds".into()),
        }),
        (Scalar::Message(m), Struct(_)) => Source::Message(Box::new(pair(schema, m, arrow, depth + 1)?)),
        (_, kind) => return Err(format!("{scalar:?} from {kind}")),
    })
}

/// A paired message bound to one batch's struct array.
struct Bound {
    nulls: Option<NullBuffer>,
    fields: Vec<BoundField>,
}

struct BoundField {
    nulls: Option<NullBuffer>,
    /// A list's (or map's) items of each row, and the items' nulls.
    items: Option<(Offsets, Option<NullBuffer>)>,
    values: Values,
}

enum Values {
    Integer(Int64Array),
    Float32(Float32Array),
    Float64(Float64Array),
    Boolean(BooleanArray),
    Bytes(Bytes),
    Timestamp(Int64Array),
    Message(Box<Bound>),
    /// A map: only its entries' count is read.
    Entries,
}

fn bind(paired: &Paired, array: &ArrayRef) -> Result<Bound, Unpaired> {
    let record = array.as_struct_opt().ok_or_else(|| format!("a message from {}", array.data_type()))?;
    let fields = paired
        .fields
        .iter()
        .map(|field| {
            let column = record.column(field.child);
            let (items, values) = match field.shape {
                Shape::Single => (None, column.clone()),
                Shape::List => {
                    let list = column.as_list_opt::<i32>().ok_or("a list of another offset type")?;
                    let values = list.values().clone();
                    (Some((Offsets::Small(list.offsets().clone()), values.logical_nulls())), values)
                }
                Shape::Map(_) => {
                    let map = column.as_map_opt().ok_or("a map of another type")?;
                    let entries = Offsets::Small(map.offsets().clone());
                    return Ok(BoundField { nulls: column.logical_nulls(), items: Some((entries, None)), values: Values::Entries });
                }
            };
            let bound = match &field.source {
                Source::Integer(_) => {
                    let wide = cast(&values, &DataType::Int64).map_err(|e| e.to_string())?;
                    Values::Integer(wide.as_primitive::<Int64Type>().clone())
                }
                Source::Timestamp(_) => {
                    let raw = cast(&values, &DataType::Int64).map_err(|e| e.to_string())?;
                    Values::Timestamp(raw.as_primitive::<Int64Type>().clone())
                }
                Source::Float32 | Source::WideFloat => {
                    Values::Float32(values.as_primitive_opt().ok_or("not a float32 column")?.clone())
                }
                Source::Float64 | Source::NarrowFloat => {
                    Values::Float64(values.as_primitive_opt().ok_or("not a float64 column")?.clone())
                }
                Source::Boolean => Values::Boolean(values.as_boolean_opt().ok_or("not a boolean column")?.clone()),
                Source::Bytes | Source::Enum(_) => Values::Bytes(Bytes::of(values.as_ref()).ok_or("not a byte column")?),
                Source::Message(inner) => Values::Message(Box::new(bind(inner, &values)?)),
            };
            Ok(BoundField { nulls: column.logical_nulls(), items, values: bound })
        })
        .collect::<Result<Vec<_>, Unpaired>>()?;
    Ok(Bound { nulls: array.logical_nulls(), fields })
}

impl Bound {
    fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }
}

/// One batch being written: the schema, and a buffer a depth for nested messages' bytes.
struct Writer<'s> {
    schema: &'s Schema,
    scratch: Vec<Vec<u8>>,
}

/// A scalar's value as written: a number (a varint's value, or a fixed value's bits) or bytes.
enum Scalar64<'a> {
    Number(u64),
    Bytes(&'a [u8]),
}

impl Writer<'_> {
    /// Row `row` of `bound`'s message written to `out`, fields by number; false where the row is
    /// not sure (what was written of it is then dropped).
    fn message(&mut self, paired: &Paired, bound: &Bound, row: usize, out: &mut Vec<u8>, depth: usize) -> bool {
        let mut oneofs: u64 = 0;
        for (field, column) in paired.fields.iter().zip(&bound.fields) {
            if column.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                continue; // a None: the field is not set
            }
            match (&column.items, field.shape) {
                (Some((entries, _)), Shape::Map(_)) => {
                    let (start, end) = entries.range(row);
                    if start != end {
                        return false; // protobuf writes a map's entries in an order of its own
                    }
                }
                (Some((items, item_nulls)), Shape::List) => {
                    let (start, end) = items.range(row);
                    if item_nulls.as_ref().is_some_and(|n| (start..end).any(|i| n.is_null(i))) {
                        return false; // ParseDict refuses a None in a repeated field
                    }
                    if start == end {
                        continue;
                    }
                    if field.packed {
                        let mut packed = self.take(depth);
                        let ok = (start..end).all(|i| self.scalar(field, column, i, &mut packed, depth, true));
                        if ok {
                            tag(out, field.number, 2);
                            varint(out, packed.len() as u64);
                            out.extend_from_slice(&packed);
                        }
                        self.give(depth, packed);
                        if !ok {
                            return false;
                        }
                    } else if !(start..end).all(|i| self.scalar(field, column, i, out, depth, false)) {
                        return false;
                    }
                }
                _ => {
                    if let Some(oneof) = field.oneof {
                        if oneof >= 64 || oneofs & (1 << oneof) != 0 {
                            return false; // ParseDict refuses two members of a oneof
                        }
                        oneofs |= 1 << oneof;
                    }
                    if !self.scalar(field, column, row, out, depth, false) {
                        return false;
                    }
                }
            }
        }
        true
    }

    fn take(&mut self, depth: usize) -> Vec<u8> {
        if self.scratch.len() <= depth {
            self.scratch.resize_with(depth + 1, Vec::new);
        }
        let mut buffer = std::mem::take(&mut self.scratch[depth]);
        buffer.clear();
        buffer
    }

    fn give(&mut self, depth: usize, buffer: Vec<u8>) {
        self.scratch[depth] = buffer;
    }

    /// Value `i` of a field's column written to `out` (with its tag, unless `bare`: a packed
    /// element); a singular field without presence is not written at its default. False where
    /// the value is not sure.
    fn scalar(&mut self, field: &FieldPair, column: &BoundField, i: usize, out: &mut Vec<u8>, depth: usize, bare: bool) -> bool {
        let implicit = field.shape == Shape::Single && !field.presence;
        let value = match (&column.values, &field.source) {
            (Values::Integer(a), Source::Integer((low, high))) => {
                let v = a.value(i);
                if v < *low || v > *high {
                    return false;
                }
                Scalar64::Number(match field.scalar {
                    Scalar::Sint32 => u64::from(((v as i32) << 1 ^ ((v as i32) >> 31)) as u32),
                    Scalar::Sint64 => ((v << 1) ^ (v >> 63)) as u64,
                    Scalar::Fixed32 | Scalar::Sfixed32 => u64::from(v as u32),
                    _ => v as u64,
                })
            }
            (Values::Float32(a), Source::Float32) => {
                let v = a.value(i);
                if !v.is_finite() {
                    return false;
                }
                Scalar64::Number(u64::from(v.to_bits()))
            }
            (Values::Float32(a), _) => {
                let v = f64::from(a.value(i));
                if !v.is_finite() {
                    return false;
                }
                Scalar64::Number(v.to_bits())
            }
            (Values::Float64(a), Source::NarrowFloat) => {
                let v = a.value(i);
                if !v.is_finite() || v.abs() > f64::from(f32::MAX) {
                    return false;
                }
                Scalar64::Number(u64::from((v as f32).to_bits()))
            }
            (Values::Float64(a), _) => {
                let v = a.value(i);
                if !v.is_finite() {
                    return false;
                }
                Scalar64::Number(v.to_bits())
            }
            (Values::Boolean(a), _) => Scalar64::Number(u64::from(a.value(i))),
            (Values::Bytes(b), Source::Enum(e)) => {
                let name = b.value(i);
                let Some(number) = std::str::from_utf8(name).ok().and_then(|n| self.schema.enums[*e].number(n)) else {
                    return false; // a name the enum does not have: ParseDict decides
                };
                Scalar64::Number(i64::from(number) as u64)
            }
            (Values::Bytes(b), _) => Scalar64::Bytes(b.value(i)),
            (Values::Timestamp(a), Source::Timestamp(per_second)) => {
                let v = a.value(i);
                let (seconds, part) = (v.div_euclid(*per_second), v.rem_euclid(*per_second));
                if !(FIRST_SECOND..=LAST_SECOND).contains(&seconds) {
                    return false;
                }
                let nanos = part * (1_000_000_000 / per_second);
                let mut body = self.take(depth + 1);
                if seconds != 0 {
                    tag(&mut body, 1, 0);
                    varint(&mut body, seconds as u64);
                }
                if nanos != 0 {
                    tag(&mut body, 2, 0);
                    varint(&mut body, nanos as u64);
                }
                tag(out, field.number, 2);
                varint(out, body.len() as u64);
                out.extend_from_slice(&body);
                self.give(depth + 1, body);
                return true;
            }
            (Values::Message(bound), Source::Message(paired)) => {
                let mut body = self.take(depth + 1);
                let ok = self.message(paired, bound, i, &mut body, depth + 1);
                if ok {
                    tag(out, field.number, 2);
                    varint(out, body.len() as u64);
                    out.extend_from_slice(&body);
                }
                self.give(depth + 1, body);
                return ok;
            }
            _ => return false, // not reached: bound as paired
        };
        let wire = field.scalar.wire();
        match value {
            Scalar64::Number(n) => {
                if implicit && n == 0 {
                    return true; // its default: not written
                }
                if !bare {
                    tag(out, field.number, wire);
                }
                match wire {
                    0 => varint(out, n),
                    1 => out.extend_from_slice(&n.to_le_bytes()),
                    _ => out.extend_from_slice(&(n as u32).to_le_bytes()),
                }
            }
            Scalar64::Bytes(bytes) => {
                if implicit && bytes.is_empty() {
                    return true;
                }
                tag(out, field.number, 2);
                varint(out, bytes.len() as u64);
                out.extend_from_slice(bytes);
            }
        }
        true
    }
}

fn tag(out: &mut Vec<u8>, number: u32, wire: u8) {
    varint(out, (u64::from(number) << 3) | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}
