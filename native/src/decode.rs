//! Bodies into the `value` column, a decoder per writer schema id, and the rows of a batch put
//! back in message order: Avro by arrow-avro, resolved to the query's reader schema (here); JSON
//! Schema checked and put in the column's type (`json_values.rs`); Protobuf read from the wire
//! bytes as the query's message (`protobuf_values.rs`).
//!
//! arrow-avro appends a datum to its builders field by field and keeps no way back: a datum that
//! fails half-way leaves the builders uneven. So a writer's decoder is *sealed* when a datum fails
//! (or does not use its whole body): the rows it took before are decoded again into a fresh
//! decoder and kept as a finished piece, and the failed row goes to the Python path, which says
//! what is wrong with it. Each row is decoded at most twice, whatever the payloads.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, BooleanArray, StructArray, UInt32Array};
use arrow::compute::kernels::{concat::concat, take::take};
use arrow::datatypes::DataType;
use arrow_avro::reader::{Decoder, DecoderMode, ReaderBuilder};
use arrow_avro::schema::{AvroSchema, Fingerprint, FingerprintAlgorithm, SchemaStore};

use crate::columns::Tail;
use crate::conform::{conform, conforms};
use crate::json_values::JsonDecoder;
use crate::protobuf_values::ProtobufDecoder;

/// What the Python side says of a writer schema id: its format (AVRO, JSON, PROTOBUF), its schema
/// (Avro: one self-contained JSON text; JSON Schema: the schema its values are checked against,
/// with its references and base URI; Protobuf: the reader's `FileDescriptorSet` in base64, with
/// one reference, the message's full name and the writer's message indexes of it in hex) and the
/// longest body that needs no decoding-limit check; None: its rows take the Python path.
pub type WriterSpec = Option<(String, String, Vec<(String, String)>, String, usize)>;

/// Where a row's value comes from.
#[derive(Clone, Copy)]
enum Slot {
    /// The `index`th row of decoder `decoder`'s array.
    Native { decoder: usize, index: usize },
    /// The Python path decodes it.
    Python,
}

/// The decoder of one Avro writer schema's bodies into rows of the `value` column.
struct AvroDecoder {
    id: u32,
    schema: String,
    reader_schema: String,
    batch_size: usize,
    decoder: Option<Decoder>,
    longest: usize,
    /// Bodies the current decoder took (to decode again when it is sealed).
    bodies: Vec<u8>,
    ends: Vec<usize>,
    /// Finished pieces of this batch, in row order.
    pieces: Vec<ArrayRef>,
    rows: usize,
    /// A sealed piece did not flush: this batch's rows of this writer are the Python path's.
    broken: bool,
}

/// The decoder of a writer schema id's bodies, by the schema's format.
enum WriterDecoder {
    Avro(Box<AvroDecoder>),
    Json(JsonDecoder),
    Protobuf(Box<ProtobufDecoder>),
}

impl WriterDecoder {
    fn longest(&self) -> usize {
        match self {
            WriterDecoder::Avro(d) => d.longest,
            WriterDecoder::Json(d) => d.longest,
            WriterDecoder::Protobuf(d) => d.longest,
        }
    }

    /// `body` decoded (its index in the decoder's rows), or None. `tail`: the bytes after a
    /// metadata id's number (None: the id was the payload's prefix), Protobuf's message indexes;
    /// a Protobuf writer takes only the indexes of the query's message, and no other writer any.
    fn decode(&mut self, body: &[u8], tail: Option<Tail>, target: &DataType) -> Option<usize> {
        match self {
            WriterDecoder::Protobuf(d) => {
                let body = match tail {
                    Some(tail) if tail.bytes() == d.indexes => body,
                    Some(_) => return None,
                    None => body.strip_prefix(d.indexes.as_slice())?,
                };
                d.decode(body)
            }
            _ if tail.is_some_and(|t| !t.bytes().is_empty()) => None,
            WriterDecoder::Avro(d) => d.decode(body),
            WriterDecoder::Json(d) => d.decode(body, target),
        }
    }

