//! JSON bodies read onto a tape: a batch's values in one flat list of nodes, their strings in one
//! text, no allocation a row once the batch's first rows have grown them. The JSON Schema check
//! reads the tape in place (`TapeJson`, the `jsonschema` crate's `Json` over it, as `json.rs`'s
//! `PyJson` is over Python objects), and `json_values.rs` builds the columns from it.
//!
//! The reader takes only what it is sure Python's reader (orjson) reads the same way, and answers
//! None for the rest, which the Python path reads and words: a body that is not UTF-8 or not
//! JSON, a string with a control character or a lone surrogate, an object with a key twice (a
//! dict keeps the last value at the first key's place), a number that overflows a float64, more
//! than `MAX_DEPTH` levels. Numbers keep their text; an integer written as one (no fraction, no
//! exponent) is held as an i64 (the caller sends bodies with a run of 19 digits to the Python
//! path, so every such integer fits).

use std::borrow::Cow;
use std::collections::HashSet;

use jsonschema::json::{cmp, Array, Json, JsonNumber, Node, NodeIdentity, Object};
use jsonschema::JsonType;
use serde_json::{Map, Number, Value};

/// serde_json's own depth limit: deeper bodies are the Python path's.
const MAX_DEPTH: usize = 128;
/// Keys compared pairwise for a repeat up to this many; a set above.
const PAIRWISE_KEYS: usize = 16;

/// One node. A container's children follow it: an array's items, an object's key (a `Str`) and
/// value pairs; `end` is the index past its last descendant.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Null,
    Bool(bool),
    Int(i64),
    /// A number written with a fraction or an exponent: its value and its text.
    Float(f64, u32, u32),
    /// (start, length) in the tape's text.
    Str(u32, u32),
    Array { count: u32, end: u32 },
    Object { count: u32, end: u32 },
}

/// A place on a tape.
#[derive(Clone, Copy)]
pub struct Mark {
    nodes: usize,
    text: usize,
}

/// The values of the bodies read since the last `clear`.
#[derive(Default)]
pub struct Tape {
    nodes: Vec<Tok>,
    text: String,
}

impl Tape {
    /// Empties the tape, keeping its memory for the next batch.
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.text.clear();
    }

    /// Where the tape ends: `reset` goes back to it.
    pub fn mark(&self) -> Mark {
        Mark { nodes: self.nodes.len(), text: self.text.len() }
    }

    /// Drops what was read after `mark`.
    pub fn reset(&mut self, mark: Mark) {
        self.nodes.truncate(mark.nodes);
        self.text.truncate(mark.text);
    }

    /// Reads one body onto the tape: its root node, or None (and the tape as it was).
    pub fn read(&mut self, body: &[u8]) -> Option<TapeNode<'_>> {
        let mark = self.mark();
        let root = u32::try_from(mark.nodes).ok();
        let text = std::str::from_utf8(body).ok();
        let read = root.zip(text).and_then(|(root, text)| {
            let mut reader = Reader { text, bytes: body, at: 0, tape: self };
            reader.value(0)?;
            reader.space();
            (reader.at == body.len()).then_some(root)
        });
        match read {
            Some(root) => Some(self.node(root)),
            None => {
                self.reset(mark);
                None
            }
        }
    }

    /// The node at `index`.
    pub fn node(&self, index: u32) -> TapeNode<'_> {
        TapeNode { tape: self, index }
    }

    fn tok(&self, index: u32) -> Tok {
        self.nodes[index as usize]
    }

    fn str(&self, start: u32, len: u32) -> &str {
        &self.text[start as usize..(start + len) as usize]
    }

    /// The index past `index` and its descendants.
    fn after(&self, index: u32) -> u32 {
        match self.tok(index) {
            Tok::Array { end, .. } | Tok::Object { end, .. } => end,
            _ => index + 1,
        }
    }
}

/// The reader of one body onto a tape.
struct Reader<'b, 't> {
    /// The body, UTF-8, and its bytes.
    text: &'b str,
    bytes: &'b [u8],
    at: usize,
    tape: &'t mut Tape,
}

impl Reader<'_, '_> {
    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn push(&mut self, tok: Tok) -> Option<u32> {
        let index = u32::try_from(self.tape.nodes.len()).ok()?;
        self.tape.nodes.push(tok);
        Some(index)
    }

