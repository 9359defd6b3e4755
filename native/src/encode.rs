//! Arrow rows into Avro bodies (`arrow.write_table`'s `value` column): the bytes fastavro's
//! writer gives for the Python values of the same rows, or no answer.
//!
//! An `AvroEncoder` is compiled from the writer schema (one self-contained Avro JSON text) and the
//! column's Arrow type, and answers only what it is sure of. A type it does not pair with the
//! schema (a union of several types, a logical type but those below, a record whose fields
//! are not the struct's, a string for `bytes`, a timestamp without a zone, ...) compiles to
//! nothing: the whole column takes the Python path. A row whose value it cannot write as the
//! Python path would (a null where the schema takes none, an integer outside an `int`, a string
//! that is no symbol of its enum, bytes of another size than a `fixed`, a map with a key twice, a
//! NaN of a 32-bit float, a time outside Python's years 1 to 9999) gets no body: that row takes
//! the Python path, which refuses it with its error or writes it.
//!
//! The pairs, Avro <- Arrow: boolean <- boolean; int, long <- any signed or unsigned integer of
//! up to 32 bits, or a 64-bit signed one; float <- float32; double <- float64 or float32; bytes
//! <- binary; string <- string; enum <- string; fixed <- fixed-size binary of its size, or binary;
//! array <- list; map <- map of string keys; record <- struct of the same field names;
//! timestamp-millis, timestamp-micros <- a timestamp of milliseconds or microseconds in UTC;
//! time-millis, time-micros <- time32 / time64 of milliseconds or microseconds; date <- date32;
//! uuid <- string; decimal (bytes) <- decimal128 of its scale; any logical type of an int or a
//! long <- an integer column, as itself;
//! `[null, T]` / `[T, null]` <- T's pair, a null written as the null branch.

use std::collections::{HashMap, HashSet};

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryBuilder, BooleanArray, FixedSizeBinaryArray, Float32Array,
    Float64Array, GenericByteArray, Int64Array, LargeBinaryArray, LargeStringArray, MapArray, StringArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::cast;
use arrow::datatypes::{ArrowNativeType, ByteArrayType, DataType, Int64Type};
use serde_json::Value;

/// An Avro type paired with the Arrow type its values come from.
#[derive(Debug)]
enum Node {
    Boolean,
    /// `int` (true: a value outside 32 bits has no body) or `long`.
    Integer(bool),
    /// `timestamp-millis` / `time-millis` (true) or `-micros` from a timestamp of a UTC zone or a
    /// time, in milliseconds or microseconds (`Unit`): what fastavro writes for the aware
    /// `datetime` or the `time` Python holds (microseconds to milliseconds rounded down, as its
    /// `microseconds // 1000`); a value outside `range` (microseconds) is no Python value.
    Instant { millis: bool, unit: Unit, range: (i64, i64) },
    /// `decimal` as bytes from a decimal128 of the schema's scale: its unscaled value in as many
    /// bytes as fastavro writes; one of more digits than the precision (below this bound) is
    /// refused by the Python path.
    Decimal(i128),
    /// `date` from date32 (days since the epoch, as fastavro writes a `date`).
    Date,
    Float,
    /// `double` from float64 (false) or float32 (true).
    Double(bool),
    /// `bytes` or `string`: written with their length.
    Bytes,
    Enum(HashMap<String, i64>),
    Fixed(usize),
    /// Each Avro field in order, with the index of the struct's child that holds it.
    Record(Vec<(usize, Node)>),
    Array(Box<Node>),
    Map(Box<Node>),
    /// A union of null and one other type: the two branches' indexes.
    Optional { null: i64, value: i64, node: Box<Node> },
}

/// A timestamp column's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Millis,
    Micros,
}

/// The range of Python's `datetime` (years 1 to 9999), in microseconds and days since the epoch:
/// a value outside it is no Python value, so the Python path decides.
const DATETIME_MICROS: (i64, i64) = (-62_135_596_800_000_000, 253_402_300_799_999_999);
const DATE_DAYS: (i64, i64) = (-719_162, 2_932_896);
/// A day, in microseconds: the range of Python's `time`.
const TIME_MICROS: (i64, i64) = (0, 86_399_999_999);

