//! The pest parser generated from `wrl.pest`. Only this crate sees `Rule` and pairs.

#[derive(pest_derive::Parser)]
#[grammar = "wrl.pest"]
pub(crate) struct WrlParser;
