//! The plan's quantities as Rust types: one newtype per canonical unit, so a field typed
//! `Tokens` takes only a quantity in tokens (a plain number or a duration is a format error),
//! plus references to other nodes, ranges and sizes.

use std::fmt;

use serde::de::{Deserialize, Deserializer, Visitor};

use super::view::REF;

macro_rules! unit {
    ($(#[$doc:meta])* $name:ident($inner:ty) = $unit:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("a quantity in ", $unit))
                    }
                    fn visit_newtype_struct<D: Deserializer<'de>>(
                        self,
                        d: D,
                    ) -> Result<$name, D::Error> {
                        <$inner>::deserialize(d).map($name)
                    }
                }
                d.deserialize_newtype_struct(concat!("$unit:", $unit), V)
            }
        }

        impl $name {
            /// The canonical unit's word, as the plan writes it.
            pub const UNIT: &'static str = $unit;
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} {}", self.0, $unit)
            }
        }
    };
}

unit!(
    /// Tokens (`32Ki tokens` is 32768).
    Tokens(u64) = "tokens"
);
unit!(
    /// Environment steps (a horizon, an eval's step limit).
    Steps(u32) = "steps"
);
unit!(
    /// Agent turns.
    Turns(u32) = "turns"
);
unit!(
    /// RL iterations.
    Iters(u64) = "iters"
);
unit!(
    /// Passes over a dataset.
    Epochs(u32) = "epochs"
);
unit!(
    /// Pixels.
    Pixels(u32) = "px"
);
unit!(
    /// A duration in seconds (`300 ms` is 0.3).
    Seconds(f64) = "s"
);
unit!(
    /// A fraction (`10%` is 0.1).
    Ratio(f64) = "ratio"
);
unit!(
    /// Bytes.
    Bytes(u64) = "B"
);

impl Seconds {
    /// The duration; a negative or non-finite one is zero (the checker's bounds rule them out).
    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::try_from_secs_f64(self.0).unwrap_or_default()
    }
}

/// The output of another node (`model:policy`, `checkpoint:warmup`): its id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeRef(pub String);

impl<'de> Deserialize<'de> for NodeRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NodeRef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the output of another node")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<NodeRef, D::Error> {
                String::deserialize(d).map(NodeRef)
            }
        }
        d.deserialize_newtype_struct(REF, V)
    }
}

impl NodeRef {
    pub fn id(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A word of the language that is not one of a fixed set (a verdict a module emits).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Word(pub String);

impl<'de> Deserialize<'de> for Word {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{EnumAccess, VariantAccess};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Word;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a word")
            }
            fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Word, A::Error> {
                let (word, rest): (String, _) = a.variant()?;
                rest.unit_variant()?;
                Ok(Word(word))
            }
        }
        d.deserialize_enum(super::view::WORD, &[], V)
    }
}

impl Word {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A quantity in whichever unit the plan gives (a checkpoint's `every`, in epochs or iters).
#[derive(Clone, Debug, PartialEq)]
pub struct Quantity {
    pub value: f64,
    pub unit: String,
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (value, unit) = value_and_unit(d, super::view::QTY, "a quantity")?;
        Ok(Quantity { value, unit })
    }
}

/// The `{ value, unit }` the decoder gives inside the newtype `name` (a quantity, a batch size).
fn value_and_unit<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
    name: &'static str,
    what: &'static str,
) -> Result<(T, String), D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Fields<T> {
        value: T,
        unit: String,
    }
    struct V<T>(&'static str, std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = (T, String);
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<(T, String), D::Error> {
            Fields::<T>::deserialize(d).map(|f| (f.value, f.unit))
        }
    }
    d.deserialize_newtype_struct(name, V(what, std::marker::PhantomData))
}

/// An RL stage's `mini_batch`: samples per optimiser step, in the unit the recipe counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchSize {
    /// Task groups, each `group` trajectories (verl's `ppo_mini_batch_size`).
    Prompts(u32),
    Trajectories(u32),
    /// Turns, at `level = turn`.
    Turns(u32),
    /// The stage's level: turns at `level = turn`, trajectories at `level = trajectory`.
    Samples(u32),
}

/// What one mini-batch holds, at the stage's level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MiniBatchSplit {
    /// That many loss samples: turns at `level = turn`, trajectories at `level = trajectory`.
    Samples(u32),
    /// Every turn of that many trajectories (`N trajectories` at `level = turn`).
    Trajectories(u32),
    /// Every trajectory and turn of that many prompt groups (`N prompts`).
    Groups(u32),
}