    fn finish(&mut self, target: &DataType) -> Result<ArrayRef, String> {
        match self {
            WriterDecoder::Avro(d) => d.finish(target),
            WriterDecoder::Json(d) => d.finish(target),
            WriterDecoder::Protobuf(d) => d.finish(target),
        }
    }

    /// Its next rows go to the Python path.
    fn stop(&mut self) {
        match self {
            WriterDecoder::Avro(d) => d.decoder = None,
            WriterDecoder::Json(d) => d.stop(),
            WriterDecoder::Protobuf(d) => d.stop(),
        }
    }
}

/// The value column of a batch being received.
pub struct Values {
    target: DataType,
    reader_schema: String,
    decoders: Vec<WriterDecoder>,
    /// Writer ids seen, with their index in `decoders` (None: the Python path).
    known: Vec<(u32, Option<usize>)>,
    slots: Vec<Slot>,
    batch_size: usize,
}

impl Values {
    pub fn new(target: DataType, reader_schema: String, batch_size: usize) -> Self {
        Self { target, reader_schema, decoders: Vec::new(), known: Vec::new(), slots: Vec::new(), batch_size }
    }

    /// The decoder of writer schema id `id` (its index), asking `spec` the first time it is seen;
    /// None: its rows are the Python path's.
    pub fn decoder_for(&mut self, id: u32, spec: impl FnOnce(u32) -> WriterSpec) -> Option<usize> {
        if let Some((_, found)) = self.known.iter().find(|(known, _)| *known == id) {
            return *found;
        }
        let made = spec(id).and_then(|(format, schema, references, base_uri, longest)| match format.as_str() {
            "AVRO" => self.avro_decoder(id, schema, longest).map(|d| WriterDecoder::Avro(Box::new(d))),
            "JSON" => {
                JsonDecoder::new(&schema, references, &base_uri, longest, &self.target).map(WriterDecoder::Json)
            }
            "PROTOBUF" => match references.as_slice() {
                [(message, indexes)] => ProtobufDecoder::new(&schema, message, indexes, longest, &self.target)
                    .map(|d| WriterDecoder::Protobuf(Box::new(d))),
                _ => None,
            },
            _ => None,
        });
        let index = made.map(|decoder| {
            self.decoders.push(decoder);
            self.decoders.len() - 1
        });
        self.known.push((id, index));
        index
    }

    fn avro_decoder(&self, id: u32, schema: String, longest: usize) -> Option<AvroDecoder> {
        let mut avro = AvroDecoder {
            id,
            schema,
            reader_schema: self.reader_schema.clone(),
            batch_size: self.batch_size,
            decoder: None,
            longest,
            bodies: Vec::new(),
            ends: Vec::new(),
            pieces: Vec::new(),
            rows: 0,
            broken: false,
        };
        let decoder = avro.new_decoder().ok()?;
        let decoded = DataType::Struct(decoder.schema().fields().clone());
        if !conforms(&decoded, &self.target) {
            return None;
        }
        avro.decoder = Some(decoder);
        Some(avro)
    }

    /// Adds the next row: `body` decoded by decoder `decoder` (`decoder_for`), or (None, or a
    /// body it cannot take) a row for the Python path. `tail`: the bytes after a metadata id's
    /// number (`columns::Framing`). Returns whether the row was decoded here.
    pub fn add(&mut self, decoder: Option<usize>, body: &[u8], tail: Option<Tail>) -> bool {
        let slot = match decoder {
            Some(d) if !body.is_empty() && body.len() <= self.decoders[d].longest() => {
                match self.decoders[d].decode(body, tail, &self.target) {
                    Some(index) => Slot::Native { decoder: d, index },
                    None => Slot::Python,
                }
            }
            _ => Slot::Python,
        };
        self.slots.push(slot);
        matches!(slot, Slot::Native { .. })
    }

