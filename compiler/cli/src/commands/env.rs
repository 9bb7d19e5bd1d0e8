//! `wrlc env serve`: placeholder until the env service lands.

use clap::Subcommand;

use crate::args::GlobalOpts;
use crate::{EXIT_USAGE, Io};

#[derive(Debug, Subcommand)]
pub enum EnvCommand {}

pub fn run(cmd: EnvCommand, _global: &GlobalOpts, _io: &mut Io) -> u8 {
    match cmd {}
    #[allow(unreachable_code)]
    EXIT_USAGE
}