impl BatchSize {
    /// How a mini-batch of this size is cut at the stage's level (`trajectory`:
    /// `level_is_turn` false); `None` for turns at level trajectory, which whole trajectories
    /// cannot be cut into (the checker refuses it: E0440).
    pub fn split(self, level_is_turn: bool) -> Option<MiniBatchSplit> {
        match (self, level_is_turn) {
            (BatchSize::Samples(n), _)
            | (BatchSize::Turns(n), true)
            | (BatchSize::Trajectories(n), false) => Some(MiniBatchSplit::Samples(n)),
            (BatchSize::Prompts(n), _) => Some(MiniBatchSplit::Groups(n)),
            (BatchSize::Trajectories(n), true) => Some(MiniBatchSplit::Trajectories(n)),
            (BatchSize::Turns(_), false) => None,
        }
    }
}

impl fmt::Display for BatchSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchSize::Prompts(n) => write!(f, "{n} prompts"),
            BatchSize::Trajectories(n) => write!(f, "{n} trajectories"),
            BatchSize::Turns(n) => write!(f, "{n} turns"),
            BatchSize::Samples(n) => write!(f, "{n} samples"),
        }
    }
}

impl<'de> Deserialize<'de> for BatchSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let what = "a batch size in prompts, trajectories, turns or samples";
        let (n, unit): (u32, String) = value_and_unit(d, super::view::BATCH, what)?;
        match unit.as_str() {
            "prompts" => Ok(BatchSize::Prompts(n)),
            "trajectories" => Ok(BatchSize::Trajectories(n)),
            "turns" => Ok(BatchSize::Turns(n)),
            "samples" => Ok(BatchSize::Samples(n)),
            other => Err(serde::de::Error::custom(format!(
                "a batch size is in prompts, trajectories, turns or samples, not {other}"
            ))),
        }
    }
}

/// `lo .. hi`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Range<T> {
    pub lo: T,
    pub hi: T,
}

/// `W x H`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dims {
    pub width: f64,
    pub height: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::de::from_val;
    use crate::value::PVal;

    fn qty(value: f64, unit: &str) -> PVal {
        PVal::Qty { value, unit: unit.into() }
    }

    #[test]
    fn a_quantity_decodes_only_into_its_unit() {
        assert_eq!(from_val::<Tokens>(&qty(32768.0, "tokens")), Ok(Tokens(32768)));
        assert_eq!(from_val::<Seconds>(&qty(0.3, "s")), Ok(Seconds(0.3)));
        let e = from_val::<Tokens>(&qty(30.0, "s")).unwrap_err();
        assert_eq!(e.to_string(), "the node is 30 s, expected a quantity in tokens");
        assert!(from_val::<Tokens>(&PVal::Num { value: 3.0 }).is_err(), "a plain number");
        assert!(from_val::<Tokens>(&qty(2.5, "tokens")).is_err(), "tokens are whole");
        assert_eq!(from_val::<BatchSize>(&qty(16.0, "prompts")), Ok(BatchSize::Prompts(16)));
        let bare = from_val::<BatchSize>(&PVal::Num { value: 64.0 });
        assert_eq!(bare, Ok(BatchSize::Samples(64)), "a bare number counts samples");
        assert!(from_val::<BatchSize>(&qty(3.0, "s")).is_err());
        assert_eq!(BatchSize::Prompts(16).split(false), Some(MiniBatchSplit::Groups(16)));
        assert_eq!(
            BatchSize::Prompts(1).split(true),
            Some(MiniBatchSplit::Groups(1)),
            "all its turns"
        );
        assert_eq!(BatchSize::Trajectories(4).split(true), Some(MiniBatchSplit::Trajectories(4)));
        assert_eq!(BatchSize::Trajectories(4).split(false), Some(MiniBatchSplit::Samples(4)));
        assert_eq!(BatchSize::Turns(64).split(false), None);
        assert!(from_val::<Tokens>(&PVal::Unknown).unwrap_err().is_unknown());
        assert_eq!(from_val::<Option<Tokens>>(&PVal::Unknown), Ok(None));
    }

    #[test]
    fn references_and_ranges() {
        let r = PVal::Ref { node: "model:policy".into() };
        assert_eq!(from_val::<NodeRef>(&r), Ok(NodeRef("model:policy".into())));
        assert!(from_val::<NodeRef>(&PVal::Str { value: "model:policy".into() }).is_err());
        let range = PVal::Range {
            lo: Box::new(PVal::Num { value: 0.2 }),
            hi: Box::new(PVal::Num { value: 0.28 }),
        };
        assert_eq!(from_val::<Range<f64>>(&range), Ok(Range { lo: 0.2, hi: 0.28 }));
        let dims = PVal::Dims { width: 1280.0, height: 720.0 };
        assert_eq!(from_val::<Dims>(&dims), Ok(Dims { width: 1280.0, height: 720.0 }));
    }
}
