//! What an item is to the rules ([`Facts`]), read once through an [`ItemReader`] and numbered.

use std::num::NonZeroU32;

use crate::core::keys::{CallFamily, ItemType, FAKE_ID};
use crate::core::strings::Strings;

/// What the rules make of an item (the pure twin's `_OTHER` ... `_PRODUCED`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Class {
    /// Not a dict, or none of the below: an item without a str `type`, a tool output
    /// without a str `call_id`, an `mcp_approval_response` or an `item_reference`.
    #[default]
    Other,
    /// A `reasoning` item without a role.
    Reasoning,
    /// One of the eight call types with a str `call_id` and no role.
    Call,
    /// One of the eight output types with a str `call_id` and no role.
    Output,
    /// An item whose role is `user`, `system` or `developer`.
    User,
    /// Any other item a model emits: another role, or another typed item.
    Produced,
}

/// What an item's `type` string says, as far as these rules care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeClass {
    Reasoning,
    Call(CallFamily),
    Output(CallFamily),
    /// A type the user side supplies: `mcp_approval_response`, `item_reference`.
    NotProduced,
    Produced,
}

impl TypeClass {
    pub fn of(kind: &[u8]) -> Self {
        match ItemType::of(kind) {
            ItemType::Reasoning => Self::Reasoning,
            ItemType::Call(family) => Self::Call(family),
            ItemType::Output(family) => Self::Output(family),
            _ if kind == b"mcp_approval_response" || kind == b"item_reference" => Self::NotProduced,
            _ => Self::Produced,
        }
    }
}

/// A string of the facts: push index until [`number`], then string id, plus one (`None` is free).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key(NonZeroU32);

impl Key {
    pub fn new(index: u32) -> Self {
        Key(NonZeroU32::MIN.saturating_add(index))
    }

    pub fn index(self) -> u32 {
        self.0.get() - 1
    }
}

/// The facts of one item (16 bytes); after [`number`], equal strings have equal [`Key`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    pub class: Class,
    /// A call of type `program`.
    pub program: bool,
    /// A `shell_call` whose status is missing, None or `"in_progress"`.
    pub pending_hosted: bool,
    /// Calls and outputs: the pair key (the call family and the `call_id`).
    pub pair: Option<Key>,
    /// The str `id`, unless it is the placeholder `__fake_id__`.
    pub id: Option<Key>,
    /// The str `caller["caller_id"]` of a `"program"` caller, keyed like that program's call.
    pub caller: Option<Key>,
}

impl Facts {
    pub fn pair(&self) -> Option<u32> {
        self.pair.map(Key::index)
    }

    pub fn id(&self) -> Option<u32> {
        self.id.map(Key::index)
    }

    pub fn caller(&self) -> Option<u32> {
        self.caller.map(Key::index)
    }
}

/// The first byte of an item id's key: past the call families' (0 to 7), so no id is a pair key.
pub(super) const ID_KEY: u8 = 8;

/// The text a key was made from (a call id or an item id, without the key's first byte).
pub fn key_text(key: &[u8]) -> &[u8] {
    &key[1..]
}

/// Reads the fields of one dict item in the order the pure twin's `_Facts._read` reads
/// them; `id`, `call_id` and `program_caller` append a str's text to `out` (true if so).
pub trait ItemReader {
    type Error;
    /// What the item's `type` is when it is a str (`None` for anything else).
    fn kind(&mut self) -> Result<Option<TypeClass>, Self::Error>;
    /// `None` when `role` is missing or None, else whether it is `user`, `system` or `developer`.
    fn role(&mut self) -> Result<Option<bool>, Self::Error>;
    fn id(&mut self, out: &mut Vec<u8>) -> Result<bool, Self::Error>;
    /// `caller["caller_id"]`, when `caller` is a dict whose `type` equals `"program"`.
    fn program_caller(&mut self, out: &mut Vec<u8>) -> Result<bool, Self::Error>;
    fn call_id(&mut self, out: &mut Vec<u8>) -> Result<bool, Self::Error>;
    /// Read the `status` of a call; for a `shell_call` (`shell`), whether it is missing,
    /// None or equal to `"in_progress"` (always false otherwise).
    fn pending(&mut self, shell: bool) -> Result<bool, Self::Error>;
}

/// The facts of one dict item, its strings pushed to `strings` (see [`Key`]); `key` is scratch.
pub fn read<R: ItemReader>(
    reader: &mut R,
    strings: &mut Strings,
    key: &mut Vec<u8>,
) -> Result<Facts, R::Error> {
    let kind = reader.kind()?;
    let role = reader.role()?;
    let mut facts = Facts::default();
    key.clear();
    key.push(ID_KEY);
    if reader.id(key)? && key_text(key) != FAKE_ID {
        facts.id = Some(Key::new(strings.push(key)));
    }
    let push = |key: &[u8], strings: &mut Strings| Some(Key::new(strings.push(key)));
    key.clear();
    key.push(CallFamily::Program as u8);
    if reader.program_caller(key)? {
        facts.caller = push(key, strings);
    }
    if let Some(user_side) = role {
        facts.class = if user_side {
            Class::User
        } else {
            Class::Produced
        };
        return Ok(facts);
    }
    key.clear();
    key.push(0);
    let has_call_id = reader.call_id(key)?;
    facts.class = match kind {
        None | Some(TypeClass::NotProduced) => Class::Other,
        Some(TypeClass::Reasoning) => Class::Reasoning,
        Some(TypeClass::Call(family)) if has_call_id => {
            key[0] = family as u8;
            facts.pair = push(key, strings);
            facts.program = family == CallFamily::Program;
            facts.pending_hosted = reader.pending(family == CallFamily::Shell)?;
            Class::Call
        }
        Some(TypeClass::Output(family)) if has_call_id => {
            key[0] = family as u8;
            facts.pair = push(key, strings);
            Class::Output
        }
        Some(TypeClass::Output(_)) => Class::Other,
        Some(TypeClass::Call(_) | TypeClass::Produced) => Class::Produced,
    };
    Ok(facts)
}

/// Replace the push indexes in `facts` by their string ids ([`Strings::number`]).
pub fn number(facts: &mut [Facts], ids: &[u32]) {
    let id = |key: Option<Key>| key.map(|key| Key::new(ids[key.index() as usize]));
    for facts in facts {
        facts.pair = id(facts.pair);
        facts.id = id(facts.id);
        facts.caller = id(facts.caller);
    }
}
