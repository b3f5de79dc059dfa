//! Classification of what a session input callback returned (docs/design.md, rules 1-6):
//! identities first; content keys only for what is left, history's only if needed.

use super::strings::{MixMap, MixSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Label {
    History,
    Persist,
    Repeat,
}

pub trait ContentKeys {
    type Error;
    fn new_item(&mut self, index: usize) -> Result<u128, Self::Error>;
    fn combined(&mut self, position: usize) -> Result<u128, Self::Error>;
    fn history(&mut self) -> Result<Vec<u128>, Self::Error>;
}

/// Ascending positions of the callback's list that are history, and those to persist.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Classification {
    pub history_positions: Vec<usize>,
    pub persisted_positions: Vec<usize>,
}

/// Classify `combined` by the identities of the history copies, new-item copies and results.
pub fn classify<K: ContentKeys>(
    history_ids: &[usize],
    new_ids: &[usize],
    combined_ids: &[usize],
    keys: &mut K,
) -> Result<Classification, K::Error> {
    let history_set: MixSet<usize> = history_ids.iter().copied().collect();
    let mut new_index_by_id: MixMap<usize, usize> = MixMap::default();
    new_index_by_id.reserve(new_ids.len());
    for (index, &id) in new_ids.iter().enumerate() {
        new_index_by_id.entry(id).or_insert(index);
    }

    let mut labels: Vec<Option<Label>> = vec![None; combined_ids.len()];
    let mut placed = vec![false; new_ids.len()];
    let mut leftovers = false;
    for (label, id) in labels.iter_mut().zip(combined_ids) {
        if history_set.contains(id) {
            *label = Some(Label::History);
        } else if let Some(&index) = new_index_by_id.get(id) {
            *label = Some(if placed[index] {
                Label::Repeat
            } else {
                Label::Persist
            });
            placed[index] = true;
        } else {
            leftovers = true;
        }
    }

    // Pass 2: content, in list order, for reconstructions.
    if leftovers {
        let mut new_keys: Vec<Option<u128>> = vec![None; new_ids.len()];
        // Stacks hold the earliest unplaced new item on top.
        let mut unplaced_by_key: MixMap<u128, Vec<usize>> = MixMap::default();
        for index in (0..new_ids.len()).rev() {
            if !placed[index] {
                let key = keys.new_item(index)?;
                new_keys[index] = Some(key);
                unplaced_by_key.entry(key).or_default().push(index);
            }
        }
        let mut all_new_keys: MixSet<u128> = MixSet::default();
        for (index, key) in new_keys.iter().enumerate() {
            all_new_keys.insert(match key {
                Some(key) => *key,
                None => keys.new_item(index)?,
            });
        }
        let mut history_keys: Option<MixSet<u128>> = None;
        for (position, label) in labels.iter_mut().enumerate() {
            if label.is_some() {
                continue;
            }
            let key = keys.combined(position)?;
            if let Some(waiting) = unplaced_by_key.get_mut(&key) {
                if waiting.pop().is_some() {
                    *label = Some(Label::Persist);
                    continue;
                }
            }
            let history_keys = match &mut history_keys {
                Some(set) => set,
                None => history_keys.insert(keys.history()?.into_iter().collect()),
            };
            *label = Some(if history_keys.contains(&key) {
                Label::History
            } else if all_new_keys.contains(&key) {
                Label::Repeat
            } else {
                Label::Persist
            });
        }
    }

    let mut result = Classification::default();
    for (position, label) in labels.iter().enumerate() {
        match label {
            Some(Label::History) => result.history_positions.push(position),
            Some(Label::Persist) => result.persisted_positions.push(position),
            _ => {}
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    struct Table {
        history: Vec<u128>,
        new_items: Vec<u128>,
        combined: Vec<u128>,
        history_reads: usize,
        combined_reads: usize,
    }

    impl ContentKeys for Table {
        type Error = Infallible;
        fn new_item(&mut self, index: usize) -> Result<u128, Infallible> {
            Ok(self.new_items[index])
        }
        fn combined(&mut self, position: usize) -> Result<u128, Infallible> {
            self.combined_reads += 1;
            Ok(self.combined[position])
        }
        fn history(&mut self) -> Result<Vec<u128>, Infallible> {
            self.history_reads += 1;
            Ok(self.history.clone())
        }
    }

    fn table(history: &[u128], new_items: &[u128], combined: &[u128]) -> Table {
        Table {
            history: history.to_vec(),
            new_items: new_items.to_vec(),
            combined: combined.to_vec(),
            history_reads: 0,
            combined_reads: 0,
        }
    }

    #[test]
    fn identity_pass_reads_no_content() {
        // history [h0=1, h1=2], new [n0=3]; callback: history + [history[0]] + new.
        let mut keys = table(&[10, 20], &[30], &[10, 20, 10, 30]);
        let result = classify(&[1, 2], &[3], &[1, 2, 1, 3], &mut keys).unwrap();
        assert_eq!(result.history_positions, [0, 1, 2]);
        assert_eq!(result.persisted_positions, [3]);
        assert_eq!((keys.history_reads, keys.combined_reads), (0, 0));
    }

    #[test]
    fn repeats_of_a_new_object_are_model_input_only() {
        let mut keys = table(&[], &[30], &[30, 30]);
        let result = classify(&[], &[3], &[3, 3], &mut keys).unwrap();
        assert_eq!(result.persisted_positions, [0]);
        assert!(result.history_positions.is_empty());
    }

    #[test]
    fn reconstructions_are_matched_by_content_in_order() {
        // Fresh objects: the new item, a history item, a second new-item copy, something made up.
        let mut keys = table(&[10], &[30], &[30, 10, 30, 99]);
        let result = classify(&[1], &[3], &[7, 8, 9, 6], &mut keys).unwrap();
        assert_eq!(result.history_positions, [1]);
        assert_eq!(result.persisted_positions, [0, 3]);
        assert_eq!(keys.history_reads, 1);
    }

    #[test]
    fn unplaced_new_items_match_before_history() {
        // A reconstruction equal to both an unplaced new item and history is the new item.
        let mut keys = table(&[30], &[30], &[30]);
        let result = classify(&[1], &[3], &[5], &mut keys).unwrap();
        assert_eq!(result.persisted_positions, [0]);
        assert_eq!(keys.history_reads, 0);
    }
}
