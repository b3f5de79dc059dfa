//! The model-input rules of `input_problems` and `repair_input` (docs/design.md, "Model
//! input the API accepts") over per-item facts, in plain Rust and linear in the items:
//! `facts` (what an item is to the rules), `stored` (rules (e) and (f) from a stored
//! history), `check` (the problems of a list), `repair` (the items a repair keeps).

mod check;
mod facts;
mod repair;
mod stored;
#[cfg(test)]
mod tests;

pub use check::{Checker, Kind, Problem};
pub use facts::{key_text, number, read, Class, Facts, ItemReader, Key, TypeClass};
pub use repair::repair;
pub use stored::{KeptStored, Required, Stored, StoredReader};

const NONE: u32 = u32::MAX;

/// A position as u32 (the rules index items with u32).
fn at(position: usize) -> u32 {
    u32::try_from(position).expect("fewer than 2^32 items")
}
