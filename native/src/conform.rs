//! Arrow arrays in the exact types the Spark source declares.
//!
//! arrow-avro types its output after Avro (an enum is a dictionary, a `fixed` a fixed-size binary,
//! a timestamp has the time zone "+00:00", a `uuid` is 16 bytes, a list's item is called
//! "item"); the source declares Spark's mapping (`reading/types.py`, in pyarrow's types): strings,
//! binaries, `timestamp[us, tz=UTC]`, the field names pyarrow gives. Spark refuses a batch whose
//! schema differs in anything, names and nullability included, so every column is brought to
//! the declared type here: by a cast where the values change form, by retagging the same
//! buffers where only names differ.

use std::sync::Arc;

use arrow::array::{
    make_array, Array, ArrayData, ArrayRef, AsArray, FixedSizeBinaryArray, StringBuilder,
    StructArray,
};
use arrow::compute::kernels::cast::{can_cast_types, cast};
use arrow::datatypes::{DataType, Fields, TimeUnit};
use arrow::error::ArrowError;

/// `array` as an array of `target`, or an error when its values cannot take that type.
pub fn conform(array: &ArrayRef, target: &DataType) -> Result<ArrayRef, ArrowError> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    match (array.data_type(), target) {
        (DataType::Struct(_), DataType::Struct(fields)) => conform_struct(array, fields),
        (DataType::List(_), DataType::List(item)) => {
            let list = array.as_list::<i32>();
            let values = conform(list.values(), item.data_type())?;
            with_child(array, values, target)
        }
        (DataType::Map(_, _), DataType::Map(entries, _)) => {
            let map = array.as_map();
            let entries_array: ArrayRef = Arc::new(map.entries().clone());
            let values = conform(&entries_array, entries.data_type())?;
            with_child(array, values, target)
        }
        (DataType::FixedSizeBinary(16), DataType::Utf8) => Ok(uuid_text(array)),
        (DataType::Time32(TimeUnit::Millisecond), DataType::Int32)
        | (DataType::Time64(TimeUnit::Microsecond), DataType::Int64) => retag(array.to_data(), target),
        (from, to) if same_layout(from, to) => retag(array.to_data(), target),
        (from, to) if scalar(from) && scalar(to) && can_cast_types(from, to) => {
            let cast_array = cast(array, to)?;
            retag(cast_array.to_data(), target)
        }
        (from, to) => Err(ArrowError::CastError(format!("no native conversion from {from} to {to}"))),
    }
}

/// Whether values of `from` conform to `target` (checked once per writer schema, on no rows).
pub fn conforms(from: &DataType, target: &DataType) -> bool {
    conform(&arrow::array::new_empty_array(from), target).is_ok()
}

fn conform_struct(array: &ArrayRef, fields: &Fields) -> Result<ArrayRef, ArrowError> {
    let source = array.as_struct();
    if source.num_columns() != fields.len() {
        return Err(ArrowError::CastError(format!(
            "a struct of {} fields cannot be a struct of {}",
            source.num_columns(),
            fields.len()
        )));
    }
    let mut columns = Vec::with_capacity(fields.len());
    for (field, column) in fields.iter().zip(source.columns()) {
        columns.push(conform(column, field.data_type())?);
    }
    let nulls = source.nulls().cloned();
    Ok(Arc::new(StructArray::try_new_with_length(fields.clone(), columns, nulls, source.len())?))
}

/// `array` (a list or a map) with `child` as its child, typed `target`; validated.
fn with_child(array: &ArrayRef, child: ArrayRef, target: &DataType) -> Result<ArrayRef, ArrowError> {
    let data = array.to_data().into_builder().data_type(target.clone()).child_data(vec![child.to_data()]);
    Ok(make_array(data.build()?))
}

/// The same buffers under `target`, whose layout must be the data's (names, nullability and time
/// zones may differ); validated.
fn retag(data: ArrayData, target: &DataType) -> Result<ArrayRef, ArrowError> {
    let children = match target {
        DataType::List(item) => vec![child_as(&data, 0, item.data_type())?],
        DataType::Map(entries, _) => vec![child_as(&data, 0, entries.data_type())?],
        DataType::Struct(fields) => fields
            .iter()
            .enumerate()
            .map(|(i, field)| child_as(&data, i, field.data_type()))
            .collect::<Result<_, _>>()?,
        _ => data.child_data().to_vec(),
    };
    let retagged = data.into_builder().data_type(target.clone()).child_data(children).build()?;
    Ok(make_array(retagged))
}

