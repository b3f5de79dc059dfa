//! The golden vectors in `tests/vectors/*.json`, shared with the Python suite.

use std::convert::Infallible;
use std::path::PathBuf;

use _core::core::canonical;
use _core::core::classify::{self, ContentKeys};
use _core::core::dedupe;
use _core::core::digits;
use _core::core::input_rules::{
    self, Checker, Facts, ItemReader, Required, Stored, StoredReader, TypeClass,
};
use _core::core::keys::{Field, ItemFields, ItemType, KeyBuilder};
use _core::core::orphans::{self, ItemFacts, NoOracle, Pruning, StatusFact, TypeFact};
use _core::core::strings::Strings;
use serde_json::{Map, Value};

fn load(name: &str) -> Vec<Value> {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "vectors", name]
        .iter()
        .collect();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Array(cases)) => cases,
        other => panic!("{name} must hold a JSON array of cases, got {other:?}"),
    }
}

fn name(case: &Value) -> &str {
    case["name"].as_str().expect("every case has a name")
}

fn as_index(value: &Value) -> usize {
    let index = value.as_u64().expect("a non-negative index");
    usize::try_from(index).expect("an index fits usize")
}

fn indexes(value: &Value) -> Vec<usize> {
    value
        .as_array()
        .expect("an array of indexes")
        .iter()
        .map(as_index)
        .collect()
}

fn encode(value: &Value, out: &mut Vec<u8>, top: bool) {
    match value {
        Value::Null => canonical::write_constant(out, None),
        Value::Bool(flag) => canonical::write_constant(out, Some(*flag)),
        Value::Number(number) => {
            if let Some(small) = number.as_i64() {
                canonical::write_i64(out, small);
            } else if let Some(large) = number.as_u64() {
                out.extend_from_slice(large.to_string().as_bytes());
            } else {
                canonical::write_float(out, number.as_f64().expect("a finite float"));
            }
        }
        Value::String(text) => canonical::write_string(out, text.as_bytes()),
        Value::Array(members) => {
            out.push(b'[');
            for (position, member) in members.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                encode(member, out, false);
            }
            out.push(b']');
        }
        Value::Object(entries) => {
            let mut entries: Vec<_> = entries
                .iter()
                .filter(|(key, _)| !(top && canonical::is_metadata_key(key.as_bytes())))
                .collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (position, (key, member)) in entries.into_iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                canonical::write_string(out, key.as_bytes());
                out.push(b':');
                encode(member, out, false);
            }
            out.push(b'}');
        }
    }
}

fn canonical_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode(value, &mut out, true);
    out
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64() != Some(0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(members) => !members.is_empty(),
        Value::Object(entries) => !entries.is_empty(),
    }
}

fn python_str(value: &Value) -> Vec<u8> {
    match value {
        Value::Null => b"None".to_vec(),
        Value::Bool(true) => b"True".to_vec(),
        Value::Bool(false) => b"False".to_vec(),
        Value::Number(number) if number.is_f64() => {
            let mut out = Vec::new();
            canonical::write_float(&mut out, number.as_f64().unwrap());
            out
        }
        Value::Number(number) => number.to_string().into_bytes(),
        other => panic!("no str() rule in this test for {other}"),
    }
}

struct JsonFields<'a>(&'a Map<String, Value>);

