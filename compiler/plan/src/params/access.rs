//! The serde access types the plan-value deserializer hands to visitors: maps of named views,
//! lists, enum variants (a constructor's object, an expression node, an enum word), a variant's
//! content, and numbers that decode into an integer only when they are whole.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::error::{DecodeError, Problem};
use super::view::View;
use crate::value::PVal;

/// A map presented to serde: fields by name, each a view.
pub(super) struct Entries<'a> {
    items: std::vec::IntoIter<(&'a str, View<'a>)>,
    value: Option<(&'a str, View<'a>)>,
}

impl<'a> Entries<'a> {
    pub(super) fn new(items: Vec<(&'a str, View<'a>)>) -> Entries<'a> {
        Entries { items: items.into_iter(), value: None }
    }

    pub(super) fn fields(
        fields: &'a std::collections::BTreeMap<String, PVal>,
    ) -> Vec<(&'a str, View<'a>)> {
        fields.iter().map(|(k, v): (&'a String, &'a PVal)| (k.as_str(), View::Val(v))).collect()
    }
}

impl<'de, 'a> de::MapAccess<'de> for Entries<'a> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        match self.items.next() {
            Some((k, v)) => {
                self.value = Some((k, v));
                let key: de::value::StrDeserializer<'_, DecodeError> = k.into_deserializer();
                seed.deserialize(key).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let Some((k, v)) = self.value.take() else {
            return Err(<DecodeError as de::Error>::custom("a value was asked for before its key"));
        };
        seed.deserialize(v).map_err(|e| e.at(k))
    }
}

/// A list presented to serde, each item a view; errors name the item's index.
struct Items<'a> {
    items: std::iter::Enumerate<std::vec::IntoIter<View<'a>>>,
}

impl<'de, 'a> de::SeqAccess<'de> for Items<'a> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        match self.items.next() {
            Some((i, v)) => seed.deserialize(v).map(Some).map_err(|e| e.at(&format!("[{i}]"))),
            None => Ok(None),
        }
    }
}

pub(super) fn seq<'de, 'a, V: Visitor<'de>>(
    items: Vec<View<'a>>,
    visitor: V,
) -> Result<V::Value, DecodeError> {
    visitor.visit_seq(Items { items: items.into_iter().enumerate() })
}

pub(super) fn map<'de, 'a, V: Visitor<'de>>(
    items: Vec<(&'a str, View<'a>)>,
    visitor: V,
) -> Result<V::Value, DecodeError> {
    visitor.visit_map(Entries::new(items))
}

/// An object (or expression node) as an enum: the variant is its constructor (or `op`), the
/// content its entries.
pub(super) struct Variant<'a> {
    pub(super) name: &'a str,
    pub(super) content: Vec<(&'a str, View<'a>)>,
    /// What a unit variant must have: no content at all (an enum word), or an object whose
    /// fields may be ignored only if it has none.
    pub(super) word: bool,
}

impl<'de, 'a> de::EnumAccess<'de> for Variant<'a> {
    type Error = DecodeError;
    type Variant = Variant<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self), DecodeError> {
        let name: de::value::StrDeserializer<'_, DecodeError> = self.name.into_deserializer();
        let v = seed.deserialize(name)?;
        Ok((v, self))
    }
}

impl<'de, 'a> de::VariantAccess<'de> for Variant<'a> {
    type Error = DecodeError;

    fn unit_variant(self) -> Result<(), DecodeError> {
        match self.content.first() {
            None => Ok(()),
            Some((k, _)) => Err(DecodeError::new(Problem::UnknownField((*k).to_string()))),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, DecodeError> {
        if self.word {
            return Err(DecodeError::new(Problem::Mismatch {
                expected: "an object".into(),
                found: format!("`{}`", self.name),
            }));
        }
        seed.deserialize(Content(self.content))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _v: V) -> Result<V::Value, DecodeError> {
        Err(<DecodeError as de::Error>::custom("tuple variants are not part of the plan format"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        map(self.content, visitor)
    }
}

/// The entries of a variant, given to a newtype variant's type as a map.
pub(super) struct Content<'a>(pub(super) Vec<(&'a str, View<'a>)>);

impl<'de, 'a> de::Deserializer<'de> for Content<'a> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        map(self.0, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        map(self.0, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

/// A number for an integer or float field: an integer field takes only an integral value.
pub(super) struct Number(pub(super) f64);

impl Number {
    fn int<'de, V: Visitor<'de>>(self, visitor: V, signed: bool) -> Result<V::Value, DecodeError> {
        let n = self.0;
        if n.fract() != 0.0 || !n.is_finite() {
            return Err(View::Num(n).mismatch("a whole number"));
        }
        if signed {
            if n < i64::MIN as f64 || n > i64::MAX as f64 {
                return Err(View::Num(n).mismatch("a whole number in range"));
            }
            visitor.visit_i64(n as i64)
        } else {
            if n < 0.0 || n > u64::MAX as f64 {
                return Err(View::Num(n).mismatch("a whole number of at least 0"));
            }
            visitor.visit_u64(n as u64)
        }
    }
}

impl<'de> de::Deserializer<'de> for Number {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_f64(self.0)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DecodeError> {
        self.int(v, false)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DecodeError> {
        self.int(v, false)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DecodeError> {
        self.int(v, false)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DecodeError> {
        self.int(v, false)
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DecodeError> {
        self.int(v, true)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DecodeError> {
        self.int(v, true)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DecodeError> {
        self.int(v, true)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DecodeError> {
        self.int(v, true)
    }

    serde::forward_to_deserialize_any! {
        bool i128 u128 f32 f64 char str string bytes byte_buf option unit unit_struct
        newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}
