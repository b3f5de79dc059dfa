//! What reads and builds Python objects: argument lists (`args`), the payload and fields of
//! an item and the dedupes by its key (`extract`), canonical encoding (`encode`) and
//! content keys and callback classification (`content`), copies (`deepcopy`), `str` text
//! (`text`), `json.dumps(sort_keys=True)` text (`sorted_json`), the per-item text and key
//! callables of a drop-in (`dict_text`, `screened_key`), orphan pruning (`orphans`) and
//! the model-input rules (`input_rules`) of Python items, session rows decoded in one call
//! and the long-integer screen (`rows`), when the GIL is released (`gil`), and the
//! identity checks of a drop-in replacement (`watch`). The rules themselves are in
//! `crate::core`.
//!
//! Each function of `histcore._core` has its body here, under its Python name, in the
//! module of its concern; `lib.rs` binds it with its signature and docstring.

pub mod args;
pub mod content;
pub mod deepcopy;
pub mod dict;
pub mod dict_text;
pub mod encode;
pub mod extract;
pub mod gil;
pub mod input_rules;
pub mod orphans;
pub mod rows;
pub mod screened_key;
pub mod sorted_json;
pub mod text;
pub mod watch;
