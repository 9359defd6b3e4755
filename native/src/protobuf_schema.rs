//! A Protobuf message's plan, from the descriptors the Python side compiled (a
//! `FileDescriptorSet`): its fields in declaration order (the order of its Arrow struct), how each
//! is carried on the wire, what each holds; the plans of the messages and enums it uses. The
//! reader (`protobuf_values.rs`) and the writer (`protobuf_encode.rs`) of bodies share it.

use std::collections::HashMap;

use base64::Engine;
use prost_reflect::{DescriptorPool, EnumDescriptor, Kind, MessageDescriptor, Syntax};

const TIMESTAMP: &str = "google.protobuf.Timestamp";
/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in seconds since the epoch: the datetimes
/// Python holds.
pub const FIRST_SECOND: i64 = -62_135_596_800;
pub const LAST_SECOND: i64 = 253_402_300_799;

/// What a field's values are, and how the wire carries them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scalar {
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
    pub fn wire(self) -> u8 {
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
pub enum Shape {
    Single,
    List,
    /// A map: its entries are messages of plan `entry` (key: field 1, value: field 2).
    Map(usize),
}

#[derive(Debug)]
pub struct FieldPlan {
    pub name: String,
    pub number: u32,
    pub scalar: Scalar,
    pub shape: Shape,
    pub presence: bool,
    /// A repeated scalar written packed.
    pub packed: bool,
    /// The index of its oneof in the message (a proto3 `optional`'s own included).
    pub oneof: Option<usize>,
}

#[derive(Debug)]
pub struct MessagePlan {
    /// In declaration order, the order of the struct's fields.
    pub fields: Vec<FieldPlan>,
    /// Field number -> index in `fields`.
    numbers: HashMap<u32, usize>,
    /// For numbers below 64, the same (index + 1; 0: none): the usual lookup.
    small: [u8; 64],
}

impl MessagePlan {
    fn new() -> Self {
        MessagePlan { fields: Vec::new(), numbers: HashMap::new(), small: [0; 64] }
    }

    pub fn find(&self, number: u32) -> Option<usize> {
        if number < 64 {
            return match self.small[number as usize] {
                0 => None,
                i => Some(i as usize - 1),
            };
        }
        self.numbers.get(&number).copied()
    }
}

pub struct EnumPlan {
    /// (number, name), by number.
    names: Vec<(i32, String)>,
    /// Name -> number.
    numbers: HashMap<String, i32>,
    /// A proto3 enum keeps a number it does not name; a proto2 one does not.
    pub open: bool,
}

impl EnumPlan {
    pub fn name(&self, number: i32) -> Option<&str> {
        self.names.binary_search_by_key(&number, |(n, _)| *n).ok().map(|i| self.names[i].1.as_str())
    }

    pub fn number(&self, name: &str) -> Option<i32> {
        self.numbers.get(name).copied()
    }
}

/// The plans of the message and the messages and enums it uses (fixed once built).
pub struct Schema {
    pub plans: Vec<MessagePlan>,
    pub enums: Vec<EnumPlan>,
}

impl Schema {
    /// The plans of message `message` of `descriptor_set` (a `FileDescriptorSet`, base64), and
    /// the index of its own; None where the set does not parse, has no such message, or the
    /// message has what these plans do not hold (a group, a recursive message, enum aliases,
    /// over 128 fields or 64 oneofs).
    pub fn new(descriptor_set: &str, message: &str) -> Option<(Schema, usize)> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(descriptor_set).ok()?;
        let pool = DescriptorPool::decode(bytes.as_slice()).ok()?;
        let descriptor = pool.get_message_by_name(message)?;
        let mut planner = Planner::default();
        let root = planner.message(&descriptor)?;
        Some((Schema { plans: planner.plans, enums: planner.enums }, root))
    }
}

/// A varint-or-fixed number as its field's integer (the wire's 64 bits cut as protobuf cuts them).
pub fn integer(scalar: Scalar, n: u64) -> i64 {
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
                name: field.name().to_string(),
                number: field.number(),
                scalar,
                shape,
                presence: field.supports_presence(),
                packed: field.is_packed(),
                oneof: field.containing_oneof().and_then(|o| oneofs.iter().position(|n| n == o.name())),
            });
        }
        self.open.pop();
        if plan.fields.len() > 128 || oneofs.len() > 64 {
            return None; // past what a row's bit sets of seen fields and oneofs hold
        }
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
        let numbers = names.iter().map(|(n, name)| (name.clone(), *n)).collect();
        self.enums.push(EnumPlan { names, numbers, open });
        self.enum_names.insert(name, self.enums.len() - 1);
        Some(self.enums.len() - 1)
    }
}

