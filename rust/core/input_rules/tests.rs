//! The rules and the repair on hand-made and random lists.

use super::*;

// String ids of the tests: pair keys 0-3 are programs, 4-5 functions, 6 a shell call;
// 7 and up are item ids.
const ID_COUNT: usize = 16;
const SHELL: u32 = 6;

fn item(class: Class) -> Facts {
    Facts {
        class,
        ..Facts::default()
    }
}

fn with_id(class: Class, id: u32) -> Facts {
    Facts {
        id: Some(Key::new(id)),
        ..item(class)
    }
}

fn call(pair: u32) -> Facts {
    Facts {
        pair: Some(Key::new(pair)),
        program: pair < 4,
        ..item(Class::Call)
    }
}

fn output(pair: u32) -> Facts {
    Facts {
        pair: Some(Key::new(pair)),
        ..item(Class::Output)
    }
}

fn issued_by(program: u32, facts: Facts) -> Facts {
    Facts {
        caller: Some(Key::new(program)),
        ..facts
    }
}

fn required_of(history: &[Facts]) -> Required {
    let mut stored = Stored::default();
    for facts in history {
        stored.push(facts.class == Class::Reasoning, facts.id());
    }
    let ids: Vec<u32> = (0..ID_COUNT).map(at).collect();
    Required::of(&stored, &ids, ID_COUNT)
}

fn kinds(items: &[Facts], required: &Required) -> Vec<(usize, &'static str)> {
    Checker::new(items, required, ID_COUNT)
        .problems()
        .iter()
        .map(|problem| (problem.position, problem.kind.name()))
        .collect()
}

#[test]
fn facts_take_16_bytes() {
    assert_eq!(size_of::<Facts>(), 16);
}

#[test]
fn a_clean_turn_has_no_problem() {
    let items = [
        item(Class::User),
        with_id(Class::Reasoning, 7),
        call(4),
        output(4),
        with_id(Class::Reasoning, 8),
        with_id(Class::Produced, 9),
    ];
    assert_eq!(kinds(&items, &Required::default()), []);
    assert_eq!(
        repair(&items, &Required::default(), ID_COUNT),
        [0, 1, 2, 3, 4, 5]
    );
}

#[test]
fn every_rule_is_reported_in_position_then_rule_order() {
    let items = [
        output(5),                    // (a)
        with_id(Class::Reasoning, 7), // (d): followed by a user message
        with_id(Class::User, 9),
        with_id(Class::Produced, 9), // (c)
        call(4),                     // (b), then (c): not trailing
        with_id(Class::Other, 10),
        with_id(Class::Reasoning, 11),
        call(5), // awaiting: trailing
    ];
    let items = {
        let mut items = items;
        items[4].id = Some(Key::new(7));
        items
    };
    assert_eq!(
        kinds(&items, &Required::default()),
        [
            (0, "output_without_call"),
            (1, "reasoning_without_item"),
            (3, "duplicate_id"),
            (4, "call_without_output"),
            (4, "duplicate_id"),
            (7, "call_awaiting_output"),
        ]
    );
    // The output before its call stays an output without call; the reasoning run
    // and the call after it are one unit, dropped for the call.
    assert_eq!(repair(&items, &Required::default(), ID_COUNT), [2, 5]);
}

#[test]
fn programs_and_pending_hosted_shell_calls_are_exempt() {
    let items = [
        call(0),
        issued_by(0, with_id(Class::Produced, 7)),
        issued_by(
            0,
            Facts {
                pending_hosted: true,
                ..call(SHELL)
            },
        ),
        item(Class::User),
    ];
    assert_eq!(kinds(&items, &Required::default()), []);
    // Without a later issued item the program is an orphan.
    assert_eq!(
        kinds(&items[..1], &Required::default()),
        [(0, "call_awaiting_output")]
    );
}

#[test]
fn history_requires_the_reasoning_stored_before_an_item() {
    let history = [
        with_id(Class::Reasoning, 7),
        with_id(Class::Output, 8),
        with_id(Class::Reasoning, 9),
        with_id(Class::Produced, 10),
    ];
    let required = required_of(&history);
    let items = [
        with_id(Class::Reasoning, 7),
        with_id(Class::Output, 8),
        with_id(Class::Produced, 10),
    ];
    assert_eq!(
        kinds(&items, &required),
        [(0, "reasoning_without_item"), (2, "item_without_reasoning")]
    );
    // Round one drops the reasoning run and the item lacking its reasoning; the
    // output then lacks its reasoning too (round two).
    assert_eq!(repair(&items, &required, ID_COUNT), Vec::<usize>::new());
}

