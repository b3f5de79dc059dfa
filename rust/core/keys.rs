//! Item type tables and dedupe-key construction (docs/design.md, "Dedupe key").

use std::cell::Cell;

pub const FAKE_ID: &[u8] = b"__fake_id__";

/// The eight tool call families: each has a call type and an output type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallFamily {
    Function,
    CustomTool,
    Shell,
    ApplyPatch,
    Computer,
    LocalShell,
    ToolSearch,
    Program,
}

impl CallFamily {
    pub fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemType {
    Call(CallFamily),
    Output(CallFamily),
    Reasoning,
    /// `mcp_approval_request`: both a precursor and a program-owned hosted item.
    McpApprovalRequest,
    /// Hosted items whose presence keeps the program that issued them alive.
    ProgramOwnedHosted,
    Message,
    Other,
}

impl ItemType {
    pub fn of(kind: &[u8]) -> Self {
        use CallFamily::*;
        match kind {
            b"function_call" => Self::Call(Function),
            b"function_call_output" => Self::Output(Function),
            b"custom_tool_call" => Self::Call(CustomTool),
            b"custom_tool_call_output" => Self::Output(CustomTool),
            b"shell_call" => Self::Call(Shell),
            b"shell_call_output" => Self::Output(Shell),
            b"apply_patch_call" => Self::Call(ApplyPatch),
            b"apply_patch_call_output" => Self::Output(ApplyPatch),
            b"computer_call" => Self::Call(Computer),
            b"computer_call_output" => Self::Output(Computer),
            b"local_shell_call" => Self::Call(LocalShell),
            b"local_shell_call_output" => Self::Output(LocalShell),
            b"tool_search_call" => Self::Call(ToolSearch),
            b"tool_search_output" => Self::Output(ToolSearch),
            b"program" => Self::Call(Program),
            b"program_output" => Self::Output(Program),
            b"reasoning" => Self::Reasoning,
            b"mcp_approval_request" => Self::McpApprovalRequest,
            b"hosted_tool_call"
            | b"file_search_call"
            | b"web_search_call"
            | b"code_interpreter_call"
            | b"image_generation_call"
            | b"mcp_list_tools"
            | b"mcp_call"
            | b"mcp_approval_response" => Self::ProgramOwnedHosted,
            b"message" => Self::Message,
            _ => Self::Other,
        }
    }

    pub fn is_call_or_output(self) -> bool {
        matches!(self, Self::Call(_) | Self::Output(_))
    }

    /// Precursors keep their earliest position in latest-value dedupe.
    pub fn is_precursor(self) -> bool {
        matches!(
            self,
            Self::Call(_) | Self::Reasoning | Self::McpApprovalRequest
        )
    }

    pub fn is_program_owned_hosted(self) -> bool {
        matches!(self, Self::ProgramOwnedHosted | Self::McpApprovalRequest)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    CallId,
    Id,
    ApprovalRequestId,
}

/// Read access to one dict item. Text is written as Python text bytes into the cleared
/// buffer; a field is read only when the rules get to it.
pub trait ItemFields {
    type Error;
    fn has_role(&mut self) -> Result<bool, Self::Error>;
    /// Write the item's kind (`type or None`, as `str()` gives it); true when it is a str.
    fn kind(&mut self, text: &mut Vec<u8>) -> Result<bool, Self::Error>;
    /// Write the text of `field` when it holds a `str` (or subclass).
    fn str_field(&mut self, field: Field, text: &mut Vec<u8>) -> Result<bool, Self::Error>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    /// The item's type is a precursor (see [`ItemType::is_precursor`]).
    pub precursor: bool,
}

#[derive(Default)]
pub struct KeyBuilder {
    kind: Vec<u8>,
    call_id: Vec<u8>,
    field: Vec<u8>,
    key: Vec<u8>,
}

thread_local! {
    /// The last builder's buffers on this thread: Python loops call `dedupe_key` per item,
    /// where four small allocations per call would show.
    static SPARE_BUILDER: Cell<Option<KeyBuilder>> = const { Cell::new(None) };
}

impl KeyBuilder {
    pub fn reuse() -> Self {
        SPARE_BUILDER.with(Cell::take).unwrap_or_default()
    }

    pub fn recycle(self) {
        SPARE_BUILDER.with(|spare| spare.set(Some(self)));
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }

    fn write(&mut self, prefix: &[u8], value_is_call_id: bool) {
        let value = if value_is_call_id {
            &self.call_id
        } else {
            &self.field
        };
        self.key.clear();
        self.key.extend_from_slice(prefix);
        self.key.push(b':');
        self.key.extend_from_slice(&self.kind);
        self.key.push(b':');
        self.key.extend_from_slice(value);
    }

