//! A value, or the one word that says where the value comes from instead (`agent`: as the
//! agent says; `none`; `off`): the stdlib's `one_of(T, enum(word))` slots. Each is an enum of
//! its own so that a runner matches the word by name, never by string.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, Visitor};

/// The name of the newtype a value-or-word decodes into is `$or:WORD`.
pub(crate) const OR_PREFIX: &str = "$or:";

macro_rules! or_word {
    ($(#[$doc:meta])* $name:ident { $word_variant:ident = $word:literal }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum $name<T> {
            #[doc = concat!("The word `", $word, "`.")]
            $word_variant,
            Value(T),
        }

        impl<T> $name<T> {
            /// The word the slot accepts besides a value.
            pub const WORD: &'static str = $word;

            /// The value, when one was given.
            pub fn value(&self) -> Option<&T> {
                match self {
                    $name::$word_variant => None,
                    $name::Value(v) => Some(v),
                }
            }
        }

        impl<'de, T: Deserialize<'de>> Deserialize<'de> for $name<T> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V<T>(PhantomData<T>);
                impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
                    type Value = $name<T>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("a value or `", $word, "`"))
                    }
                    fn visit_unit<E>(self) -> Result<$name<T>, E> {
                        Ok($name::$word_variant)
                    }
                    fn visit_newtype_struct<D: Deserializer<'de>>(
                        self,
                        d: D,
                    ) -> Result<$name<T>, D::Error> {
                        T::deserialize(d).map($name::Value)
                    }
                }
                d.deserialize_newtype_struct(concat!("$or:", $word), V(PhantomData))
            }
        }
    };
}

or_word!(
    /// `all` (a ReAct agent's `pages`: every text observation stays in the prompt).
    OrAll { All = "all" }
);

or_word!(
    /// A value, or `agent`: what the agent (or its env) declares.
    OrAgent { Agent = "agent" }
);
or_word!(
    /// A value, or `none`.
    OrNone { Nothing = "none" }
);
or_word!(
    /// A value, or `off`.
    OrOff { Off = "off" }
);
or_word!(
    /// A value, or `training`: the stage's own `reward`.
    OrTraining { Training = "training" }
);
or_word!(
    /// A value, or `horizon`: the RL phase's horizon.
    OrHorizon { Horizon = "horizon" }
);
or_word!(
    /// A value, or `grpo`: group-relative advantages.
    OrGrpo { Grpo = "grpo" }
);
or_word!(
    /// A number, or `unlimited`.
    OrUnlimited { Unlimited = "unlimited" }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::de::from_val;
    use crate::params::units::Tokens;
    use crate::value::PVal;

    #[test]
    fn a_slot_takes_its_word_or_a_value() {
        let word = PVal::Enum { value: "agent".into() };
        assert_eq!(from_val::<OrAgent<Tokens>>(&word), Ok(OrAgent::Agent));
        let q = PVal::Qty { value: 4096.0, unit: "tokens".into() };
        assert_eq!(from_val::<OrAgent<Tokens>>(&q), Ok(OrAgent::Value(Tokens(4096))));
        let other = PVal::Enum { value: "none".into() };
        assert!(from_val::<OrAgent<Tokens>>(&other).is_err(), "another word");
        assert_eq!(from_val::<OrNone<u32>>(&other), Ok(OrNone::Nothing));
    }
}