#[test]
fn a_reasoning_item_that_lost_its_stored_successor_goes_alone() {
    // Stored [rs_1, fc_1, out_1, rs_2, msg_2]; a filter removed the call and output.
    let history = [
        with_id(Class::Reasoning, 7),
        with_id(Class::Call, 8),
        item(Class::Output),
        with_id(Class::Reasoning, 9),
        with_id(Class::Produced, 10),
    ];
    let items = [
        with_id(Class::Reasoning, 7),
        with_id(Class::Reasoning, 9),
        with_id(Class::Produced, 10),
    ];
    for required in [required_of(&history), Required::default()] {
        assert_eq!(
            kinds(&items, &required),
            [(0, "reasoning_without_successor")]
        );
        assert_eq!(repair(&items, &required, ID_COUNT), [1, 2]);
    }
    // Known, the successor must be the very item after it; at the end it is missing.
    let required = required_of(&history);
    assert_eq!(
        kinds(&items[..1], &required),
        [
            (0, "reasoning_without_item"),
            (0, "reasoning_without_successor")
        ]
    );
    let swapped = [with_id(Class::Reasoning, 9), with_id(Class::Produced, 12)];
    assert_eq!(
        kinds(&swapped, &required),
        [(0, "reasoning_without_successor")]
    );
    assert_eq!(repair(&swapped, &required, ID_COUNT), [1]);
    // A stored run is whole: the history knows the first item's successor.
    let run = [with_id(Class::Reasoning, 7), with_id(Class::Reasoning, 9)];
    assert_eq!(kinds(&[run[0], run[1], items[2]], &required_of(&run)), []);
}

#[test]
fn a_chain_of_programs_goes_in_one_pass() {
    // Program k issues program k + 1's call; the last issues an orphan call.
    let items = [
        call(0),
        issued_by(0, call(1)),
        issued_by(1, call(2)),
        issued_by(2, call(4)),
        item(Class::User),
    ];
    assert_eq!(
        kinds(&items, &Required::default()),
        [(3, "call_without_output")]
    );
    assert_eq!(repair(&items, &Required::default(), ID_COUNT), [4]);
}

/// The pure twin's `repair_input` loop, literally.
fn rounds(items: &[Facts], required: &Required) -> (Vec<usize>, usize) {
    let mut current: Vec<usize> = (0..items.len()).collect();
    for round in 0.. {
        let facts: Vec<Facts> = current.iter().map(|&position| items[position]).collect();
        let checker = Checker::new(&facts, required, ID_COUNT);
        let broken: Vec<usize> = checker
            .problems()
            .iter()
            .map(|problem| problem.position)
            .filter(|&position| facts[position].class != Class::User)
            .collect();
        if broken.is_empty() {
            return (current, round);
        }
        let roots = checker.unit_roots();
        let broken: Vec<u32> = broken.iter().map(|&position| roots[position]).collect();
        current = current
            .iter()
            .enumerate()
            .filter(|&(at, _)| facts[at].class == Class::User || !broken.contains(&roots[at]))
            .map(|(_, &position)| position)
            .collect();
    }
    unreachable!()
}

struct Random(u64);

impl Random {
    fn below(&mut self, bound: u32) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        u32::try_from(self.0 % u64::from(bound)).unwrap()
    }

    fn facts(&mut self) -> Facts {
        let class = [
            Class::Other,
            Class::Reasoning,
            Class::Reasoning,
            Class::Call,
            Class::Call,
            Class::Output,
            Class::Output,
            Class::User,
            Class::Produced,
        ][self.below(9) as usize];
        let mut facts = item(class);
        if matches!(class, Class::Call | Class::Output) {
            let pair = self.below(7);
            facts.pair = Some(Key::new(pair));
            facts.program = class == Class::Call && pair < 4;
            facts.pending_hosted = class == Class::Call && pair == SHELL && self.below(2) == 0;
        }
        if self.below(2) == 0 {
            facts.id = Some(Key::new(7 + self.below(6)));
        }
        if self.below(3) == 0 {
            facts.caller = Some(Key::new(self.below(4)));
        }
        facts
    }

    fn list(&mut self, max: u32) -> Vec<Facts> {
        (0..self.below(max + 1)).map(|_| self.facts()).collect()
    }
}

#[test]
fn incremental_rounds_match_the_twins_loop() {
    let mut random = Random(0x9E37_79B9_7F4A_7C15);
    let mut rounds_seen = [0usize; 4];
    for _ in 0..100_000 {
        let items = random.list(14);
        let required = if random.below(2) == 0 {
            Required::default()
        } else {
            required_of(&random.list(10))
        };
        let (expected, round_count) = rounds(&items, &required);
        rounds_seen[round_count.min(3)] += 1;
        assert_eq!(
            repair(&items, &required, ID_COUNT),
            expected,
            "{items:?} {:?}",
            required.before
        );
    }
    // The cases cover repairs of more than one round.
    assert!(
        rounds_seen[2] > 100 && rounds_seen[3] > 10,
        "{rounds_seen:?}"
    );
}