/// The writer schema's named types by full name, for the nodes that name them.
struct Names<'a>(HashMap<String, &'a Value>);

impl<'a> Names<'a> {
    fn collect(schema: &'a Value, namespace: &str, into: &mut HashMap<String, &'a Value>) {
        match schema {
            Value::Array(branches) => branches.iter().for_each(|b| Self::collect(b, namespace, into)),
            Value::Object(node) => {
                let mut inner = namespace.to_string();
                if let (Some(Value::String(kind)), Some(Value::String(name))) = (node.get("type"), node.get("name")) {
                    if matches!(kind.as_str(), "record" | "error" | "enum" | "fixed") {
                        let full = match node.get("namespace") {
                            Some(Value::String(space)) if !space.is_empty() && !name.contains('.') => {
                                format!("{space}.{name}")
                            }
                            _ if !namespace.is_empty() && !name.contains('.') => format!("{namespace}.{name}"),
                            _ => name.clone(),
                        };
                        inner = full.rsplit_once('.').map(|(space, _)| space.to_string()).unwrap_or_default();
                        into.insert(full, schema);
                    }
                }
                for key in ["type", "items", "values"] {
                    if let Some(child) = node.get(key) {
                        Self::collect(child, &inner, into);
                    }
                }
                if let Some(Value::Array(fields)) = node.get("fields") {
                    for field in fields {
                        if let Some(kind) = field.get("type") {
                            Self::collect(kind, &inner, into);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// Why the pair of an Avro node and an Arrow type has no encoder (the column takes the Python path).
type Unpaired = String;

fn compile(schema: &Value, arrow: &DataType, names: &Names<'_>, depth: usize) -> Result<Node, Unpaired> {
    if depth > 64 {
        return Err("the schema nests deeper than 64 types".into());
    }
    let node = match schema {
        Value::String(name) => match name.as_str() {
            "null" => return Err("a null type".into()),
            primitive @ ("boolean" | "int" | "long" | "float" | "double" | "bytes" | "string") => {
                return primitive_node(primitive, arrow)
            }
            named => {
                let found = names.0.get(named).ok_or_else(|| format!("no type named {named}"))?;
                return compile(found, arrow, names, depth + 1);
            }
        },
        Value::Array(branches) => return optional(branches, arrow, names, depth),
        Value::Object(node) => node,
        _ => return Err("not an Avro schema".into()),
    };
    if node.contains_key("logicalType") {
        return logical_node(node, arrow);
    }
    let kind = node.get("type").ok_or("a type without `type`")?;
    let Value::String(kind) = kind else {
        return compile(kind, arrow, names, depth + 1);
    };
    match kind.as_str() {
        "record" | "error" => record(node, arrow, names, depth),
        "enum" => {
            if !matches!(arrow, DataType::Utf8 | DataType::LargeUtf8) {
                return Err(format!("an enum from {arrow}"));
            }
            let symbols = node.get("symbols").and_then(Value::as_array).ok_or("an enum without symbols")?;
            let symbols = symbols
                .iter()
                .enumerate()
                .map(|(i, s)| s.as_str().map(|s| (s.to_string(), i as i64)).ok_or("a symbol that is not a string"))
                .collect::<Result<_, _>>()?;
            Ok(Node::Enum(symbols))
        }
        "fixed" => {
            let size = node.get("size").and_then(Value::as_u64).ok_or("a fixed without a size")? as usize;
            match arrow {
                DataType::FixedSizeBinary(n) if *n as usize == size => Ok(Node::Fixed(size)),
                DataType::Binary | DataType::LargeBinary => Ok(Node::Fixed(size)),
                _ => Err(format!("a fixed from {arrow}")),
            }
        }
        "array" => match arrow {
            DataType::List(item) | DataType::LargeList(item) => {
                let items = node.get("items").ok_or("an array without items")?;
                Ok(Node::Array(Box::new(compile(items, item.data_type(), names, depth + 1)?)))
            }
            _ => Err(format!("an array from {arrow}")),
        },
        "map" => match arrow {
            DataType::Map(entries, _) => {
                let DataType::Struct(pair) = entries.data_type() else { return Err("a map without entries".into()) };
                if pair.len() != 2 || pair[0].data_type() != &DataType::Utf8 {
                    return Err("a map whose keys are not strings".into());
                }
                let values = node.get("values").ok_or("a map without values")?;
                Ok(Node::Map(Box::new(compile(values, pair[1].data_type(), names, depth + 1)?)))
            }
            _ => Err(format!("a map from {arrow}")),
        },
        primitive => primitive_node(primitive, arrow),
    }
}

fn primitive_node(kind: &str, arrow: &DataType) -> Result<Node, Unpaired> {
    use DataType::*;
    match (kind, arrow) {
        ("boolean", Boolean) => Ok(Node::Boolean),
        ("int" | "long", Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32) => {
            Ok(Node::Integer(kind == "int" && matches!(arrow, Int64 | UInt32)))
        }
        ("float", Float32) => Ok(Node::Float),
        ("double", Float64) => Ok(Node::Double(false)),
        ("double", Float32) => Ok(Node::Double(true)),
        ("bytes", Binary | LargeBinary) | ("string", Utf8 | LargeUtf8) => Ok(Node::Bytes),
        _ => Err(format!("an Avro {kind} from {arrow}")),
    }
}

/// The logical types whose Python values it is sure of: an integer as itself (the Python path
/// takes a plain integer for any logical type of an `int` or `long`), aware timestamps, times,
/// dates, uuids from strings, and decimals of the schema's scale as bytes.
fn logical_node(node: &serde_json::Map<String, Value>, arrow: &DataType) -> Result<Node, Unpaired> {
    use arrow::datatypes::TimeUnit::{Microsecond, Millisecond};
    use DataType::*;
    // the zones pyarrow gives Python values of without a time zone database
    let utc = |zone: &str| matches!(zone, "UTC" | "+00:00");
    let unit = |unit: &arrow::datatypes::TimeUnit| match unit {
        Millisecond => Some(Unit::Millis),
        Microsecond => Some(Unit::Micros),
        _ => None,
    };
    let logical = node.get("logicalType").and_then(Value::as_str).unwrap_or_default();
    let base = node.get("type").and_then(Value::as_str).unwrap_or_default();
    let unpaired = || format!("a logical type {logical} from {arrow}");
    let millis = logical.ends_with("-millis");
    match (logical, base, arrow) {
        (_, "int" | "long", Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32) => primitive_node(base, arrow),
        ("timestamp-millis" | "timestamp-micros", "long", Timestamp(u, Some(zone))) if utc(zone) => {
            Ok(Node::Instant { millis, unit: unit(u).ok_or_else(unpaired)?, range: DATETIME_MICROS })
        }
        ("time-millis", "int", Time32(u)) | ("time-micros", "long", Time64(u)) | ("time-millis", "int", Time64(u))
        | ("time-micros", "long", Time32(u)) => {
            Ok(Node::Instant { millis, unit: unit(u).ok_or_else(unpaired)?, range: TIME_MICROS })
        }
        ("date", "int", Date32) => Ok(Node::Date),
        ("uuid", "string", Utf8 | LargeUtf8) => Ok(Node::Bytes),
        ("decimal", "bytes", Decimal128(p, s)) => {
            let precision = node.get("precision").and_then(Value::as_u64).ok_or("a decimal without a precision")?;
            let scale = node.get("scale").and_then(Value::as_i64).unwrap_or(0);
            if i64::from(*s) != scale || u64::from(*p) > precision || precision > 38 {
                return Err(unpaired());
            }
            Ok(Node::Decimal(10i128.pow(precision as u32)))
        }
        _ => Err(unpaired()),
    }
}

fn optional(branches: &[Value], arrow: &DataType, names: &Names<'_>, depth: usize) -> Result<Node, Unpaired> {
    let is_null = |b: &Value| b.as_str() == Some("null") || b.get("type").and_then(Value::as_str) == Some("null");
    match branches {
        [a, b] if is_null(a) != is_null(b) => {
            let (null, value) = if is_null(a) { (0, 1) } else { (1, 0) };
            let node = compile(&branches[value as usize], arrow, names, depth + 1)?;
            if matches!(node, Node::Optional { .. }) {
                return Err("a union in a union".into());
            }
            Ok(Node::Optional { null, value, node: Box::new(node) })
        }
        _ => Err("a union of other types than null and one more".into()),
    }
}

fn record(
    node: &serde_json::Map<String, Value>,
    arrow: &DataType,
    names: &Names<'_>,
    depth: usize,
) -> Result<Node, Unpaired> {
    let DataType::Struct(children) = arrow else { return Err(format!("a record from {arrow}")) };
    let fields = node.get("fields").and_then(Value::as_array).ok_or("a record without fields")?;
    let avro: HashSet<&str> = fields.iter().filter_map(|f| f.get("name").and_then(Value::as_str)).collect();
    let arrow_names: HashSet<&str> = children.iter().map(|c| c.name().as_str()).collect();
    // The Python path refuses a key the record does not name, and writes a field's default where
    // the value has no such key: only the same names, once each, are written here.
    if avro.len() != fields.len() || arrow_names.len() != children.len() || avro != arrow_names {
        return Err("a record whose fields are not the struct's".into());
    }
    fields
        .iter()
        .map(|field| {
            let name = field.get("name").and_then(Value::as_str).ok_or("a field without a name")?;
            let kind = field.get("type").ok_or("a field without a type")?;
            let index = children.iter().position(|c| c.name() == name).ok_or("a field the struct lacks")?;
            Ok((index, compile(kind, children[index].data_type(), names, depth + 1)?))
        })
        .collect::<Result<_, Unpaired>>()
        .map(Node::Record)
}

/// A column of bytes, its offsets 32 or 64 bits wide.
pub enum Bytes {
    Binary(BinaryArray),
    LargeBinary(LargeBinaryArray),
    String(StringArray),
    LargeString(LargeStringArray),
}

impl Bytes {
    pub fn of(array: &dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Binary => Self::Binary(array.as_binary::<i32>().clone()),
            DataType::LargeBinary => Self::LargeBinary(array.as_binary::<i64>().clone()),
            DataType::Utf8 => Self::String(array.as_string::<i32>().clone()),
            DataType::LargeUtf8 => Self::LargeString(array.as_string::<i64>().clone()),
            _ => return None,
        })
    }

    pub fn value(&self, row: usize) -> &[u8] {
        fn bytes<T: ByteArrayType>(array: &GenericByteArray<T>, row: usize) -> &[u8] {
            let offsets = array.value_offsets();
            let (start, end) = (offsets[row].as_usize(), offsets[row + 1].as_usize());
            &array.value_data()[start..end]
        }
        match self {
            Self::Binary(a) => bytes(a, row),
            Self::LargeBinary(a) => bytes(a, row),
            Self::String(a) => bytes(a, row),
            Self::LargeString(a) => bytes(a, row),
        }
    }
}

/// Where a list's or map's items of each row are.
pub enum Offsets {
    Small(OffsetBuffer<i32>),
    Large(OffsetBuffer<i64>),
}

impl Offsets {
    pub fn range(&self, row: usize) -> (usize, usize) {
        match self {
            Self::Small(o) => (o[row] as usize, o[row + 1] as usize),
            Self::Large(o) => (o[row] as usize, o[row + 1] as usize),
        }
    }
}

/// A node bound to one batch's array: the array's nulls, and its values as the node reads them.
struct Bound<'a> {
    nulls: Option<NullBuffer>,
    values: Values<'a>,
}

enum Values<'a> {
    Boolean(BooleanArray),
    Integer(Int64Array, bool),
    Instant(Int64Array, bool, Unit, (i64, i64)),
    Decimal(arrow::array::Decimal128Array, i128),
    Date(Int64Array),
    Float(Float32Array),
    Double(Float64Array),
    DoubleOf32(Float32Array),
    Bytes(Bytes),
    Enum(Bytes, &'a HashMap<String, i64>),
    Fixed(FixedSizeBinaryArray),
    SizedBytes(Bytes, usize),
    Record(Vec<Bound<'a>>),
    Array(Offsets, Box<Bound<'a>>),
    Map(Offsets, Bytes, Box<Bound<'a>>),
    Optional(i64, i64, Box<Bound<'a>>),
}

fn bind<'a>(node: &'a Node, array: &ArrayRef) -> Result<Bound<'a>, Unpaired> {
    let unpaired = || format!("{node:?} cannot read {}", array.data_type());
    let values = match node {
        Node::Boolean => Values::Boolean(array.as_boolean_opt().ok_or_else(unpaired)?.clone()),
        Node::Integer(narrow) => {
            let wide = cast(array, &DataType::Int64).map_err(|e| e.to_string())?;
            Values::Integer(wide.as_primitive::<Int64Type>().clone(), *narrow)
        }
        Node::Instant { millis, unit, range } => {
            let raw = cast(array, &DataType::Int64).map_err(|e| e.to_string())?;
            Values::Instant(raw.as_primitive::<Int64Type>().clone(), *millis, *unit, *range)
        }
        Node::Decimal(bound) => {
            let decimals = array.as_primitive_opt::<arrow::datatypes::Decimal128Type>().ok_or_else(unpaired)?;
            Values::Decimal(decimals.clone(), *bound)
        }
        Node::Date => {
            let raw = cast(array, &DataType::Int64).map_err(|e| e.to_string())?;
            Values::Date(raw.as_primitive::<Int64Type>().clone())
        }
        Node::Float => Values::Float(array.as_primitive_opt().ok_or_else(unpaired)?.clone()),
        Node::Double(false) => Values::Double(array.as_primitive_opt().ok_or_else(unpaired)?.clone()),
        Node::Double(true) => Values::DoubleOf32(array.as_primitive_opt().ok_or_else(unpaired)?.clone()),
        Node::Bytes => Values::Bytes(Bytes::of(array).ok_or_else(unpaired)?),
        Node::Enum(symbols) => Values::Enum(Bytes::of(array).ok_or_else(unpaired)?, symbols),
        Node::Fixed(size) => match array.as_fixed_size_binary_opt() {
            Some(fixed) => Values::Fixed(fixed.clone()),
            None => Values::SizedBytes(Bytes::of(array).ok_or_else(unpaired)?, *size),
        },
        Node::Record(fields) => {
            let record = array.as_struct_opt().ok_or_else(unpaired)?;
            let children = fields.iter().map(|(index, node)| bind(node, record.column(*index)));
            Values::Record(children.collect::<Result<_, _>>()?)
        }
        Node::Array(items) => {
            let (offsets, values) = match array.data_type() {
                DataType::List(_) => {
                    let list = array.as_list::<i32>();
                    (Offsets::Small(list.offsets().clone()), list.values())
                }
                DataType::LargeList(_) => {
                    let list = array.as_list::<i64>();
                    (Offsets::Large(list.offsets().clone()), list.values())
                }
                _ => return Err(unpaired()),
            };
            Values::Array(offsets, Box::new(bind(items, values)?))
        }
        Node::Map(items) => {
            let map: &MapArray = array.as_map_opt().ok_or_else(unpaired)?;
            let keys = Bytes::of(map.keys()).ok_or_else(unpaired)?;
            Values::Map(Offsets::Small(map.offsets().clone()), keys, Box::new(bind(items, map.values())?))
        }
        Node::Optional { null, value, node } => {
            // the null branch is read from the inner array's nulls (`write`)
            Values::Optional(*null, *value, Box::new(bind(node, array)?))
        }
    };
    Ok(Bound { nulls: array.logical_nulls(), values })
}

/// Avro's variable-length zigzag integer.
fn long(out: &mut Vec<u8>, value: i64) {
    let mut n = ((value << 1) ^ (value >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn bytes(out: &mut Vec<u8>, value: &[u8]) {
    long(out, value.len() as i64);
    out.extend_from_slice(value);
}

impl Bound<'_> {
    fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }

    /// Row `row`'s value written to `out` as fastavro writes it; false where this row has no body
    /// here (what was written of it is then to be dropped).
    fn write(&self, row: usize, out: &mut Vec<u8>) -> bool {
        if let Values::Optional(null, value, inner) = &self.values {
            if inner.is_null(row) {
                long(out, *null);
                return true;
            }
            long(out, *value);
            return inner.write(row, out);
        }
        if self.is_null(row) {
            return false; // the Python path refuses a None here
        }
        match &self.values {
            Values::Boolean(a) => out.push(a.value(row) as u8),
            Values::Integer(a, narrow) => {
                let v = a.value(row);
                if *narrow && i32::try_from(v).is_err() {
                    return false;
                }
                long(out, v);
            }
            Values::Decimal(a, bound) => {
                let v = a.value(row);
                if v.unsigned_abs() >= bound.unsigned_abs() {
                    return false;
                }
                // fastavro: (bit_length(|v|) + 8) // 8 bytes of v, big-endian, two's complement
                let bits = 128 - v.unsigned_abs().leading_zeros() as usize;
                let n = (bits + 8) / 8;
                bytes(out, &v.to_be_bytes()[16 - n..]);
            }
            Values::Instant(a, millis, unit, range) => {
                let v = a.value(row);
                let micros = if *unit == Unit::Micros { Some(v) } else { v.checked_mul(1000) };
                let Some(micros) = micros.filter(|m| (range.0..=range.1).contains(m)) else {
                    return false;
                };
                long(out, if *millis { micros.div_euclid(1000) } else { micros });
            }
            Values::Date(a) => {
                let v = a.value(row);
                if !(DATE_DAYS.0..=DATE_DAYS.1).contains(&v) {
                    return false;
                }
                long(out, v);
            }
            Values::Float(a) => {
                let v = a.value(row);
                if v.is_nan() {
                    return false; // a NaN's bits through Python's float: not sure of them
                }
                out.extend_from_slice(&v.to_le_bytes());
            }
            Values::Double(a) => out.extend_from_slice(&a.value(row).to_le_bytes()),
            Values::DoubleOf32(a) => {
                let v = a.value(row);
                if v.is_nan() {
                    return false;
                }
                out.extend_from_slice(&f64::from(v).to_le_bytes());
            }
            Values::Bytes(a) => bytes(out, a.value(row)),
            Values::Enum(a, symbols) => {
                let Some(index) = std::str::from_utf8(a.value(row)).ok().and_then(|s| symbols.get(s)) else {
                    return false;
                };
                long(out, *index);
            }
            Values::Fixed(a) => out.extend_from_slice(a.value(row)),
            Values::SizedBytes(a, size) => {
                let v = a.value(row);
                if v.len() != *size {
                    return false;
                }
                out.extend_from_slice(v);
            }
            Values::Record(fields) => return fields.iter().all(|field| field.write(row, out)),
            Values::Array(offsets, items) => {
                let (start, end) = offsets.range(row);
                if end > start {
                    long(out, (end - start) as i64);
                    if !(start..end).all(|item| items.write(item, out)) {
                        return false;
                    }
                }
                out.push(0);
            }
            Values::Map(offsets, keys, values) => {
                let (start, end) = offsets.range(row);
                if end > start {
                    // a dict keeps one value of a key given twice, where it first came: not written here
                    let mut seen = HashSet::with_capacity(end - start);
                    if !(start..end).all(|entry| seen.insert(keys.value(entry))) {
                        return false;
                    }
                    long(out, (end - start) as i64);
                    for entry in start..end {
                        bytes(out, keys.value(entry));
                        if !values.write(entry, out) {
                            return false;
                        }
                    }
                }
                out.push(0);
            }
            Values::Optional(..) => unreachable!("written above"),
        }
        true
    }
}

/// The writer schema paired with a column's Arrow type (`AvroEncoder` in lib.rs holds one).
pub struct Encoder {
    node: Node,
    prefix: Vec<u8>,
}

impl Encoder {
    /// The encoder of `schema`'s values from a column of `arrow`, each body after `prefix`; Err:
    /// why the pair has none (the column takes the Python path).
    pub fn new(schema: &str, arrow: &DataType, prefix: &[u8]) -> Result<Self, Unpaired> {
        let schema: Value = serde_json::from_str(schema).map_err(|e| format!("the schema is not JSON: {e}"))?;
        let mut names = HashMap::new();
        Names::collect(&schema, "", &mut names);
        if matches!(schema.as_str(), Some("bytes")) || schema.get("type").and_then(Value::as_str) == Some("bytes") {
            return Err("a bare bytes schema (written as the bytes themselves)".into());
        }
        let node = compile(&schema, arrow, &Names(names), 0)?;
        Ok(Self { node, prefix: prefix.to_vec() })
    }

    /// Each row's body (the prefix, then the Avro binary), None for a row the Python path writes.
    pub fn encode(&self, column: &ArrayRef) -> Result<BinaryArray, Unpaired> {
        let bound = bind(&self.node, column)?;
        let mut builder = BinaryBuilder::with_capacity(column.len(), column.len() * 32);
        let mut out = Vec::with_capacity(256);
        for row in 0..column.len() {
            out.clear();
            out.extend_from_slice(&self.prefix);
            // a None value: the Python path refuses it, whatever the schema (`["null", T]` too)
            if !bound.is_null(row) && bound.write(row, &mut out) {
                builder.append_value(&out);
            } else {
                builder.append_null();
            }
        }
        Ok(builder.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, ListArray, StringArray, StructArray};
    use arrow::datatypes::{Field, Fields, Int32Type};
    use std::sync::Arc;

    fn encoder(schema: &str, array: &ArrayRef) -> Encoder {
        Encoder::new(schema, array.data_type(), b"").unwrap()
    }

    #[test]
    fn zigzag_as_avro() {
        let mut out = Vec::new();
        for v in [0, -1, 1, -64, 64, i64::MAX, i64::MIN] {
            long(&mut out, v);
        }
        let expected: &[u8] = &[
            0, 1, 2, 0x7f, 0x80, 1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 1,
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn a_record_its_nulls_and_narrowed_integers() {
        let fields = Fields::from(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("tags", DataType::List(Arc::new(Field::new("item", DataType::Int32, true))), true),
        ]);
        let n: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(1 << 40), Some(3)]));
        let s: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), Some("b"), None]));
        let tags: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(5)]),
            Some(vec![]),
            Some(vec![]),
        ]));
        let column: ArrayRef = Arc::new(StructArray::new(fields, vec![n, s, tags], None));
        let schema = r#"{"type": "record", "name": "R", "fields": [
            {"name": "s", "type": ["null", "string"]}, {"name": "n", "type": "int"},
            {"name": "tags", "type": {"type": "array", "items": "long"}}]}"#;
        let encoded = encoder(schema, &column).encode(&column).unwrap();
        assert_eq!(encoded.value(0), &[2, 2, b'a', 2, 2, 10, 0]);
        assert!(encoded.is_null(1), "1 << 40 is outside an Avro int");
        assert_eq!(encoded.value(2), &[0, 6, 0]);
    }

    #[test]
    fn what_it_is_not_sure_of_compiles_to_nothing() {
        let column: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        for schema in [
            r#"["null", "string", "long"]"#,
            r#"{"type": "string", "logicalType": "json"}"#,
            r#""bytes""#,
            r#"{"type": "record", "name": "R", "fields": []}"#,
        ] {
            assert!(Encoder::new(schema, column.data_type(), b"").is_err(), "{schema}");
        }
    }
}
