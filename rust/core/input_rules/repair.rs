//! The items a repair keeps ([`repair`]): the rounds of dropping, the later ones incremental.

use super::*;

/// Positions of the items `repair_input` keeps, in order: without the units that hold a problem
/// (user messages are never dropped), until no fixable problem is left. Round one is the twin's;
/// later rounds are followed incrementally, exact as units go whole (docs/design.md, "Units").
pub fn repair(items: &[Facts], required: &Required, id_count: usize) -> Vec<usize> {
    let checker = Checker::new(items, required, id_count);
    let fixable: Vec<usize> = checker
        .problems()
        .iter()
        .map(|problem| problem.position)
        .filter(|&position| items[position].class != Class::User)
        .collect();
    if fixable.is_empty() {
        return (0..items.len()).collect();
    }
    let roots = checker.unit_roots();
    let mut broken = vec![false; items.len()];
    for position in fixable {
        broken[roots[position] as usize] = true;
    }
    let mut dropped: Vec<bool> = items
        .iter()
        .zip(&roots)
        .map(|(facts, &root)| facts.class != Class::User && broken[root as usize])
        .collect();
    let second_round = second_round_problems(&checker, &dropped);
    Cascade::new(&checker, &roots, &dropped).run(second_round, &mut dropped);
    (0..items.len())
        .filter(|&position| !dropped[position])
        .collect()
}

/// Positions breaking rule (e) after the first round's drops (`dropped`): only an item whose
/// predecessor went can (the others kept the item before them, and had no fixable problem).
fn second_round_problems(checker: &Checker<'_>, dropped: &[bool]) -> Vec<u32> {
    let mut found = Vec::new();
    if checker.required.is_empty() {
        return found;
    }
    let mut previous = None;
    for (position, facts) in checker.items.iter().enumerate() {
        if dropped[position] {
            continue;
        }
        let moved = position > 0 && dropped[position - 1];
        if moved && facts.class != Class::User && checker.lacks_reasoning(facts, previous) {
            found.push(at(position));
        }
        previous = Some(facts);
    }
    found
}

/// The rounds after the first: dropping units whose problems earlier drops uncovered.
struct Cascade<'c, 'a> {
    checker: &'c Checker<'a>,
    roots: &'c [u32],
    /// Program pair key -> its group in `issued` and `calls` (`NONE` for others).
    group: Vec<u32>,
    /// Per program: positions of the items it issued, then of its kept calls with no
    /// output after them (each exempt while the program issued a later item).
    issued: Groups,
    calls: Groups,
    /// Unit roots -> members, made when a unit is first dropped here.
    members: Option<Groups>,
}

impl<'c, 'a> Cascade<'c, 'a> {
    fn new(checker: &'c Checker<'a>, roots: &'c [u32], dropped: &[bool]) -> Self {
        let items = checker.items;
        let mut group = Vec::new();
        let mut groups = 0;
        for (position, facts) in items.iter().enumerate() {
            if facts.program && !dropped[position] && checker.is_late(at(position), facts) {
                if group.is_empty() {
                    group = vec![NONE; checker.slots.len()];
                }
                let pair = facts.pair().expect("a call has a pair") as usize;
                if group[pair] == NONE {
                    group[pair] = groups;
                    groups += 1;
                }
            }
        }
        if groups == 0 {
            // No program to follow (the common case): skip the scans below.
            let none = || Groups::new(0, std::iter::empty());
            return Cascade {
                checker,
                roots,
                group,
                issued: none(),
                calls: none(),
                members: None,
            };
        }
        let group_of = |key: Option<u32>| key.and_then(|key| group.get(key as usize).copied());
        let in_group = |key: Option<u32>| group_of(key).filter(|&group| group != NONE);
        let positions = items
            .iter()
            .enumerate()
            .map(|(position, facts)| (at(position), facts));
        let issued = positions
            .clone()
            .filter_map(|(position, facts)| Some((in_group(facts.caller())?, position)));
        let calls = positions.filter_map(|(position, facts)| {
            let late =
                facts.program && !dropped[position as usize] && checker.is_late(position, facts);
            Some((in_group(facts.pair()).filter(|_| late)?, position))
        });
        let (issued, calls) = (
            Groups::new(groups as usize, issued),
            Groups::new(groups as usize, calls),
        );
        Cascade {
            checker,
            roots,
            group,
            issued,
            calls,
            members: None,
        }
    }