    /// The dedupe key of a dict item, or `None` when it never collapses: rules 2-8 of
    /// docs/design.md (rule 1, "not a dict", is the caller's).
    pub fn build<F: ItemFields>(&mut self, item: &mut F) -> Result<Option<KeyInfo>, F::Error> {
        if item.has_role()? {
            return Ok(None);
        }
        let item_type = if item.kind(&mut self.kind)? {
            Some(ItemType::of(&self.kind))
        } else {
            None
        };
        if item_type == Some(ItemType::Message) {
            return Ok(None);
        }
        let info = KeyInfo {
            precursor: item_type.is_some_and(ItemType::is_precursor),
        };
        let has_call_id = item.str_field(Field::CallId, &mut self.call_id)?;
        if has_call_id && item_type.is_some_and(ItemType::is_call_or_output) {
            self.write(b"call_id", true);
            return Ok(Some(info));
        }
        if item.str_field(Field::Id, &mut self.field)? && self.field != FAKE_ID {
            self.write(b"id", false);
            return Ok(Some(info));
        }
        if has_call_id {
            self.write(b"call_id", true);
            return Ok(Some(info));
        }
        if item.str_field(Field::ApprovalRequestId, &mut self.field)? {
            self.write(b"approval_request_id", false);
            return Ok(Some(info));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    struct Fields {
        role: bool,
        kind: Option<&'static str>,
        call_id: Option<&'static str>,
        id: Option<&'static str>,
        approval_request_id: Option<&'static str>,
        reads: Vec<Field>,
    }

    impl Fields {
        fn new(kind: Option<&'static str>) -> Self {
            Fields {
                role: false,
                kind,
                call_id: None,
                id: None,
                approval_request_id: None,
                reads: Vec::new(),
            }
        }
    }

    impl ItemFields for Fields {
        type Error = Infallible;
        fn has_role(&mut self) -> Result<bool, Infallible> {
            Ok(self.role)
        }
        fn kind(&mut self, text: &mut Vec<u8>) -> Result<bool, Infallible> {
            text.clear();
            Ok(match self.kind {
                Some(kind) if !kind.is_empty() => {
                    text.extend_from_slice(kind.as_bytes());
                    true
                }
                _ => {
                    text.extend_from_slice(b"None");
                    false
                }
            })
        }
        fn str_field(&mut self, field: Field, text: &mut Vec<u8>) -> Result<bool, Infallible> {
            self.reads.push(field);
            let value = match field {
                Field::CallId => self.call_id,
                Field::Id => self.id,
                Field::ApprovalRequestId => self.approval_request_id,
            };
            text.clear();
            text.extend_from_slice(value.unwrap_or("").as_bytes());
            Ok(value.is_some())
        }
    }

    fn key(fields: &mut Fields) -> Option<(String, bool)> {
        let mut builder = KeyBuilder::default();
        let info = builder.build(fields).unwrap()?;
        Some((
            String::from_utf8(builder.key().to_vec()).unwrap(),
            info.precursor,
        ))
    }

    #[test]
    fn calls_and_outputs_key_on_call_id_first() {
        let mut call = Fields::new(Some("function_call"));
        call.call_id = Some("c1");
        call.id = Some("fc_1");
        assert_eq!(
            key(&mut call),
            Some(("call_id:function_call:c1".into(), true))
        );
        assert_eq!(call.reads, [Field::CallId]);
    }

    #[test]
    fn other_kinds_prefer_id_over_call_id() {
        let mut item = Fields::new(Some("mcp_call"));
        item.call_id = Some("c1");
        item.id = Some("m1");
        assert_eq!(key(&mut item), Some(("id:mcp_call:m1".into(), false)));
        item.id = Some("__fake_id__");
        assert_eq!(key(&mut item), Some(("call_id:mcp_call:c1".into(), false)));
    }

    #[test]
    fn missing_kind_reads_as_none_text() {
        let mut item = Fields::new(Some(""));
        item.approval_request_id = Some("r");
        assert_eq!(
            key(&mut item),
            Some(("approval_request_id:None:r".into(), false))
        );
    }

    #[test]
    fn messages_and_roles_never_collapse() {
        let mut message = Fields::new(Some("message"));
        message.id = Some("m");
        assert_eq!(key(&mut message), None);
        let mut with_role = Fields::new(Some("reasoning"));
        with_role.role = true;
        with_role.id = Some("r");
        assert_eq!(key(&mut with_role), None);
        assert_eq!(key(&mut Fields::new(Some("reasoning"))), None);
    }

    #[test]
    fn type_table_classifies_families() {
        assert_eq!(
            ItemType::of(b"program"),
            ItemType::Call(CallFamily::Program)
        );
        assert_eq!(
            ItemType::of(b"tool_search_output"),
            ItemType::Output(CallFamily::ToolSearch)
        );
        assert!(ItemType::of(b"mcp_approval_request").is_precursor());
        assert!(ItemType::of(b"mcp_approval_request").is_program_owned_hosted());
        assert!(!ItemType::of(b"function_call_output").is_precursor());
        assert_eq!(ItemType::of(b"Program"), ItemType::Other);
    }
}