    fn end(&self) -> Option<u32> {
        u32::try_from(self.tape.nodes.len()).ok()
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.space();
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => {
                let (start, len) = self.string()?;
                self.push(Tok::Str(start, len)).map(drop)
            }
            b't' => self.literal(b"true", Tok::Bool(true)),
            b'f' => self.literal(b"false", Tok::Bool(false)),
            b'n' => self.literal(b"null", Tok::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], tok: Tok) -> Option<()> {
        self.bytes.get(self.at..)?.starts_with(word).then_some(())?;
        self.at += word.len();
        self.push(tok).map(drop)
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        let index = self.push(Tok::Array { count: 0, end: 0 })?;
        let count = self.members(b']', |reader| reader.value(depth + 1))?;
        let end = self.end()?;
        self.tape.nodes[index as usize] = Tok::Array { count, end };
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        let index = self.push(Tok::Object { count: 0, end: 0 })?;
        let count = self.members(b'}', |reader| {
            reader.space();
            if reader.peek()? != b'"' {
                return None;
            }
            let (start, len) = reader.string()?;
            reader.push(Tok::Str(start, len))?;
            reader.space();
            if reader.peek()? != b':' {
                return None;
            }
            reader.at += 1;
            reader.value(depth + 1)
        })?;
        let end = self.end()?;
        self.tape.nodes[index as usize] = Tok::Object { count, end };
        (!self.tape.node(index).has_repeated_key()).then_some(())
    }

    /// A container's members from its opening bracket to `close`, each read by `member`, with
    /// commas between them: how many.
    fn members(&mut self, close: u8, mut member: impl FnMut(&mut Self) -> Option<()>) -> Option<u32> {
        self.at += 1;
        self.space();
        let mut count = 0u32;
        if self.peek()? == close {
            self.at += 1;
            return Some(count);
        }
        loop {
            member(self)?;
            count += 1;
            self.space();
            match self.peek()? {
                b',' => self.at += 1,
                b if b == close => {
                    self.at += 1;
                    return Some(count);
                }
                _ => return None,
            }
        }
    }

    /// A string from its opening quote: its (start, length) in the tape's text.
    fn string(&mut self) -> Option<(u32, u32)> {
        self.at += 1;
        let start = self.tape.text.len();
        loop {
            let run = self.bytes[self.at..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
            // Between two ASCII bytes: char boundaries.
            self.tape.text.push_str(self.text.get(self.at..self.at + run)?);
            self.at += run;
            match self.bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    break;
                }
                b'\\' => self.escape()?,
                _ => return None, // a control character
            }
        }
        let start32 = u32::try_from(start).ok()?;
        let len = u32::try_from(self.tape.text.len() - start).ok()?;
        start32.checked_add(len)?;
        Some((start32, len))
    }

    /// One escape, from its backslash.
    fn escape(&mut self) -> Option<()> {
        let letter = *self.bytes.get(self.at + 1)?;
        self.at += 2;
        let c = match letter {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex()?;
                match high {
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
                            return None;
                        }
                        self.at += 2;
                        let low = self.hex()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    _ => char::from_u32(high)?, // None for a lone low surrogate
                }
            }
            _ => return None,
        };
        self.tape.text.push(c);
        Some(())
    }

    fn hex(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// A number as JSON writes one: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
            integer = false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
            integer = false;
        }
        let written = self.text.get(start..self.at)?; // ASCII: the grammar above

        if integer {
            return self.push(Tok::Int(written.parse().ok()?)).map(drop);
        }
        let value: f64 = written.parse().ok()?;
        if !value.is_finite() {
            return None;
        }
        let text = u32::try_from(self.tape.text.len()).ok()?;
        self.tape.text.push_str(written);
        self.push(Tok::Float(value, text, u32::try_from(written.len()).ok()?)).map(drop)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }
}

/// One value on a tape.
#[derive(Clone, Copy)]
pub struct TapeNode<'a> {
    tape: &'a Tape,
    index: u32,
}

impl<'a> TapeNode<'a> {
    fn tok(&self) -> Tok {
        self.tape.tok(self.index)
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn is_null(&self) -> bool {
        self.tok() == Tok::Null
    }

    pub fn str(&self) -> Option<&'a str> {
        match self.tok() {
            Tok::Str(start, len) => Some(self.tape.str(start, len)),
            _ => None,
        }
    }

    pub fn bool(&self) -> Option<bool> {
        match self.tok() {
            Tok::Bool(flag) => Some(flag),
            _ => None,
        }
    }

