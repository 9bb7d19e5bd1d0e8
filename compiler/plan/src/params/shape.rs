//! What a parameter type looks like, read off its serde `Deserialize` impl rather than written
//! down a second time: its fields in order, which take `unknown`, which enum words it knows and
//! which unit a quantity is in. A probe deserializer walks to one place of the type, records
//! what the type asks for there, and stops; walking every place builds the whole shape. The
//! contract test compares these shapes with the stdlib's signatures.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::view::{BATCH, EXPR, QTY, REF, UNIT_PREFIX, WORD};

/// The shape of a parameter type.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Bool,
    Int,
    Float,
    Str,
    /// A quantity in this canonical unit (`tokens`, `s`).
    Unit(String),
    /// A quantity in any unit.
    Qty,
    /// A batch size: a count in `prompts`, `trajectories`, `turns` or `samples`, or a bare
    /// number (samples).
    Batch,
    /// The output of another node.
    Ref,
    /// A reward expression.
    Expr,
    /// Any word (a verdict).
    Word,
    /// One of several shapes, told apart by value (`one_of(…)` in the stdlib).
    OneOf,
    /// `unknown` allowed.
    Option(Box<Shape>),
    /// A value of the inner shape, or this word (`one_of(T, enum(word))`).
    OrWord(String, Box<Shape>),
    List(Box<Shape>),
    /// A record whose keys are names (a graph's modules).
    Map(Box<Shape>),
    /// Named fields, in declaration order.
    Struct(Vec<(String, Shape)>),
    /// Enum words or constructors: each variant's name and its content (`Unit` for a word).
    Enum(Vec<(String, Shape)>),
    /// An enum variant without content.
    Unit0,
}

impl Shape {
    /// The fields of a struct shape.
    pub fn fields(&self) -> &[(String, Shape)] {
        match self {
            Shape::Struct(f) => f,
            _ => &[],
        }
    }