impl ItemFields for JsonFields<'_> {
    type Error = Infallible;

    fn has_role(&mut self) -> Result<bool, Infallible> {
        Ok(!self.0.get("role").unwrap_or(&Value::Null).is_null())
    }

    fn kind(&mut self, text: &mut Vec<u8>) -> Result<bool, Infallible> {
        text.clear();
        Ok(match self.0.get("type") {
            Some(Value::String(kind)) if !kind.is_empty() => {
                text.extend_from_slice(kind.as_bytes());
                true
            }
            Some(value) if truthy(value) => {
                text.extend_from_slice(&python_str(value));
                false
            }
            _ => {
                text.extend_from_slice(b"None");
                false
            }
        })
    }

    fn str_field(&mut self, field: Field, text: &mut Vec<u8>) -> Result<bool, Infallible> {
        let name = match field {
            Field::CallId => "call_id",
            Field::Id => "id",
            Field::ApprovalRequestId => "approval_request_id",
        };
        text.clear();
        match self.0.get(name).and_then(Value::as_str) {
            Some(value) => {
                text.extend_from_slice(value.as_bytes());
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

fn dedupe_key(item: &Value) -> Option<(Vec<u8>, bool)> {
    let Value::Object(entries) = item else {
        return None;
    };
    let mut builder = KeyBuilder::default();
    let info = builder.build(&mut JsonFields(entries)).unwrap()?;
    Some((builder.key().to_vec(), info.precursor))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[test]
fn canonical_bytes_and_content_keys() {
    let cases = load("canonical.json");
    assert!(!cases.is_empty());
    for case in &cases {
        let bytes = canonical_bytes(&case["item"]);
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            case["canonical"].as_str().unwrap(),
            "{}",
            name(case)
        );
        assert_eq!(
            hex(&canonical::content_key(&bytes)),
            case["content_key"].as_str().unwrap(),
            "{}",
            name(case)
        );
    }
}

#[test]
fn dedupe_keys() {
    let cases = load("dedupe_key.json");
    assert!(!cases.is_empty());
    for case in &cases {
        let key = dedupe_key(&case["item"]).map(|(key, _)| String::from_utf8(key).unwrap());
        assert_eq!(key.as_deref(), case["key"].as_str(), "{}", name(case));
    }
}

#[test]
fn dedupe_first_wins_and_latest() {
    let cases = load("dedupe.json");
    assert!(!cases.is_empty());
    for case in &cases {
        let mut strings = Strings::default();
        let mut keyed: Vec<Option<dedupe::Keyed>> = case["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                dedupe_key(item).map(|(key, precursor)| dedupe::Keyed {
                    id: strings.push(&key),
                    precursor,
                })
            })
            .collect();
        let ids = strings.number().to_vec();
        for key in keyed.iter_mut().flatten() {
            key.id = ids[key.id as usize];
        }
        let key_ids: Vec<Option<u32>> = keyed.iter().map(|key| key.map(|key| key.id)).collect();
        assert_eq!(
            dedupe::first_wins(&key_ids, strings.len()),
            indexes(&case["first_wins"]),
            "{}",
            name(case)
        );
        assert_eq!(
            dedupe::preferring_latest(&keyed, strings.len()),
            indexes(&case["latest"]),
            "{}",
            name(case)
        );
    }
}

fn orphan_facts(item: &Value, ids: &mut Strings) -> Option<ItemFacts> {
    let Value::Object(entries) = item else {
        return None;
    };
    let kind = match entries.get("type") {
        Some(Value::String(text)) => TypeFact::Str(ItemType::of(text.as_bytes())),
        // null, numbers, bools, lists and dicts never equal a str in Python.
        _ => TypeFact::NeverEqual,
    };
    let mut text_id = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .map(|t| ids.push(t.as_bytes()))
    };
    let call_id = text_id(entries.get("call_id"));
    let program_owner = match entries.get("caller") {
        Some(Value::Object(caller))
            if caller.get("type").and_then(Value::as_str) == Some("program") =>
        {
            text_id(caller.get("caller_id"))
        }
        _ => None,
    };
    let status = match entries.get("status") {
        None | Some(Value::Null) => StatusFact::Pending,
        Some(status) if status.as_str() == Some("in_progress") => StatusFact::Pending,
        Some(_) => StatusFact::NotPending,
    };
    Some(ItemFacts {
        kind,
        call_id,
        program_owner,
        caller_type_opaque: false,
        status,
    })
}

fn mask(value: &Value, length: usize) -> Option<Vec<bool>> {
    let positions = value.as_array()?;
    let mut mask = vec![false; length];
    for position in positions {
        let position = position.as_i64().expect("an int position");
        if let Ok(position) = usize::try_from(position) {
            if position < length {
                mask[position] = true;
            }
        }
    }
    Some(mask)
}

#[test]
fn orphan_pruning() {
    let cases = load("orphans.json");
    assert!(!cases.is_empty());
    for case in &cases {
        let items = case["items"].as_array().unwrap();
        let mut strings = Strings::default();
        let mut facts: Vec<Option<ItemFacts>> = items
            .iter()
            .map(|item| orphan_facts(item, &mut strings))
            .collect();
        orphans::number_strings(&mut facts, &mut strings);
        let prunable = mask(&case["pruning_indexes"], items.len());
        let output_prunable = mask(&case["output_pruning_indexes"], items.len());
        let pruning = Pruning {
            prunable: prunable.as_deref(),
            output_prunable: output_prunable.as_deref(),
        };
        assert_eq!(
            orphans::kept(&facts, strings.len(), &pruning, &mut NoOracle).unwrap(),
            indexes(&case["kept"]),
            "{}",
            name(case)
        );
    }
}