    pub fn number(&self) -> Option<TapeNumber<'a>> {
        match self.tok() {
            Tok::Int(n) => Some(TapeNumber::Int(n)),
            Tok::Float(x, start, len) => Some(TapeNumber::Float(x, self.tape.str(start, len))),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self.tok(), Tok::Object { .. })
    }

    /// An object's members in their order; nothing for any other value.
    pub fn members(&self) -> Members<'a> {
        let (count, first) = match self.tok() {
            Tok::Object { count, .. } => (count, self.index + 1),
            _ => (0, self.index),
        };
        Members { tape: self.tape, next: first, left: count }
    }

    /// An object's member `name`.
    pub fn field(&self, name: &str) -> Option<TapeNode<'a>> {
        self.members().find(|(key, _)| *key == name).map(|(_, value)| value)
    }

    /// An array's items in their order, or None for any other value.
    pub fn items(&self) -> Option<Items<'a>> {
        match self.tok() {
            Tok::Array { count, .. } => Some(Items { tape: self.tape, next: self.index + 1, left: count }),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        match self.tok() {
            Tok::Array { count, .. } | Tok::Object { count, .. } => count as usize,
            _ => 0,
        }
    }

    fn has_repeated_key(&self) -> bool {
        if self.len() <= PAIRWISE_KEYS {
            let mut keys = [""; PAIRWISE_KEYS];
            for (i, (key, _)) in self.members().enumerate() {
                if keys[..i].contains(&key) {
                    return true;
                }
                keys[i] = key;
            }
            false
        } else {
            let mut seen = HashSet::with_capacity(self.len());
            !self.members().all(|(key, _)| seen.insert(key))
        }
    }

    /// The value as serde_json holds it (for errors, `const`, `enum` and `uniqueItems`).
    fn value(&self) -> Value {
        match self.tok() {
            Tok::Null => Value::Null,
            Tok::Bool(flag) => Value::Bool(flag),
            Tok::Int(_) | Tok::Float(..) => self.number().map_or(Value::Null, |n| Value::Number(n.number())),
            Tok::Str(..) => Value::String(self.str().unwrap_or_default().to_owned()),
            Tok::Array { .. } => Value::Array(self.items().into_iter().flatten().map(|item| item.value()).collect()),
            Tok::Object { .. } => Value::Object(
                self.members().map(|(key, value)| (key.to_owned(), value.value())).collect::<Map<_, _>>(),
            ),
        }
    }
}

/// An object's (key, value) pairs.
pub struct Members<'a> {
    tape: &'a Tape,
    next: u32,
    left: u32,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, TapeNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let key = self.tape.node(self.next).str().unwrap_or_default();
        let value = self.tape.node(self.next + 1);
        self.next = self.tape.after(self.next + 1);
        Some((key, value))
    }
}

/// An array's items.
pub struct Items<'a> {
    tape: &'a Tape,
    next: u32,
    left: u32,
}

impl<'a> Iterator for Items<'a> {
    type Item = TapeNode<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let item = self.tape.node(self.next);
        self.next = self.tape.after(self.next);
        Some(item)
    }
}

/// A number of the tape: an integer written as one, or a float with its text.
#[derive(Clone, Copy)]
pub enum TapeNumber<'a> {
    Int(i64),
    Float(f64, &'a str),
}

impl TapeNumber<'_> {
    fn number(&self) -> Number {
        match *self {
            TapeNumber::Int(n) => Number::from(n),
            TapeNumber::Float(x, text) => text.parse().ok().or_else(|| Number::from_f64(x)).unwrap_or_else(|| Number::from(0)),
        }
    }
}

impl JsonNumber for TapeNumber<'_> {
    fn as_u64(&self) -> Option<u64> {
        match *self {
            TapeNumber::Int(n) => u64::try_from(n).ok(),
            TapeNumber::Float(..) => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match *self {
            TapeNumber::Int(n) => Some(n),
            TapeNumber::Float(..) => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        // `as`: the nearest double, as serde_json's `Number::as_f64` gives an integer's.
        #[allow(clippy::cast_precision_loss)]
        Some(match *self {
            TapeNumber::Int(n) => n as f64,
            TapeNumber::Float(x, _) => x,
        })
    }

    fn as_str(&self) -> Cow<'_, str> {
        match *self {
            TapeNumber::Int(n) => Cow::Owned(n.to_string()),
            TapeNumber::Float(_, text) => Cow::Borrowed(text),
        }
    }

    fn to_number(&self) -> Cow<'_, Number> {
        Cow::Owned(self.number())
    }

    fn is_integer(&self) -> bool {
        match self {
            TapeNumber::Int(_) => true,
            TapeNumber::Float(..) => JsonNumber::is_integer(&self.number()), // `1.0`, `1e2`: exactly
        }
    }

    fn is_written_as_integer(&self) -> bool {
        matches!(self, TapeNumber::Int(_))
    }
}

