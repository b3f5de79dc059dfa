//! Dedupe over key ids (docs/design.md); results are input indexes, so objects stay the same.

/// Indexes kept by first-wins dedupe: each key's first occurrence and every unkeyed item.
pub fn first_wins(keys: &[Option<u32>], key_count: usize) -> Vec<usize> {
    let mut seen = vec![false; key_count];
    let mut kept = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        match *key {
            None => kept.push(index),
            Some(id) if !seen[id as usize] => {
                seen[id as usize] = true;
                kept.push(index);
            }
            Some(_) => {}
        }
    }
    kept
}

#[derive(Clone, Copy, Debug)]
pub struct Keyed {
    pub id: u32,
    /// Precursors stay at their earliest position; other keyed items move to their latest.
    pub precursor: bool,
}

/// Latest-value dedupe with call anchoring: per output slot, the input index that goes there.
pub fn preferring_latest(keys: &[Option<Keyed>], key_count: usize) -> Vec<usize> {
    const UNSET: usize = usize::MAX;
    let mut latest = vec![UNSET; key_count];
    let mut anchor = vec![UNSET; key_count];
    for (index, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        let id = key.id as usize;
        latest[id] = index;
        if anchor[id] == UNSET || !key.precursor {
            anchor[id] = index;
        }
    }
    let mut slots = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        match key {
            None => slots.push(index),
            Some(key) if anchor[key.id as usize] == index => slots.push(latest[key.id as usize]),
            Some(_) => {}
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyed(id: u32, precursor: bool) -> Option<Keyed> {
        Some(Keyed { id, precursor })
    }

    #[test]
    fn first_wins_keeps_first_occurrence_and_unkeyed() {
        let keys = [Some(0), None, Some(1), Some(0), None, Some(1)];
        assert_eq!(first_wins(&keys, 2), [0, 1, 2, 4]);
    }

    #[test]
    fn repeated_call_stays_before_its_output() {
        // [call c1, out c1, call c1 (v2)] -> [call c1 (v2), out c1]
        let keys = [keyed(0, true), keyed(1, false), keyed(0, true)];
        assert_eq!(preferring_latest(&keys, 2), [2, 1]);
    }

    #[test]
    fn refreshed_output_moves_to_its_latest_position() {
        // [out c1 (stale), call c1, out c1 (fresh)] -> [call c1, out c1 (fresh)]
        let keys = [keyed(1, false), keyed(0, true), keyed(1, false)];
        assert_eq!(preferring_latest(&keys, 2), [1, 2]);
        // [out c1 (old), user msg, out c1 (new)] -> [user msg, out c1 (new)]
        let keys = [keyed(0, false), None, keyed(0, false)];
        assert_eq!(preferring_latest(&keys, 1), [1, 2]);
    }

    #[test]
    fn anchor_follows_the_precursor_flag_of_each_occurrence() {
        // A later non-precursor moves the anchor, as the pure twin does.
        let keys = [keyed(0, true), None, keyed(0, false), keyed(0, true)];
        assert_eq!(preferring_latest(&keys, 1), [1, 3]);
    }
}