    /// The column of the rows added since the last call, in the target type (null where the
    /// Python path decodes), and which rows were decoded here. A writer whose rows arrow-avro
    /// decoded but could not give as a column (it refuses some schemas only when it flushes: a
    /// `null` field in a nested record) leaves them, and its later rows, to the Python path.
    pub fn finish(&mut self) -> Result<(ArrayRef, BooleanArray), String> {
        let mut slots = std::mem::take(&mut self.slots);
        let mut arrays = Vec::with_capacity(self.decoders.len());
        for (d, decoder) in self.decoders.iter_mut().enumerate() {
            match decoder.finish(&self.target) {
                Ok(array) => arrays.push(array),
                Err(_) => {
                    decoder.stop(); // its next rows: the Python path
                    for slot in slots.iter_mut() {
                        if matches!(slot, Slot::Native { decoder, .. } if *decoder == d) {
                            *slot = Slot::Python;
                        }
                    }
                    arrays.push(new_null_array(&self.target, 0));
                }
            }
        }
        let native: BooleanArray = slots.iter().map(|s| Some(matches!(s, Slot::Native { .. }))).collect();
        Ok((self.column(&slots, arrays)?, native))
    }

    fn column(&self, slots: &[Slot], mut arrays: Vec<ArrayRef>) -> Result<ArrayRef, String> {
        let n = slots.len();
        let all_first = arrays.len() == 1
            && arrays[0].len() == n
            && slots.iter().all(|s| matches!(s, Slot::Native { decoder: 0, .. }));
        if all_first {
            return Ok(arrays.swap_remove(0)); // the usual batch: one writer schema, every row native
        }
        let mut offsets = Vec::with_capacity(arrays.len());
        let mut total = 0usize;
        for array in &arrays {
            offsets.push(total);
            total += array.len();
        }
        if total == 0 {
            return Ok(new_null_array(&self.target, n));
        }
        let indices: UInt32Array = slots
            .iter()
            .map(|slot| match slot {
                Slot::Native { decoder, index } => Some((offsets[*decoder] + index) as u32),
                Slot::Python => None,
            })
            .collect();
        let parts: Vec<&dyn Array> = arrays.iter().filter(|a| !a.is_empty()).map(|a| a.as_ref()).collect();
        let all = if parts.len() == 1 { arrays.iter().find(|a| !a.is_empty()).cloned().unwrap() } else {
            concat(&parts).map_err(|e| e.to_string())?
        };
        take(all.as_ref(), &indices, None).map_err(|e| e.to_string())
    }
}

/// Why values of `reader_schema` (as its own writer) cannot be decoded here into `target`; Ok
/// where they can.
pub fn check(reader_schema: &str, target: &DataType) -> Result<(), String> {
    let avro = AvroDecoder {
        id: 0,
        schema: reader_schema.to_string(),
        reader_schema: reader_schema.to_string(),
        batch_size: 1,
        decoder: None,
        longest: 0,
        bodies: Vec::new(),
        ends: Vec::new(),
        pieces: Vec::new(),
        rows: 0,
        broken: false,
    };
    let decoder = avro.new_decoder()?;
    let decoded = DataType::Struct(decoder.schema().fields().clone());
    conform(&arrow::array::new_empty_array(&decoded), target).map(|_| ()).map_err(|e| e.to_string())
}

impl AvroDecoder {
    fn new_decoder(&self) -> Result<Decoder, String> {
        let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
        store.set(Fingerprint::Id(self.id), AvroSchema::new(self.schema.clone())).map_err(|e| e.to_string())?;
        ReaderBuilder::new()
            .with_writer_schema_store(store)
            .with_active_fingerprint(Fingerprint::Id(self.id))
            .with_reader_schema(AvroSchema::new(self.reader_schema.clone()))
            .with_decoder_mode(DecoderMode::UnframedDatum)
            .with_batch_size(self.batch_size)
            .build_decoder()
            .map_err(|e| e.to_string())
    }

    /// Decodes one body; its index in this decoder's rows of the batch, or None (sealed).
    fn decode(&mut self, body: &[u8]) -> Option<usize> {
        let decoder = self.decoder.as_mut()?;
        match decoder.decode(body) {
            Ok(used) if used == body.len() => {
                self.bodies.extend_from_slice(body);
                self.ends.push(self.bodies.len());
                self.rows += 1;
                Some(self.rows - 1)
            }
            _ => {
                self.seal();
                None
            }
        }
    }