struct JsonKeys<'a> {
    history: &'a [Value],
    new_items: &'a [Value],
    combined: Vec<&'a Value>,
}

fn key_of(value: &Value) -> u128 {
    u128::from_be_bytes(canonical::content_key(&canonical_bytes(value)))
}

impl ContentKeys for JsonKeys<'_> {
    type Error = Infallible;
    fn new_item(&mut self, index: usize) -> Result<u128, Infallible> {
        Ok(key_of(&self.new_items[index]))
    }
    fn combined(&mut self, position: usize) -> Result<u128, Infallible> {
        Ok(key_of(self.combined[position]))
    }
    fn history(&mut self) -> Result<Vec<u128>, Infallible> {
        Ok(self.history.iter().map(key_of).collect())
    }
}

#[test]
fn callback_classification() {
    let cases = load("classify.json");
    assert!(!cases.is_empty());
    for case in &cases {
        let history = case["history"].as_array().unwrap();
        let new_items = case["new_items"].as_array().unwrap();
        // Identities: history i is i, new item j is H + j, fresh values are unique above.
        let fresh_base = history.len() + new_items.len();
        let mut combined_ids = Vec::new();
        let mut combined = Vec::new();
        for (position, entry) in case["combined"].as_array().unwrap().iter().enumerate() {
            if let Some(index) = entry.get("history") {
                let index = as_index(index);
                combined_ids.push(index);
                combined.push(&history[index]);
            } else if let Some(index) = entry.get("new") {
                let index = as_index(index);
                combined_ids.push(history.len() + index);
                combined.push(&new_items[index]);
            } else {
                combined_ids.push(fresh_base + position);
                combined.push(&entry["value"]);
            }
        }
        let history_ids: Vec<usize> = (0..history.len()).collect();
        let new_ids: Vec<usize> = (history.len()..fresh_base).collect();
        let mut keys = JsonKeys {
            history,
            new_items,
            combined,
        };
        let result = classify::classify(&history_ids, &new_ids, &combined_ids, &mut keys).unwrap();
        assert_eq!(
            result.history_positions,
            indexes(&case["history_positions"]),
            "{}",
            name(case)
        );
        assert_eq!(
            result.persisted_positions,
            indexes(&case["persisted_positions"]),
            "{}",
            name(case)
        );
    }
}

#[test]
fn long_integer_runs() {
    let cases = load("long_integers.json");
    assert!(!cases.is_empty());
    for case in &cases {
        let text = case["text"].as_str().expect("every case has a text");
        let long = case["long"]
            .as_bool()
            .expect("every case says whether it is long");
        assert_eq!(
            digits::has_long_run(text.as_bytes()),
            long,
            "{}",
            name(case)
        );
    }
}

struct JsonItem<'a>(&'a Map<String, Value>);

fn append_text(value: Option<&Value>, out: &mut Vec<u8>) -> bool {
    match value {
        Some(Value::String(text)) => {
            out.extend_from_slice(text.as_bytes());
            true
        }
        _ => false,
    }
}

impl ItemReader for JsonItem<'_> {
    type Error = Infallible;

    fn kind(&mut self) -> Result<Option<TypeClass>, Infallible> {
        Ok(self
            .0
            .get("type")
            .and_then(Value::as_str)
            .map(|kind| TypeClass::of(kind.as_bytes())))
    }

    fn role(&mut self) -> Result<Option<bool>, Infallible> {
        Ok(match self.0.get("role") {
            None | Some(Value::Null) => None,
            Some(role) => Some(matches!(
                role.as_str(),
                Some("user" | "system" | "developer")
            )),
        })
    }

    fn id(&mut self, out: &mut Vec<u8>) -> Result<bool, Infallible> {
        Ok(append_text(self.0.get("id"), out))
    }

    fn program_caller(&mut self, out: &mut Vec<u8>) -> Result<bool, Infallible> {
        Ok(match self.0.get("caller") {
            Some(Value::Object(caller))
                if caller.get("type").and_then(Value::as_str) == Some("program") =>
            {
                append_text(caller.get("caller_id"), out)
            }
            _ => false,
        })
    }

    fn call_id(&mut self, out: &mut Vec<u8>) -> Result<bool, Infallible> {
        Ok(append_text(self.0.get("call_id"), out))
    }

    fn pending(&mut self, shell: bool) -> Result<bool, Infallible> {
        Ok(shell
            && match self.0.get("status") {
                None | Some(Value::Null) => true,
                Some(status) => status.as_str() == Some("in_progress"),
            })
    }
}

