//! JSON Schema bodies into the `value` column: each body read onto a tape (`json_tape.rs`,
//! numbers kept as written), checked there against its writer's schema (the `jsonschema` crate,
//! built as `json.rs` builds its check, whose verdicts tests/unit/test_json_native.py holds to
//! jsonschema-rs's), and put in the column's type as the Python path's converters put it
//! (`reading/types.py`, `json_type`): a string column takes strings, an integer column integers
//! written as such within 64 bits, a number column any number a float64 holds exactly as Python's
//! would be, a struct an object (its other keys ignored, a missing one null), a map an object in
//! its keys' order, a list an array; null anywhere.
//!
//! Only what is sure is answered here; the rest goes to the Python path, which decides and words
//! it: a body the tape does not take (not JSON, a key twice, a lone surrogate: see `json_tape.rs`)
//! or with a run of 19 digits (which orjson may read as a float), a value the schema refuses, a
//! value the column would take otherwise than the Python path (`1.0` where an integer is typed,
//! an integer beyond 2^53 in a number column, a top level other than an object).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, MapArray, StringArray, StructArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Fields};
use jsonschema::Validator;

use crate::json::{build_validator, has_long_number};
use crate::json_tape::{Tape, TapeJson, TapeNode, TapeNumber};

/// The largest integer a float64 holds, and every one below it.
const EXACT_IN_FLOAT: i64 = 1 << 53;

/// The decoder of one JSON Schema writer schema's bodies (checked against `schema`) into rows of
/// the `value` column, a batch at a time.
pub struct JsonDecoder {
    /// None once its rows could not be given as a column: its next rows are the Python path's.
    validator: Option<Validator<TapeJson>>,
    pub longest: usize,
    /// The batch's bodies, read; `rows` are their roots.
    tape: Tape,
    rows: Vec<u32>,
}

impl JsonDecoder {
    /// The decoder of bodies checked against `schema` (with its `references`, resolved against
    /// `base_uri`) into `target`; None where `target` has a type this does not fill or the schema
    /// cannot be built (the Python path reads those rows).
    pub fn new(
        schema: &str,
        references: Vec<(String, String)>,
        base_uri: &str,
        longest: usize,
        target: &DataType,
    ) -> Option<Self> {
        if !typed(target) {
            return None;
        }
        let validator = build_validator::<TapeJson>(schema, references, base_uri).ok()?;
        Some(JsonDecoder { validator: Some(validator), longest, tape: Tape::default(), rows: Vec::new() })
    }

    /// Its next rows go to the Python path.
    pub fn stop(&mut self) {
        self.validator = None;
    }

    /// Takes one body; its index in this decoder's rows of the batch, or None (the Python path's).
    pub fn decode(&mut self, body: &[u8], target: &DataType) -> Option<usize> {
        let validator = self.validator.as_ref()?;
        if has_long_number(body) {
            return None;
        }
        let mark = self.tape.mark();
        let root = self.tape.read(body)?;
        if root.is_object() && fits(root, target) && validator.is_valid(root) {
            self.rows.push(root.index());
            return Some(self.rows.len() - 1);
        }
        self.tape.reset(mark);
        None
    }

    /// The rows taken since the last call, as an array of `target`.
    pub fn finish(&mut self, target: &DataType) -> Result<ArrayRef, String> {
        let values: Vec<Option<TapeNode<'_>>> = self.rows.iter().map(|&root| Some(self.tape.node(root))).collect();
        let column = column(&values, target);
        self.rows.clear();
        self.tape.clear();
        column
    }
}

/// Whether `target` is made of the types `json_type` gives a typed column (what this fills).
pub fn typed(target: &DataType) -> bool {
    match target {
        DataType::Utf8 | DataType::Int64 | DataType::Float64 | DataType::Boolean => true,
        DataType::Struct(fields) => fields.iter().all(|f| f.is_nullable() && typed(f.data_type())),
        DataType::List(item) => item.is_nullable() && typed(item.data_type()),
        DataType::Map(entries, false) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                kv[0].data_type() == &DataType::Utf8 && kv[1].is_nullable() && typed(kv[1].data_type())
            }
            _ => false,
        },
        _ => false,
    }
}

/// Whether the Python path's converter puts `value` in a column of `target` as `column` does.
fn fits(value: TapeNode<'_>, target: &DataType) -> bool {
    if value.is_null() {
        return true;
    }
    match target {
        DataType::Utf8 => value.str().is_some(),
        DataType::Boolean => value.bool().is_some(),
        DataType::Int64 => matches!(value.number(), Some(TapeNumber::Int(_))),
        DataType::Float64 => value.number().and_then(float).is_some(),
        DataType::Struct(fields) => {
            let mut next = 0;
            value.is_object()
                && value.members().all(|(key, v)| {
                    field_of(fields, key, &mut next).is_none_or(|f| fits(v, fields[f].data_type()))
                })
        }
        DataType::List(item) => value.items().is_some_and(|mut items| items.all(|v| fits(v, item.data_type()))),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) => value.is_object() && value.members().all(|(_, v)| fits(v, kv[1].data_type())),
            _ => false,
        },
        _ => false,
    }
}

