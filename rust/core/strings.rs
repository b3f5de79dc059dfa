//! Numbering byte strings by first occurrence, and a cheap hasher for well-spread keys.

use std::cell::RefCell;
use std::hash::{BuildHasherDefault, Hasher};

use xxhash_rust::xxh3::xxh3_64;

/// Byte strings stored back to back in one arena, addressed by their push order.
#[derive(Default)]
pub struct Strings {
    arena: Vec<u8>,
    ends: Vec<usize>,
    slots: Vec<u64>,
    ids: Vec<u32>,
}

const RETAIN_LIMIT: usize = 64 << 20;

/// How many `Strings` a thread keeps for reuse: `prepared_model_input` holds three at once.
const SPARES: usize = 3;

thread_local! {
    /// Buffers of the last `Strings` recycled on this thread: reuse spares the page faults
    /// of fresh multi-megabyte allocations, which cost as much as the work.
    static SPARE: RefCell<Vec<Strings>> = const { RefCell::new(Vec::new()) };
}

impl Strings {
    pub fn reuse() -> Self {
        match SPARE.with(|spare| spare.borrow_mut().pop()) {
            Some(mut strings) => {
                strings.arena.clear();
                strings.ends.clear();
                strings.ids.clear();
                strings
            }
            None => Strings::default(),
        }
    }

    /// Keep the buffers for the next [`Strings::reuse`] here, up to `RETAIN_LIMIT` bytes in all.
    pub fn recycle(self) {
        SPARE.with(|spare| {
            let mut spare = spare.borrow_mut();
            let kept: usize = spare.iter().map(Strings::footprint).sum();
            if spare.len() < SPARES && kept + self.footprint() <= RETAIN_LIMIT {
                spare.push(self);
            }
        });
    }

    fn footprint(&self) -> usize {
        self.arena.capacity()
            + self.ends.capacity() * size_of::<usize>()
            + self.slots.capacity() * size_of::<u64>()
            + self.ids.capacity() * size_of::<u32>()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn push(&mut self, text: &[u8]) -> u32 {
        let index = u32::try_from(self.ends.len()).expect("fewer than 2^32 strings");
        self.arena.extend_from_slice(text);
        self.ends.push(self.arena.len());
        index
    }

    pub fn get(&self, index: u32) -> &[u8] {
        let index = index as usize;
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        &self.arena[start..self.ends[index]]
    }

    /// For every string, the index of the first string equal to it (every id below `len()`).
    pub fn number(&mut self) -> &[u32] {
        const EMPTY: u64 = u64::MAX;
        // Hashes are computed this far ahead of their probe and their slot prefetched: a
        // table for 10^5 strings no longer fits in cache.
        const AHEAD: u32 = 16;
        // `push` hands out u32 indexes, so the count fits too.
        let count = u32::try_from(self.len()).expect("fewer than 2^32 strings");
        // Load factor at most 1/2; a slot packs the hash's upper half (to reject most mismatches
        // without touching the arena) over the string index.
        let size = (self.len() * 2).next_power_of_two().max(8);
        let mask = size - 1;
        let mut slots = std::mem::take(&mut self.slots);
        slots.clear();
        slots.resize(size, EMPTY);
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        ids.reserve(self.len());
        let mut ring = [0u64; AHEAD as usize];
        for (index, hash) in (0..count).zip(ring.iter_mut()) {
            *hash = xxh3_64(self.get(index));
            prefetch(&slots[slot_of(*hash, mask)]);
        }
        for index in 0..count {
            let ring_slot = (index % AHEAD) as usize;
            let hash = ring[ring_slot];
            if count - index > AHEAD {
                let ahead = xxh3_64(self.get(index + AHEAD));
                prefetch(&slots[slot_of(ahead, mask)]);
                ring[ring_slot] = ahead;
            }
            let tag = hash >> 32;
            let mut slot = slot_of(hash, mask);
            let id = loop {
                let entry = slots[slot];
                if entry == EMPTY {
                    slots[slot] = (tag << 32) | u64::from(index);
                    break index;
                }
                let candidate = packed_index(entry);
                if entry >> 32 == tag && self.get(candidate) == self.get(index) {
                    break candidate;
                }
                slot = (slot + 1) & mask;
            };
            ids.push(id);
        }
        self.slots = slots;
        self.ids = ids;
        &self.ids
    }
}

#[inline]
#[expect(
    clippy::cast_possible_truncation,
    reason = "only the low bits of the hash pick the slot"
)]
fn slot_of(hash: u64, mask: usize) -> usize {
    hash as usize & mask
}

#[inline]
#[expect(
    clippy::cast_possible_truncation,
    reason = "the low half of an entry is the index"
)]
fn packed_index(entry: u64) -> u32 {
    entry as u32
}

#[inline(always)]
fn prefetch<T>(target: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is SSE (x86_64 baseline) and only a hint: it never faults.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((target as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = target;
}

/// A hasher for integer keys (pointers, content hashes): one multiply and a fold.
#[derive(Default, Clone, Copy)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }

    #[expect(
        clippy::cast_possible_truncation,
        reason = "folds the 128-bit product into 64 bits"
    )]
    fn write_u64(&mut self, value: u64) {
        let product = u128::from(value ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }

    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }

    #[expect(
        clippy::cast_possible_truncation,
        reason = "folds the two halves into 64 bits"
    )]
    fn write_u128(&mut self, value: u128) {
        self.write_u64(value as u64 ^ (value >> 64) as u64);
    }
}

pub type MixState = BuildHasherDefault<MixHasher>;

pub type MixMap<K, V> = std::collections::HashMap<K, V, MixState>;

pub type MixSet<K> = std::collections::HashSet<K, MixState>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_point_at_first_occurrences() {
        let mut strings = Strings::default();
        let words: Vec<String> = (0..1000).map(|n| format!("call_{}", n % 300)).collect();
        for word in &words {
            strings.push(word.as_bytes());
        }
        strings.push(b"");
        strings.push(b"");
        let ids = strings.number().to_vec();
        assert_eq!(ids.len(), 1002);
        for (index, word) in words.iter().enumerate() {
            assert_eq!(ids[index] as usize, index % 300);
            assert_eq!(strings.get(ids[index]), word.as_bytes());
        }
        assert_eq!(ids[1000..], [1000, 1000]);
    }

    #[test]
    fn equal_hash_prefixes_do_not_merge_different_strings() {
        // Keys that differ only in where the separator falls must stay apart.
        let mut strings = Strings::default();
        strings.push(b"id:a:b:c");
        strings.push(b"id:a:b:c");
        strings.push(b"id:a:bc");
        assert_eq!(strings.number(), [0, 0, 2]);
        strings.recycle();
        let mut again = Strings::reuse();
        assert!(again.is_empty());
        again.push(b"x");
        assert_eq!(again.number(), [0]);
    }
}