    /// Drop the units of `second_round` (rule (e) problems), then every program call that
    /// loses its exemption, with its unit, until none does.
    fn run(mut self, second_round: Vec<u32>, dropped: &mut [bool]) {
        let mut dirty = Vec::new();
        for position in second_round {
            self.drop_unit(position, dropped, &mut dirty);
        }
        let groups = self.calls.start.len() - 1;
        // Per program, how much of `issued` / `calls` may still matter (from the back).
        let mut issued_end: Vec<u32> = self.issued.start[1..].to_vec();
        let mut calls_end: Vec<u32> = self.calls.start[1..].to_vec();
        dirty.extend(0..at(groups));
        while let Some(group) = dirty.pop() {
            let group = group as usize;
            let (issued_start, calls_start) = (self.issued.start[group], self.calls.start[group]);
            while issued_end[group] > issued_start
                && dropped[self.issued.positions[issued_end[group] as usize - 1] as usize]
            {
                issued_end[group] -= 1;
            }
            let last_issued = if issued_end[group] > issued_start {
                self.issued.positions[issued_end[group] as usize - 1] + 1
            } else {
                0
            };
            while calls_end[group] > calls_start {
                let call = self.calls.positions[calls_end[group] as usize - 1];
                if last_issued > call + 1 {
                    break; // still exempt, and so are the calls before it
                }
                calls_end[group] -= 1;
                if !dropped[call as usize] {
                    self.drop_unit(call, dropped, &mut dirty);
                }
            }
        }
    }

    /// Drop the unit of `position` (user messages excepted); the programs that issued a
    /// dropped item go to `dirty`.
    fn drop_unit(&mut self, position: u32, dropped: &mut [bool], dirty: &mut Vec<u32>) {
        let roots = self.roots;
        let members = self.members.get_or_insert_with(|| {
            let entries = roots.iter().enumerate();
            Groups::new(
                roots.len(),
                entries.map(|(position, &root)| (root, at(position))),
            )
        });
        for &member in members.get(roots[position as usize]) {
            let facts = &self.checker.items[member as usize];
            if dropped[member as usize] || facts.class == Class::User {
                continue;
            }
            dropped[member as usize] = true;
            if let Some(&group) = facts
                .caller()
                .and_then(|caller| self.group.get(caller as usize))
            {
                if group != NONE {
                    dirty.push(group);
                }
            }
        }
    }
}

/// Positions grouped by a key below a bound, ascending within each group.
struct Groups {
    /// Group `g` is `positions[start[g]..start[g + 1]]`.
    start: Vec<u32>,
    positions: Vec<u32>,
}

impl Groups {
    /// Group `entries` (`(group, position)`, positions ascending) by group.
    fn new(groups: usize, entries: impl Iterator<Item = (u32, u32)> + Clone) -> Self {
        let mut start = vec![0u32; groups + 1];
        for (group, _) in entries.clone() {
            start[group as usize + 1] += 1;
        }
        for group in 0..groups {
            start[group + 1] += start[group];
        }
        let mut next = start.clone();
        let mut positions = vec![0; start[groups] as usize];
        for (group, position) in entries {
            let slot = &mut next[group as usize];
            positions[*slot as usize] = position;
            *slot += 1;
        }
        Groups { start, positions }
    }

    fn get(&self, group: u32) -> &[u32] {
        let group = group as usize;
        &self.positions[self.start[group] as usize..self.start[group + 1] as usize]
    }
}