/// A number as a float64 column holds it from Python: a float as written (read exactly, and
/// finite: the tape holds no other), an integer where the float is exactly it; None otherwise
/// (pyarrow refuses such an integer).
fn float(n: TapeNumber<'_>) -> Option<f64> {
    match n {
        // `as`: exact within the bound.
        #[allow(clippy::cast_precision_loss)]
        TapeNumber::Int(i) => (-EXACT_IN_FLOAT..=EXACT_IN_FLOAT).contains(&i).then_some(i as f64),
        TapeNumber::Float(x, _) => Some(x),
    }
}

/// The index of the field named `key`, looked for first at `next` (a body's keys mostly come in
/// the schema's order), which it moves past the one found.
fn field_of(fields: &Fields, key: &str, next: &mut usize) -> Option<usize> {
    let found = match fields.get(*next) {
        Some(f) if f.name() == key => *next,
        _ => fields.iter().position(|f| f.name() == key)?,
    };
    *next = found + 1;
    Some(found)
}

/// A value that is not null.
fn present<'a>(value: &Option<TapeNode<'a>>) -> Option<TapeNode<'a>> {
    value.filter(|v| !v.is_null())
}

fn integer(n: TapeNumber<'_>) -> Option<i64> {
    match n {
        TapeNumber::Int(i) => Some(i),
        TapeNumber::Float(..) => None,
    }
}

