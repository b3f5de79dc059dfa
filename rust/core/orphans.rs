//! Orphan-call pruning (`drop_orphan_function_calls`) over per-item facts, linear in the
//! items. Python items run with [`NoOracle`]: only str values name a type or status.

use super::keys::{CallFamily, ItemType};
use super::strings::Strings;

/// What an item's `type` value is, for every comparison the rules make with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeFact {
    Str(ItemType),
    /// None, or a builtin value that never equals a `str`.
    NeverEqual,
    /// A value whose comparisons only the [`Oracle`] can answer.
    Opaque,
}

/// What an item's `status` says (read for shell calls only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusFact {
    /// None or missing, or equal to `"in_progress"`.
    Pending,
    NotPending,
    /// Not a str: `status == "in_progress"` is asked of the [`Oracle`].
    Opaque,
}

/// Comparisons with opaque values that only Python can answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    TypeEqualsToolSearchOutput,
    TypeEqualsToolSearchCall,
    /// `not (type != "program")`.
    TypeNotUnequalProgram,
    /// `not (type != "shell_call")`.
    TypeNotUnequalShellCall,
    TypeEqualsReasoning,
    StatusEqualsInProgress,
    /// `not (caller["type"] != "program")`.
    CallerTypeNotUnequalProgram,
}

pub trait Oracle {
    type Error;
    fn ask(&mut self, index: usize, question: Question) -> Result<bool, Self::Error>;
}

pub struct NoOracle;

impl Oracle for NoOracle {
    type Error = std::convert::Infallible;
    fn ask(&mut self, index: usize, question: Question) -> Result<bool, Self::Error> {
        unreachable!("item {index} has no opaque value to compare ({question:?})")
    }
}

/// The facts of one dict item (non-dict items are `None` in the slice given to [`kept`]).
#[derive(Clone, Copy, Debug)]
pub struct ItemFacts {
    pub kind: TypeFact,
    /// Id of the `call_id` string, when it is a str (below `id_count`).
    pub call_id: Option<u32>,
    /// Id of `caller.caller_id` when `caller` is a program dict with a str `caller_id`.
    pub program_owner: Option<u32>,
    /// `caller` is a dict whose `type` is opaque (`program_owner` holds its str `caller_id`).
    pub caller_type_opaque: bool,
    /// Only meaningful when the type may be `"shell_call"`.
    pub status: StatusFact,
}

impl ItemFacts {
    pub fn is_opaque(&self) -> bool {
        self.kind == TypeFact::Opaque
            || self.status == StatusFact::Opaque
            || self.caller_type_opaque
    }
}

/// Replace the push indexes in `facts` by string ids: equal strings get equal ids.
pub fn number_strings(facts: &mut [Option<ItemFacts>], strings: &mut Strings) {
    let ids = strings.number();
    for facts in facts.iter_mut().flatten() {
        facts.call_id = facts.call_id.map(|index| ids[index as usize]);
        facts.program_owner = facts.program_owner.map(|index| ids[index as usize]);
    }
}

struct Asker<'o, O> {
    oracle: &'o mut O,
}

impl<O: Oracle> Asker<'_, O> {
    fn type_is(
        &mut self,
        index: usize,
        facts: &ItemFacts,
        expected: ItemType,
        question: Question,
    ) -> Result<bool, O::Error> {
        match facts.kind {
            TypeFact::Str(kind) => Ok(kind == expected),
            TypeFact::NeverEqual => Ok(false),
            TypeFact::Opaque => self.oracle.ask(index, question),
        }
    }

    fn is_pending_hosted_shell_call(
        &mut self,
        index: usize,
        facts: &ItemFacts,
    ) -> Result<bool, O::Error> {
        let shell_call = ItemType::Call(CallFamily::Shell);
        if !self.type_is(index, facts, shell_call, Question::TypeNotUnequalShellCall)? {
            return Ok(false);
        }
        match facts.status {
            StatusFact::Pending => Ok(true),
            StatusFact::NotPending => Ok(false),
            StatusFact::Opaque => self.oracle.ask(index, Question::StatusEqualsInProgress),
        }
    }
}

impl<O: Oracle> Asker<'_, O> {
    /// The program that issued the item (the pure twin's `_Facts.program_owner`).
    fn program_owner(&mut self, index: usize, facts: &ItemFacts) -> Result<Option<u32>, O::Error> {
        if facts.caller_type_opaque
            && !self
                .oracle
                .ask(index, Question::CallerTypeNotUnequalProgram)?
        {
            return Ok(None);
        }
        Ok(facts.program_owner)
    }
}

