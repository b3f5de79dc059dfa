//! What reads and builds Python objects: argument lists (`args`), the payload and fields of
//! an item (`extract`), canonical encoding (`encode`) and content keys (`content`), copies
//! (`deepcopy`), `str` text (`text`), `json.dumps(sort_keys=True)` text (`sorted_json`)
//! the per-item text and key callables of a drop-in (`dict_text`, `screened_key`), orphan-pruning facts
//! (`orphans`), session rows decoded in one call (`rows`), when the GIL is released
//! (`gil`), and the identity checks of a drop-in replacement (`watch`). The rules
//! themselves are in `crate::core`.

pub mod args;
pub mod content;
pub mod deepcopy;
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
