//! What reads and builds Python objects; the rules themselves are in `crate::core`.

pub mod args;
pub mod checked_dedupe;
pub mod content;
pub mod deepcopy;
pub mod dict;
pub mod dict_text;
pub mod encode;
pub mod extract;
pub mod field_scan;
pub mod gil;
pub mod input_rules;
pub mod key_entry;
pub mod model_input;
pub mod orphans;
pub mod rows;
pub mod screened_key;
pub mod sorted_json;
pub mod text;
pub mod watch;