impl TypeFact {
    fn str_type(self) -> Option<ItemType> {
        match self {
            Self::Str(kind) => Some(kind),
            Self::NeverEqual | Self::Opaque => None,
        }
    }
}

pub struct Pruning<'a> {
    /// Only these positions may be dropped (reasoning included); `None` means all.
    pub prunable: Option<&'a [bool]>,
    /// Outputs at these positions whose call is gone are dropped too.
    pub output_prunable: Option<&'a [bool]>,
}

fn allowed(mask: Option<&[bool]>, index: usize) -> bool {
    mask.is_none_or(|mask| mask[index])
}

struct FamilySets(Vec<u8>);

impl FamilySets {
    fn insert(&mut self, family: CallFamily, id: u32) {
        self.0[id as usize] |= family.bit();
    }

    fn contains(&self, family: CallFamily, id: u32) -> bool {
        self.0[id as usize] & family.bit() != 0
    }
}

/// Indexes of the items kept by orphan pruning, in order: the pure twin's six passes, in turn.
pub fn kept<O: Oracle>(
    items: &[Option<ItemFacts>],
    id_count: usize,
    pruning: &Pruning<'_>,
    oracle: &mut O,
) -> Result<Vec<usize>, O::Error> {
    let mut passes = Passes {
        items,
        id_count,
        prunable: pruning.prunable,
        ask: Asker { oracle },
    };
    let owners = passes.completed_and_retained_owners()?;
    let matched_anonymous = passes.matched_anonymous_searches()?;
    let programs = passes.active_and_orphan_programs(&owners)?;
    let mut drops = passes.drop_orphans(&owners.completed, &matched_anonymous, &programs)?;
    if let Some(output_prunable) = pruning.output_prunable {
        passes.drop_outputs_without_calls(output_prunable, &mut drops.dropped);
    }
    if !drops.dropped.contains(&true) {
        return Ok((0..items.len()).collect());
    }
    passes.drop_reasoning_before_orphans(&mut drops)?;
    Ok((0..items.len())
        .filter(|&index| !drops.dropped[index])
        .collect())
}

struct Passes<'a, 'o, O> {
    items: &'a [Option<ItemFacts>],
    id_count: usize,
    prunable: Option<&'a [bool]>,
    ask: Asker<'o, O>,
}

struct Owners {
    /// Per call id, the families of the outputs present.
    completed: FamilySets,
    /// Per program id, whether it owns an item that stays.
    retained: Vec<bool>,
}

struct Programs {
    active: Vec<bool>,
    orphan: Vec<bool>,
}

struct Drops {
    dropped: Vec<bool>,
    /// Dropped as an orphan: such a drop also takes the reasoning run directly before it.
    orphaned: Vec<bool>,
}

impl<O: Oracle> Passes<'_, '_, O> {
    /// Pass 1: the outputs present, and the program ids that still own a retained item.
    fn completed_and_retained_owners(&mut self) -> Result<Owners, O::Error> {
        let mut completed = FamilySets(vec![0; self.id_count]);
        let mut retained = vec![false; self.id_count];
        for (index, facts) in self.items.iter().enumerate() {
            let Some(facts) = facts else { continue };
            let str_type = facts.kind.str_type();
            if let (Some(ItemType::Output(family)), Some(call_id)) = (str_type, facts.call_id) {
                completed.insert(family, call_id);
            }
            let Some(owner) = self.ask.program_owner(index, facts)? else {
                continue;
            };
            let is_retained = match self.prunable {
                Some(mask) => !mask[index],
                None => {
                    self.ask.is_pending_hosted_shell_call(index, facts)?
                        || str_type.is_some_and(|kind| {
                            kind.is_program_owned_hosted() || matches!(kind, ItemType::Output(_))
                        })
                }
            };
            if is_retained {
                retained[owner as usize] = true;
            }
        }
        Ok(Owners {
            completed,
            retained,
        })
    }