fn child_as(data: &ArrayData, index: usize, target: &DataType) -> Result<ArrayData, ArrowError> {
    let child = data
        .child_data()
        .get(index)
        .ok_or_else(|| ArrowError::CastError(format!("no child {index} to make a {target}")))?;
    Ok(retag(child.clone(), target)?.to_data())
}

/// Whether two types keep their values in the same buffers (they may differ in names,
/// nullability, time zones).
fn same_layout(from: &DataType, to: &DataType) -> bool {
    match (from, to) {
        (DataType::Timestamp(a, _), DataType::Timestamp(b, _)) => a == b,
        (DataType::List(a), DataType::List(b)) => same_layout(a.data_type(), b.data_type()),
        (DataType::Map(a, _), DataType::Map(b, _)) => same_layout(a.data_type(), b.data_type()),
        (DataType::Struct(a), DataType::Struct(b)) => {
            a.len() == b.len()
                && a.iter().zip(b.iter()).all(|(x, y)| same_layout(x.data_type(), y.data_type()))
        }
        _ => from == to,
    }
}

fn scalar(data_type: &DataType) -> bool {
    !data_type.is_nested()
}

/// Avro's `uuid` (arrow-avro: 16 bytes) as the text Python's `str(uuid.UUID)` gives.
fn uuid_text(array: &ArrayRef) -> ArrayRef {
    let bytes: &FixedSizeBinaryArray = array.as_fixed_size_binary();
    let mut out = StringBuilder::with_capacity(bytes.len(), bytes.len() * 36);
    let mut text = String::with_capacity(36);
    for value in bytes.iter() {
        match value {
            None => out.append_null(),
            Some(b) => {
                text.clear();
                for (i, byte) in b.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        text.push('-');
                    }
                    text.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
                    text.push(char::from_digit(u32::from(byte & 15), 16).unwrap_or('0'));
                }
                out.append_value(&text);
            }
        }
    }
    Arc::new(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{DictionaryArray, Int32Array, ListArray, TimestampMillisecondArray};
    use arrow::datatypes::{Field, Int32Type};

    fn field(name: &str, data_type: DataType, nullable: bool) -> Arc<Field> {
        Arc::new(Field::new(name, data_type, nullable))
    }

    #[test]
    fn an_enum_becomes_its_names() {
        let keys = Int32Array::from(vec![Some(1), None, Some(0)]);
        let values: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["A", "B"]));
        let array: ArrayRef = Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values).unwrap());
        let out = conform(&array, &DataType::Utf8).unwrap();
        let strings = out.as_string::<i32>();
        assert_eq!(strings.value(0), "B");
        assert!(strings.is_null(1));
        assert_eq!(strings.value(2), "A");
    }

    #[test]
    fn millis_become_micros_in_utc() {
        let array: ArrayRef =
            Arc::new(TimestampMillisecondArray::from(vec![Some(1_500)]).with_timezone("+00:00"));
        let target = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let out = conform(&array, &target).unwrap();
        assert_eq!(out.data_type(), &target);
        assert_eq!(out.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().value(0), 1_500_000);
    }

    #[test]
    fn a_list_item_takes_the_declared_name() {
        let array: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            None,
        ]));
        let target = DataType::List(field("element", DataType::Int64, false));
        let out = conform(&array, &target).unwrap();
        assert_eq!(out.data_type(), &target);
        assert!(out.is_null(1));
    }

    #[test]
    fn a_uuid_is_its_text() {
        let bytes: Vec<u8> = (0u8..16).collect();
        let array: ArrayRef =
            Arc::new(FixedSizeBinaryArray::try_from_iter(vec![bytes].into_iter()).unwrap());
        let out = conform(&array, &DataType::Utf8).unwrap();
        assert_eq!(out.as_string::<i32>().value(0), "00010203-0405-0607-0809-0a0b0c0d0e0f");
    }

    #[test]
    fn a_union_does_not_conform() {
        assert!(!conforms(
            &DataType::Union(arrow::datatypes::UnionFields::empty(), arrow::datatypes::UnionMode::Dense),
            &DataType::Utf8
        ));
    }
}
