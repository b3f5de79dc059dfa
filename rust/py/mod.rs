//! What reads and builds Python objects: argument lists (`args`), the payload and fields of
//! an item (`extract`), canonical encoding (`encode`) and content keys (`content`), copies
//! (`deepcopy`), `str` text (`text`), orphan-pruning facts (`orphans`), and when the GIL
//! is released (`gil`). The rules themselves are in `crate::core`.

pub mod args;
pub mod content;
pub mod deepcopy;
pub mod encode;
pub mod extract;
pub mod gil;
pub mod input_rules;
pub mod orphans;
pub mod text;