    /// Pass 2: anonymous tool searches pair with later anonymous outputs, innermost first.
    fn matched_anonymous_searches(&mut self) -> Result<Vec<bool>, O::Error> {
        let tool_search_output = ItemType::Output(CallFamily::ToolSearch);
        let tool_search_call = ItemType::Call(CallFamily::ToolSearch);
        let mut matched = vec![false; self.items.len()];
        let mut pending_outputs = 0usize;
        for index in (0..self.items.len()).rev() {
            let Some(facts) = &self.items[index] else {
                continue;
            };
            if facts.call_id.is_some() {
                continue;
            }
            if self.ask.type_is(
                index,
                facts,
                tool_search_output,
                Question::TypeEqualsToolSearchOutput,
            )? {
                pending_outputs += 1;
            } else if self.ask.type_is(
                index,
                facts,
                tool_search_call,
                Question::TypeEqualsToolSearchCall,
            )? && pending_outputs > 0
            {
                matched[index] = true;
                pending_outputs -= 1;
            }
        }
        Ok(matched)
    }

    /// Pass 3: prunable programs without an output: active while they own a retained item.
    fn active_and_orphan_programs(&mut self, owners: &Owners) -> Result<Programs, O::Error> {
        let program = ItemType::Call(CallFamily::Program);
        let mut programs = Programs {
            active: vec![false; self.id_count],
            orphan: vec![false; self.id_count],
        };
        for (index, facts) in self.items.iter().enumerate() {
            let Some(facts) = facts else { continue };
            if !self
                .ask
                .type_is(index, facts, program, Question::TypeNotUnequalProgram)?
                || !allowed(self.prunable, index)
            {
                continue;
            }
            let Some(call_id) = facts.call_id else {
                continue;
            };
            if owners.completed.contains(CallFamily::Program, call_id) {
                continue;
            }
            if owners.retained[call_id as usize] {
                programs.active[call_id as usize] = true;
            } else {
                programs.orphan[call_id as usize] = true;
            }
        }
        Ok(programs)
    }

    /// Pass 4: drop the prunable calls without an output and the items of orphan programs.
    fn drop_orphans(
        &mut self,
        completed: &FamilySets,
        matched_anonymous: &[bool],
        programs: &Programs,
    ) -> Result<Drops, O::Error> {
        let mut drops = Drops {
            dropped: vec![false; self.items.len()],
            orphaned: vec![false; self.items.len()],
        };
        for (index, facts) in self.items.iter().enumerate() {
            let Some(facts) = facts else { continue };
            if !allowed(self.prunable, index) {
                continue;
            }
            let Some(kind) = facts.kind.str_type() else {
                continue;
            };
            let owner = self.ask.program_owner(index, facts)?;
            if owner.is_some_and(|owner| programs.orphan[owner as usize]) {
                drops.dropped[index] = true;
                drops.orphaned[index] = true;
                continue;
            }
            let ItemType::Call(family) = kind else {
                continue;
            };
            if owner.is_some() && self.ask.is_pending_hosted_shell_call(index, facts)? {
                continue;
            }
            match facts.call_id {
                Some(call_id) => {
                    if family == CallFamily::Program && programs.active[call_id as usize] {
                        continue;
                    }
                    if completed.contains(family, call_id) {
                        continue;
                    }
                }
                None => {
                    if family == CallFamily::ToolSearch && matched_anonymous[index] {
                        continue;
                    }
                }
            }
            drops.dropped[index] = true;
            drops.orphaned[index] = true;
        }
        Ok(drops)
    }

    /// Pass 5: drop the `output_prunable` outputs whose call did not stay.
    fn drop_outputs_without_calls(&self, output_prunable: &[bool], dropped: &mut [bool]) {
        let mut available = FamilySets(vec![0; self.id_count]);
        for (index, facts) in self.items.iter().enumerate() {
            let Some(facts) = facts else { continue };
            if dropped[index] {
                continue;
            }
            if let (Some(ItemType::Call(family)), Some(call_id)) =
                (facts.kind.str_type(), facts.call_id)
            {
                available.insert(family, call_id);
            }
        }
        for (index, facts) in self.items.iter().enumerate() {
            let Some(facts) = facts else { continue };
            if dropped[index] || !output_prunable[index] {
                continue;
            }
            if let (Some(ItemType::Output(family)), Some(call_id)) =
                (facts.kind.str_type(), facts.call_id)
            {
                if !available.contains(family, call_id) {
                    dropped[index] = true;
                }
            }
        }
    }