    /// The field `name`.
    pub fn field(&self, name: &str) -> Option<&Shape> {
        self.fields().iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// The words of an enum shape.
    pub fn words(&self) -> Vec<&str> {
        match self {
            Shape::Enum(v) => v.iter().map(|(n, _)| n.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

/// The shape of `T`.
pub fn of<T: for<'de> serde::Deserialize<'de>>() -> Shape {
    explore::<T>(&mut Vec::new(), 0)
}

/// One step into a type.
#[derive(Clone, Debug)]
enum Step {
    Field(&'static str),
    Some,
    Elem,
    MapValue,
    Variant(&'static str),
    Newtype,
}

/// What the type asked for at the end of the path.
#[derive(Clone, Debug)]
enum Found {
    Bool,
    Int,
    Float,
    Str,
    Any,
    Option,
    Seq,
    Map,
    Struct(&'static [&'static str]),
    Enum(&'static str, &'static [&'static str]),
    Newtype(&'static str),
    UnitVariant,
}

fn explore<T: for<'de> serde::Deserialize<'de>>(path: &mut Vec<Step>, depth: usize) -> Shape {
    if depth > 12 {
        return Shape::OneOf;
    }
    let found = RefCell::new(None);
    let _ = T::deserialize(Probe { path, found: &found });
    let Some(f) = found.into_inner() else { return Shape::OneOf };
    let at = |step: Step, path: &mut Vec<Step>| {
        path.push(step);
        let s = explore::<T>(path, depth + 1);
        path.pop();
        s
    };
    match f {
        Found::Bool => Shape::Bool,
        Found::Int => Shape::Int,
        Found::Float => Shape::Float,
        Found::Str => Shape::Str,
        Found::Any => Shape::OneOf,
        Found::UnitVariant => Shape::Unit0,
        Found::Option => Shape::Option(Box::new(at(Step::Some, path))),
        Found::Seq => Shape::List(Box::new(at(Step::Elem, path))),
        Found::Map => Shape::Map(Box::new(at(Step::MapValue, path))),
        Found::Struct(fields) => Shape::Struct(
            fields.iter().map(|f| (f.to_string(), at(Step::Field(f), path))).collect(),
        ),
        Found::Enum(WORD, _) => Shape::Word,
        // The expression type refers to itself: it is a shape of its own.
        Found::Enum("Tagged", _) => Shape::Expr,
        Found::Enum(_, variants) => Shape::Enum(
            variants.iter().map(|v| (v.to_string(), at(Step::Variant(v), path))).collect(),
        ),
        Found::Newtype(REF) => Shape::Ref,
        Found::Newtype(QTY) => Shape::Qty,
        Found::Newtype(BATCH) => Shape::Batch,
        Found::Newtype(EXPR) => Shape::Expr,
        Found::Newtype(name) => match name.strip_prefix(UNIT_PREFIX) {
            Some(unit) => Shape::Unit(unit.to_string()),
            None => match name.strip_prefix(super::or::OR_PREFIX) {
                Some(word) => Shape::OrWord(word.to_string(), Box::new(at(Step::Newtype, path))),
                None => at(Step::Newtype, path),
            },
        },
    }
}

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probe stopped")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Stop {
        Stop
    }
}

struct Probe<'p> {
    path: &'p [Step],
    found: &'p RefCell<Option<Found>>,
}

impl<'p> Probe<'p> {
    fn end(&self, f: Found) -> Stop {
        *self.found.borrow_mut() = Some(f);
        Stop
    }

    fn rest(&self) -> Probe<'p> {
        Probe { path: self.path.get(1..).unwrap_or(&[]), found: self.found }
    }
}

struct OneEntry<'p> {
    key: Option<&'static str>,
    value: Option<Probe<'p>>,
}

impl<'de, 'p> de::MapAccess<'de> for OneEntry<'p> {
    type Error = Stop;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        match self.key.take() {
            Some(k) => {
                let d: de::value::StrDeserializer<'_, Stop> = k.into_deserializer();
                seed.deserialize(d).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        match self.value.take() {
            Some(p) => seed.deserialize(p),
            None => Err(Stop),
        }
    }
}

struct OneElem<'p>(Option<Probe<'p>>);

impl<'de, 'p> de::SeqAccess<'de> for OneElem<'p> {
    type Error = Stop;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Stop> {
        match self.0.take() {
            Some(p) => seed.deserialize(p).map(Some),
            None => Ok(None),
        }
    }
}

struct OneVariant<'p>(&'static str, Probe<'p>);

impl<'de, 'p> de::EnumAccess<'de> for OneVariant<'p> {
    type Error = Stop;
    type Variant = Probe<'p>;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Probe<'p>), Stop> {
        let d: de::value::StrDeserializer<'_, Stop> = self.0.into_deserializer();
        Ok((seed.deserialize(d)?, self.1))
    }
}

impl<'de, 'p> de::VariantAccess<'de> for Probe<'p> {
    type Error = Stop;
    fn unit_variant(self) -> Result<(), Stop> {
        Err(if self.path.is_empty() { self.end(Found::UnitVariant) } else { Stop })
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Stop> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _v: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        match self.path.first() {
            None => Err(self.end(Found::Struct(fields))),
            Some(Step::Field(f)) => {
                let f = *f;
                visitor.visit_map(OneEntry { key: Some(f), value: Some(self.rest()) })
            }
            Some(_) => Err(Stop),
        }
    }
}

impl<'de, 'p> de::Deserializer<'de> for Probe<'p> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(self.end(Found::Any))
    }
    fn deserialize_bool<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(self.end(Found::Bool))
    }
    fn deserialize_u64<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(self.end(Found::Int))
    }
    fn deserialize_u32<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(self.end(Found::Int))
    }
    fn deserialize_i64<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(self.end(Found::Int))
    }
    fn deserialize_f64<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(self.end(Found::Float))
    }
    fn deserialize_str<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(self.end(Found::Str))
    }
    fn deserialize_string<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(self.end(Found::Str))
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        match self.path.first() {
            None => Err(self.end(Found::Option)),
            Some(Step::Some) => v.visit_some(self.rest()),
            Some(_) => Err(Stop),
        }
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        match self.path.first() {
            None => Err(self.end(Found::Seq)),
            Some(Step::Elem) => v.visit_seq(OneElem(Some(self.rest()))),
            Some(_) => Err(Stop),
        }
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        match self.path.first() {
            None => Err(self.end(Found::Map)),
            Some(Step::MapValue) => {
                v.visit_map(OneEntry { key: Some("key"), value: Some(self.rest()) })
            }
            Some(_) => Err(Stop),
        }
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Stop> {
        match self.path.first() {
            None => Err(self.end(Found::Struct(fields))),
            Some(Step::Field(f)) => {
                let f = *f;
                v.visit_map(OneEntry { key: Some(f), value: Some(self.rest()) })
            }
            Some(_) => Err(Stop),
        }
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Stop> {
        match self.path.first() {
            None => Err(self.end(Found::Enum(name, variants))),
            Some(Step::Variant(which)) => {
                let which = *which;
                v.visit_enum(OneVariant(which, self.rest()))
            }
            Some(_) => Err(Stop),
        }
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        v: V,
    ) -> Result<V::Value, Stop> {
        match self.path.first() {
            None => Err(self.end(Found::Newtype(name))),
            Some(Step::Newtype) => v.visit_newtype_struct(self.rest()),
            Some(_) => Err(Stop),
        }
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i128 u8 u16 u128 f32 char bytes byte_buf unit unit_struct tuple
        tuple_struct identifier ignored_any
    }
}
