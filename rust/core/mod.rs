//! The rules of the engine in plain Rust, without Python types, so `cargo test` checks them
//! without an interpreter; Python objects reach them through small traits.

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