/// The representation the validator reads: a tape's nodes in place.
pub struct TapeJson;

impl Json for TapeJson {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = Tape;

    /// A lookup walks the object's members: a pass over them replaces several lookups.
    const KEYS_PER_LOOKUP: usize = 8;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>(buffer: &mut Tape, string: &str, f: impl FnOnce(TapeNode<'_>) -> T) -> T {
        buffer.clear();
        buffer.text.push_str(string);
        let len = u32::try_from(string.len()).unwrap_or(u32::MAX);
        buffer.nodes.push(Tok::Str(0, len));
        f(buffer.node(0))
    }
}

impl<'a> Node<'a, TapeJson> for TapeNode<'a> {
    type Object = TapeNode<'a>;
    type Array = TapeNode<'a>;
    type Number = TapeNumber<'a>;

    fn as_object(&self) -> Option<TapeNode<'a>> {
        self.is_object().then_some(*self)
    }

    fn as_array(&self) -> Option<TapeNode<'a>> {
        matches!(self.tok(), Tok::Array { .. }).then_some(*self)
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        self.str().map(Cow::Borrowed)
    }

    fn as_number(&self) -> Option<TapeNumber<'a>> {
        self.number()
    }

    fn as_boolean(&self) -> Option<bool> {
        self.bool()
    }

    fn is_null(&self) -> bool {
        TapeNode::is_null(self)
    }

    fn json_type(&self) -> JsonType {
        match self.tok() {
            Tok::Null => JsonType::Null,
            Tok::Bool(_) => JsonType::Boolean,
            Tok::Int(_) | Tok::Float(..) => JsonType::Number,
            Tok::Str(..) => JsonType::String,
            Tok::Array { .. } => JsonType::Array,
            Tok::Object { .. } => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        match expected {
            Value::Null => TapeNode::is_null(self),
            Value::Bool(flag) => self.bool() == Some(*flag),
            Value::Number(number) => self.number().is_some_and(|own| cmp::equal_numbers(&own, number)),
            Value::String(string) => self.str() == Some(string.as_str()),
            _ => cmp::equal(&self.value(), expected),
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(self.value())
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::tagged(std::ptr::from_ref::<Tape>(self.tape) as usize, self.index))
    }
}

impl<'a> Object<'a, TapeJson> for TapeNode<'a> {
    type Node = TapeNode<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        TapeNode::len(self)
    }

    fn get(&self, key: &Box<str>) -> Option<TapeNode<'a>> {
        self.field(key)
    }

    fn members(&self) -> Members<'a> {
        TapeNode::members(self)
    }
}

