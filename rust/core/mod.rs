//! The rules of the engine in plain Rust: no Python types, so `cargo test` checks them
//! (and the golden vectors) without an interpreter, with or without the `python` feature.
//!
//! Each module states its rules over plain data or behind a small trait that the binding
//! implements for Python objects: [`keys::ItemFields`], [`classify::ContentKeys`],
//! [`orphans::Oracle`].

pub mod byte_runs;
pub mod canonical;
pub mod classify;
pub mod dedupe;
pub mod digits;
pub mod input_rules;
pub mod keys;
pub mod orphans;
pub mod pyjson_text;
pub mod strings;