/// The column of `values` (each one `fits`; None: a null row of a parent), of type `target`.
fn column(values: &[Option<TapeNode<'_>>], target: &DataType) -> Result<ArrayRef, String> {
    Ok(match target {
        DataType::Utf8 => Arc::new(values.iter().map(|v| present(v).and_then(|v| v.str())).collect::<StringArray>()),
        DataType::Int64 => Arc::new(
            values.iter().map(|v| present(v).and_then(|v| v.number()).and_then(integer)).collect::<Int64Array>(),
        ),
        DataType::Float64 => Arc::new(
            values.iter().map(|v| present(v).and_then(|v| v.number()).and_then(float)).collect::<Float64Array>(),
        ),
        DataType::Boolean => {
            Arc::new(values.iter().map(|v| present(v).and_then(|v| v.bool())).collect::<BooleanArray>())
        }
        DataType::Struct(fields) => {
            let nulls = NullBuffer::from(values.iter().map(|v| present(v).is_some()).collect::<Vec<_>>());
            // Each row's members once, each to its field's child (no key is there twice).
            let mut children: Vec<Vec<Option<TapeNode<'_>>>> = vec![vec![None; values.len()]; fields.len()];
            for (row, v) in values.iter().enumerate() {
                let mut next = 0;
                for (key, member) in present(v).into_iter().flat_map(|v| v.members()) {
                    if let Some(f) = field_of(fields, key, &mut next) {
                        children[f][row] = Some(member);
                    }
                }
            }
            let children = children
                .iter()
                .zip(fields.iter())
                .map(|(child, f)| column(child, f.data_type()))
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(StructArray::try_new(fields.clone(), children, Some(nulls)).map_err(|e| e.to_string())?)
        }
        DataType::List(item) => {
            let (mut lengths, mut items, mut valid) = (Vec::new(), Vec::new(), Vec::new());
            for v in values {
                let array = present(v).filter(|v| v.items().is_some());
                valid.push(array.is_some());
                lengths.push(array.map_or(0, |a| a.len()));
                items.extend(array.and_then(|a| a.items()).into_iter().flatten().map(Some));
            }
            let child = column(&items, item.data_type())?;
            let offsets = OffsetBuffer::from_lengths(lengths);
            Arc::new(
                ListArray::try_new(item.clone(), offsets, child, Some(NullBuffer::from(valid)))
                    .map_err(|e| e.to_string())?,
            )
        }
        DataType::Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(format!("a map of {}", entries.data_type()));
            };
            let (mut lengths, mut keys, mut items, mut valid) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for v in values {
                let object = present(v).filter(TapeNode::is_object);
                valid.push(object.is_some());
                lengths.push(object.map_or(0, |o| o.len()));
                for (key, item) in object.into_iter().flat_map(|o| o.members()) {
                    keys.push(key);
                    items.push(Some(item));
                }
            }
            let keys: ArrayRef = Arc::new(StringArray::from(keys));
            let pairs = StructArray::try_new(kv.clone(), vec![keys, column(&items, kv[1].data_type())?], None)
                .map_err(|e| e.to_string())?;
            Arc::new(
                MapArray::try_new(
                    entries.clone(),
                    OffsetBuffer::from_lengths(lengths),
                    pairs,
                    Some(NullBuffer::from(valid)),
                    *sorted,
                )
                .map_err(|e| e.to_string())?,
            )
        }
        other => return Err(format!("a JSON value into {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Field, Fields, Float64Type, Int64Type};

    const BASE: &str = "json-schema:///";
    const SCHEMA: &str = r#"{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number"},
        "tags":{"type":"array","items":{"type":["string","null"]}}},"required":["n"]}"#;

    fn target() -> DataType {
        DataType::Struct(Fields::from(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("x", DataType::Float64, true),
            Field::new_list("tags", Field::new("element", DataType::Utf8, true), true),
        ]))
    }

    #[test]
    fn takes_what_the_python_path_converts_alike_and_leaves_the_rest() {
        let t = target();
        let mut w = JsonDecoder::new(SCHEMA, Vec::new(), BASE, 1 << 20, &t).unwrap();
        assert_eq!(w.decode(br#"{"n": 1, "x": 2, "tags": ["a", null], "other": {}}"#, &t), Some(0));
        assert_eq!(w.decode(br#"{"n": 2, "x": 0.1}"#, &t), Some(1));
        assert_eq!(w.decode(br#"{"x": 1}"#, &t), None); // the schema refuses it
        assert_eq!(w.decode(br#"{"n": 1.0}"#, &t), None); // an integer to JSON Schema, a float to Python
        assert_eq!(w.decode(br#"{"n": 1, "x": 9007199254740993}"#, &t), None); // not exact in a float
        assert_eq!(w.decode(br#"{"n": 1234567890123456789}"#, &t), None); // 19 digits: orjson's doubt
        assert_eq!(w.decode(br#"[1]"#, &t), None);
        assert_eq!(w.decode(br#"{"n": 1"#, &t), None);
        let column = w.finish(&t).unwrap();
        let s = column.as_struct();
        assert_eq!(s.len(), 2);
        assert_eq!(s.column(0).as_primitive::<Int64Type>().values(), &[1, 2]);
        assert_eq!(s.column(1).as_primitive::<Float64Type>().values(), &[2.0, 0.1]);
        let tags = s.column(2).as_list::<i32>();
        assert!(tags.is_valid(0) && tags.is_null(1));
        assert_eq!(tags.value(0).as_string::<i32>().iter().collect::<Vec<_>>(), [Some("a"), None]);
    }

    #[test]
    fn an_object_s_keys_in_any_order_each_to_its_field() {
        let t = target();
        let mut w = JsonDecoder::new(SCHEMA, Vec::new(), BASE, 1 << 20, &t).unwrap();
        assert_eq!(w.decode(br#"{"tags": ["t"], "zz": [1], "x": 0.5, "n": 7}"#, &t), Some(0));
        assert_eq!(w.decode(br#"{"x": 1.5, "n": 8}"#, &t), Some(1));
        assert_eq!(w.decode(br#"{"n": 9, "other": "x"}"#, &t), Some(2));
        assert_eq!(w.decode(br#"{"n": 9, "x": "not a number"}"#, &t), None); // the schema refuses it
        assert_eq!(w.decode(br#"{"n": 9, "n": 10}"#, &t), None); // a key twice: Python's dict decides
        let column = w.finish(&t).unwrap();
        let s = column.as_struct();
        assert_eq!(s.column(0).as_primitive::<Int64Type>().values(), &[7, 8, 9]);
        let x = s.column(1).as_primitive::<Float64Type>();
        assert_eq!((x.value(0), x.value(1), x.is_null(2)), (0.5, 1.5, true));
        let tags = s.column(2).as_list::<i32>();
        assert!(tags.is_valid(0) && tags.is_null(1) && tags.is_null(2));
    }

    #[test]
    fn a_map_keeps_its_keys_order() {
        let entries = Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::Int64, true),
            ])),
            false,
        );
        let t = DataType::Struct(Fields::from(vec![Field::new(
            "m",
            DataType::Map(Arc::new(entries), false),
            true,
        )]));
        assert!(typed(&t));
        let mut w = JsonDecoder::new(r#"{"type":"object"}"#, Vec::new(), BASE, 1 << 20, &t).unwrap();
        assert_eq!(w.decode(br#"{"m": {"b": 1, "a": null}}"#, &t), Some(0));
        let column = w.finish(&t).unwrap();
        let map = column.as_struct().column(0).as_map();
        let keys = map.keys().as_string::<i32>().iter().collect::<Vec<_>>();
        assert_eq!(keys, [Some("b"), Some("a")]);
    }
}