impl<'a> Array<'a, TapeJson> for TapeNode<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = Items<'a>;

    fn len(&self) -> usize {
        TapeNode::len(self)
    }

    fn elements(&self) -> Items<'a> {
        self.items().unwrap_or(Items { tape: self.tape, next: self.index, left: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tape's value of `body` as serde_json reads it, or None where the tape refuses it.
    fn read(body: &str) -> Option<Value> {
        let mut tape = Tape::default();
        tape.read(body.as_bytes()).map(|root| root.value())
    }

    #[test]
    fn reads_what_serde_json_reads() {
        for body in [
            r#"{"a": 1, "b": [true, false, null, -1, 0, 0.5, -1.5e3, 2E-2], "c": {"d": "x\"\\\/\b\f\n\r\t"}}"#,
            r#"  {"é": "\u00e9\ud83e\udd80🦀", "": [], "e": {}}  "#,
            r#"[1, [2, [3, []]]]"#,
            r#""text""#,
            "-9223372036854775808",
        ] {
            assert_eq!(read(body), serde_json::from_str::<Value>(body).ok(), "{body}");
        }
        // `-0` is the integer 0 to Python (serde_json keeps its text).
        assert_eq!(read("[-0]"), Some(serde_json::json!([0])));
    }

    #[test]
    fn leaves_what_it_is_not_sure_of() {
        for body in [
            r#"{"a": 1, "a": 2}"#,       // a repeated key
            r#"{"a": "\ud83e"}"#,        // a lone surrogate
            r#"{"a": "\udd80"}"#,
            "{\"a\": \"\t\"}",            // a control character
            r#"{"a": 01}"#,
            r#"{"a": 1.}"#,
            r#"{"a": .5}"#,
            r#"{"a": 1e}"#,
            r#"{"a": 1e400}"#,            // beyond a float64
            r#"{"a": NaN}"#,
            r#"{"a": 1,}"#,
            r#"[1,]"#,
            r#"{"a": 1} x"#,
            r#"{"a" 1}"#,
            r#"{'a': 1}"#,
            r#"{"a": tru}"#,
            r#"{"a": "\x"}"#,
            "",
        ] {
            assert_eq!(read(body), None, "{body}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 2), "]".repeat(MAX_DEPTH + 2));
        assert_eq!(read(&deep), None);
        let mut tape = Tape::default();
        assert!(tape.read(b"\xff").is_none());
        let many: String = (0..40).map(|i| format!("\"k{}\": {i}", i % 39)).collect::<Vec<_>>().join(",");
        assert!(tape.read(format!("{{{many}}}").as_bytes()).is_none()); // a repeat past the pairwise check
    }

    /// The check over the tape gives the check over serde_json's values its verdicts.
    #[test]
    fn the_check_reads_the_tape_as_it_reads_serde_json() {
        use crate::json::build_validator;
        use jsonschema::json::SerdeJson;
        let schemas = [
            r#"{"type": "integer"}"#,
            r#"{"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}"#,
            r#"{"type": "number", "multipleOf": 0.5, "maximum": 1e2}"#,
            r#"{"type": "object", "properties": {"a": {"type": "string", "maxLength": 2}}, "required": ["a"],
                "additionalProperties": {"type": "array", "items": {"enum": [1, "x", null]}, "uniqueItems": true}}"#,
            r#"{"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "minProperties": 2}"#,
            r#"{"const": {"a": [1.0, {"b": null}]}}"#,
            r#"{"anyOf": [{"type": "string", "minLength": 2}, {"type": "boolean"}]}"#,
        ];
        let bodies = [
            "1", "1.0", "1e2", "1.5", "-0", "2.5e1", "100.5", "\"é🦀\"", "\"ab\"", "true", "null",
            r#"{"a": "xy"}"#, r#"{"a": "xyz"}"#, r#"{"a": "x", "b": [1, "x"]}"#, r#"{"a": "x", "b": [1, 1.0]}"#,
            r#"{"a": "x", "b": [2]}"#, r#"{"ab": 1, "c": 2}"#, r#"{"Ab": 1, "c": 2}"#, r#"{"a": [1, {"b": null}]}"#,
            r#"{"a": [1, {"b": 0}]}"#,
        ];
        for schema in schemas {
            let on_tape = build_validator::<TapeJson>(schema, Vec::new(), "json-schema:///").unwrap();
            let on_values = build_validator::<SerdeJson>(schema, Vec::new(), "json-schema:///").unwrap();
            for body in bodies {
                let mut tape = Tape::default();
                let root = tape.read(body.as_bytes()).unwrap();
                let value: Value = serde_json::from_str(body).unwrap();
                assert_eq!(on_tape.is_valid(root), on_values.is_valid(&value), "{schema} {body}");
            }
        }
    }

    #[test]
    fn a_refused_body_leaves_the_tape_as_it_was() {
        let mut tape = Tape::default();
        let first = tape.read(br#"{"a": ["x", 1.5]}"#).unwrap().index();
        assert!(tape.read(br#"{"b": ["y", 2.5], "b": 1}"#).is_none());
        let mark = tape.mark();
        let second = tape.read(br#"{"c": "z"}"#).unwrap().index();
        assert_eq!(tape.node(first).value(), serde_json::json!({"a": ["x", 1.5]}));
        assert_eq!(tape.node(second).value(), serde_json::json!({"c": "z"}));
        tape.reset(mark);
        assert_eq!((tape.nodes.len(), tape.text.len()), (second as usize, 5));
        assert_eq!(tape.node(first).value(), serde_json::json!({"a": ["x", 1.5]}));
    }
}