    /// After a failed datum: the rows the decoder took, decoded again into a finished piece.
    fn seal(&mut self) {
        let mut fresh = match self.new_decoder() {
            Ok(decoder) => decoder,
            Err(_) => {
                self.decoder = None; // cannot happen: it was built from the same builder before
                return;
            }
        };
        let mut start = 0;
        for &end in &self.ends {
            let _ = fresh.decode(&self.bodies[start..end]);
            start = end;
        }
        if !self.ends.is_empty() {
            match fresh.flush() {
                Ok(Some(batch)) => self.pieces.push(Arc::new(StructArray::from(batch))),
                _ => self.broken = true, // the rows it took go to the Python path (`finish`)
            }
        }
        self.bodies.clear();
        self.ends.clear();
        self.decoder = Some(fresh);
    }

    fn finish(&mut self, target: &DataType) -> Result<ArrayRef, String> {
        let mut pieces = std::mem::take(&mut self.pieces);
        if std::mem::take(&mut self.broken) {
            return Err(format!("writer schema id {}: a batch that did not flush", self.id));
        }
        self.bodies.clear();
        self.ends.clear();
        self.rows = 0;
        if let Some(decoder) = self.decoder.as_mut() {
            if let Some(batch) = decoder.flush().map_err(|e| format!("writer schema id {}: {e}", self.id))? {
                pieces.push(Arc::new(StructArray::from(batch)));
            }
        }
        let conformed = pieces
            .iter()
            .map(|piece| conform(piece, target))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("writer schema id {}: {e}", self.id))?;
        match conformed.len() {
            0 => Ok(new_null_array(target, 0)),
            1 => Ok(conformed.into_iter().next().unwrap()),
            _ => {
                let parts: Vec<&dyn Array> = conformed.iter().map(|a| a.as_ref()).collect();
                concat(&parts).map_err(|e| e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::AsArray;
    use arrow::datatypes::{Field, Fields, Int64Type};

    const WRITER: &str = r#"{"type":"record","name":"R","fields":[{"name":"n","type":"long"}]}"#;
    const READER: &str = r#"{"type":"record","name":"R","fields":[{"name":"n","type":"long"},
        {"name":"s","type":"string","default":"d"}]}"#;

    fn target() -> DataType {
        DataType::Struct(Fields::from(vec![
            Field::new("n", DataType::Int64, false),
            Field::new("s", DataType::Utf8, false),
        ]))
    }

    fn zigzag(n: i64) -> Vec<u8> {
        let mut v = ((n << 1) ^ (n >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    #[test]
    fn resolves_and_keeps_row_order_around_bad_rows() {
        let mut values = Values::new(target(), READER.into(), 16);
        let w = values.decoder_for(7, |_| Some(("AVRO".into(), WRITER.into(), Vec::new(), String::new(), 1000)));
        assert!(w.is_some());
        assert!(values.add(w, &zigzag(1), None));
        assert!(!values.add(w, &[0x80], None)); // truncated varint: sealed, to Python
        assert!(values.add(w, &zigzag(3), None));
        assert!(!values.add(w, &[zigzag(4), vec![9]].concat(), None)); // a byte too many
        assert!(!values.add(None, b"x", None));
        let (column, native) = values.finish().unwrap();
        assert_eq!(column.len(), 5);
        assert_eq!(native.iter().map(|b| b.unwrap()).collect::<Vec<_>>(), [true, false, true, false, false]);
        let s = column.as_struct();
        let n = s.column(0).as_primitive::<Int64Type>();
        assert_eq!((n.value(0), n.value(2)), (1, 3));
        assert!(column.is_null(1) && column.is_null(3) && column.is_null(4));
        assert_eq!(s.column(1).as_string::<i32>().value(0), "d");
    }

    #[test]
    fn a_writer_that_does_not_conform_is_left_to_python() {
        let union = r#"{"type":"record","name":"R","fields":[{"name":"n","type":["long","string"]}]}"#;
        let mut values = Values::new(target(), union.into(), 16);
        assert!(values.decoder_for(1, |_| Some(("AVRO".into(), union.into(), Vec::new(), String::new(), 1000))).is_none());
    }
}