    /// Pass 6: reasoning goes with the next item when that was dropped as an orphan (one
    /// backward sweep, so long reasoning runs stay linear).
    fn drop_reasoning_before_orphans(&mut self, drops: &mut Drops) -> Result<(), O::Error> {
        let mut follower_dropped = false;
        for index in (0..self.items.len()).rev() {
            let reasoning = match &self.items[index] {
                Some(facts) => self.ask.type_is(
                    index,
                    facts,
                    ItemType::Reasoning,
                    Question::TypeEqualsReasoning,
                )?,
                None => false,
            };
            if reasoning {
                if follower_dropped && !drops.dropped[index] && allowed(self.prunable, index) {
                    drops.dropped[index] = true;
                }
            } else {
                follower_dropped = drops.orphaned[index];
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: &str, call_id: Option<u32>) -> Option<ItemFacts> {
        Some(ItemFacts {
            kind: TypeFact::Str(ItemType::of(kind.as_bytes())),
            call_id,
            program_owner: None,
            caller_type_opaque: false,
            status: StatusFact::Pending,
        })
    }

    fn run(items: &[Option<ItemFacts>], pruning: &Pruning<'_>) -> Vec<usize> {
        kept(items, 16, pruning, &mut NoOracle).unwrap()
    }

    const ALL: Pruning<'static> = Pruning {
        prunable: None,
        output_prunable: None,
    };

    #[test]
    fn orphan_call_goes_with_its_reasoning_run() {
        let items = [
            item("message", None),
            item("reasoning", None),
            item("reasoning", None),
            item("function_call", Some(0)),
            item("function_call", Some(1)),
            item("function_call_output", Some(1)),
        ];
        assert_eq!(run(&items, &ALL), [0, 4, 5]);
    }

    #[test]
    fn pruning_indexes_protect_positions() {
        let items = [item("reasoning", None), item("function_call", Some(0))];
        let mask = [false, true];
        let pruning = Pruning {
            prunable: Some(&mask),
            output_prunable: None,
        };
        assert_eq!(run(&items, &pruning), [0]);
    }

    #[test]
    fn outputs_whose_call_is_gone_drop_only_when_allowed() {
        let items = [item("function_call_output", Some(0)), None];
        assert_eq!(run(&items, &ALL), [0, 1]);
        let mask = [true, true];
        let pruning = Pruning {
            prunable: None,
            output_prunable: Some(&mask),
        };
        assert_eq!(run(&items, &pruning), [1]);
    }

    #[test]
    fn anonymous_tool_search_pairs_with_a_later_output() {
        let items = [
            item("tool_search_call", None),
            item("tool_search_call", None),
            item("tool_search_output", None),
        ];
        assert_eq!(run(&items, &ALL), [1, 2]);
    }

    #[test]
    fn programs_live_while_they_own_retained_items() {
        let mut hosted = item("web_search_call", None).unwrap();
        hosted.program_owner = Some(7);
        let mut issued = item("function_call", Some(8)).unwrap();
        issued.program_owner = Some(9);
        let items = [
            item("program", Some(7)),
            Some(hosted),
            item("program", Some(9)),
            Some(issued),
        ];
        // Program 9 owns nothing retained, so it and its call go.
        assert_eq!(run(&items, &ALL), [0, 1]);
    }

    struct Recorder {
        asked: Vec<(usize, Question)>,
        answer: bool,
    }

    impl Oracle for Recorder {
        type Error = std::convert::Infallible;
        fn ask(&mut self, index: usize, question: Question) -> Result<bool, Self::Error> {
            self.asked.push((index, question));
            Ok(self.answer)
        }
    }

    #[test]
    fn opaque_types_are_asked_only_where_the_rules_compare() {
        let opaque = Some(ItemFacts {
            kind: TypeFact::Opaque,
            call_id: Some(0),
            program_owner: None,
            caller_type_opaque: false,
            status: StatusFact::Opaque,
        });
        let items = [opaque, item("function_call", Some(1))];
        let mut oracle = Recorder {
            asked: Vec::new(),
            answer: true,
        };
        // A type equal to everything counts as reasoning and goes with the orphan call.
        assert_eq!(
            kept(&items, 2, &ALL, &mut oracle).unwrap(),
            Vec::<usize>::new()
        );
        assert_eq!(
            oracle.asked,
            [
                (0, Question::TypeNotUnequalProgram),
                (0, Question::TypeEqualsReasoning)
            ]
        );
    }
}