impl StoredReader for JsonItem<'_> {
    type Error = Infallible;

    fn is_reasoning(&mut self) -> Result<bool, Infallible> {
        let reasoning = self.0.get("type").and_then(Value::as_str) == Some("reasoning");
        Ok(reasoning && matches!(self.0.get("role"), None | Some(Value::Null)))
    }

    fn id(&mut self, out: &mut Vec<u8>) -> Result<bool, Infallible> {
        ItemReader::id(self, out)
    }
}

fn stored_facts(history: &[Value], strings: &mut Strings) -> Stored {
    let mut key = Vec::new();
    let mut stored = Stored::default();
    for item in history {
        let mut entries = item.as_object().map(JsonItem);
        let Ok(()) = stored.read(entries.as_mut(), strings, &mut key);
    }
    stored
}

fn input_facts(items: &[Value], strings: &mut Strings) -> Vec<Facts> {
    let mut key = Vec::new();
    items
        .iter()
        .map(|item| match item {
            Value::Object(entries) => {
                let Ok(facts) = input_rules::read(&mut JsonItem(entries), strings, &mut key);
                facts
            }
            _ => Facts::default(),
        })
        .collect()
}

fn problem_value(problem: &input_rules::Problem, strings: &Strings) -> Value {
    let detail = problem.detail.map_or(Value::Null, |id| {
        let text = input_rules::key_text(strings.get(id));
        Value::String(String::from_utf8(text.to_vec()).expect("UTF-8 text"))
    });
    Value::Array(vec![
        Value::from(problem.position),
        Value::from(problem.kind.name()),
        detail,
    ])
}

/// The problems and the kept positions of `items` under the rules (`history`: the case's).
fn rules_of(items: &[Value], history: &Value) -> (Vec<Value>, Vec<usize>) {
    let mut strings = Strings::default();
    let mut facts = input_facts(items, &mut strings);
    let stored = history
        .as_array()
        .map(|history| stored_facts(history, &mut strings));
    let id_count = strings.len();
    let ids = strings.number().to_vec();
    input_rules::number(&mut facts, &ids);
    let required = stored.map_or_else(Required::default, |stored| {
        Required::of(&stored, &ids, id_count)
    });
    let found: Vec<Value> = Checker::new(&facts, &required, id_count)
        .problems()
        .iter()
        .map(|problem| problem_value(problem, &strings))
        .collect();
    (found, input_rules::repair(&facts, &required, id_count))
}

/// `repair_input(dangling="synthesize")` as the binding makes it of the core's rules: an
/// output after each function or custom tool call `call_without_output`, then the repair;
/// entries as the vectors write them (an input position, or `{"lost": call position}`).
fn synthesized(items: &[Value], history: &Value, found: &[Value]) -> Value {
    let dangling: Vec<usize> = found
        .iter()
        .filter(|problem| problem[1] == "call_without_output")
        .map(|problem| as_index(&problem[0]))
        .collect();
    let mut augmented = Vec::new();
    let mut entries = Vec::new();
    for (position, item) in items.iter().enumerate() {
        augmented.push(item.clone());
        entries.push(Value::from(position));
        let kind = item["type"].as_str().unwrap_or("");
        if dangling.contains(&position) && matches!(kind, "function_call" | "custom_tool_call") {
            let mut output = Map::new();
            output.insert("type".into(), Value::from(format!("{kind}_output")));
            output.insert("call_id".into(), item["call_id"].clone());
            output.insert("output".into(), Value::from("lost"));
            augmented.push(Value::Object(output));
            let mut lost = Map::new();
            lost.insert("lost".into(), Value::from(position));
            entries.push(Value::Object(lost));
        }
    }
    let (_, kept) = rules_of(&augmented, history);
    Value::Array(kept.into_iter().map(|at| entries[at].clone()).collect())
}

#[test]
fn model_input_rules() {
    let cases = load("input_rules.json");
    assert!(!cases.is_empty());
    for case in &cases {
        let items = case["items"].as_array().expect("items");
        let (found, kept) = rules_of(items, &case["history"]);
        assert_eq!(
            Value::Array(found.clone()),
            case["problems"],
            "{}",
            name(case)
        );
        assert_eq!(kept, indexes(&case["kept"]), "{}", name(case));
        assert_eq!(
            synthesized(items, &case["history"], &found),
            case["synthesized"],
            "{}",
            name(case)
        );
    }
}
