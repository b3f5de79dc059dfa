//! Copying bytes up to the first of a class, for both JSON string writers: 16 a round (SSE2).

pub const LOW_BITS: u64 = 0x0101_0101_0101_0101;
pub const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

#[cfg(all(target_arch = "x86_64", not(histcore_portable)))]
pub use std::arch::x86_64::__m128i;

/// High bits of the bytes of `word` equal to `byte`, maybe with later bytes' (borrows run up).
#[inline]
pub fn equal_bits(word: u64, byte: u8) -> u64 {
    let bits = word ^ (LOW_BITS * u64::from(byte));
    bits.wrapping_sub(LOW_BITS) & !bits & HIGH_BITS
}

/// The high bit of each byte of `word` below 0x20 (unsigned), with the same caveat.
#[inline]
pub fn below_space_bits(word: u64) -> u64 {
    word.wrapping_sub(LOW_BITS * 0x20) & !word & HIGH_BITS
}

pub trait Stops {
    fn contains(byte: u8) -> bool;
    /// High bits of the bytes of `word` in the class, maybe with later ones: the lowest is exact.
    fn word_bits(word: u64) -> u64;
    #[cfg(all(target_arch = "x86_64", not(histcore_portable)))]
    fn hits(chunk: __m128i) -> __m128i;
}

/// Copy `text[from..]` to `out` up to the first byte in `S`; returns its position (or
/// `text.len()`). Bytes are stored before they are checked: `out` has room for the rest, and
/// bytes past the stop are not counted into its length.
#[inline]
pub fn copy_until<S: Stops>(out: &mut Vec<u8>, text: &[u8], mut from: usize) -> usize {
    out.reserve(text.len().saturating_sub(from));
    // `to - out.len()` equals how far `from` advanced and the capacity holds all of
    // `text[from..]`, so a write of `n <= text.len() - from` bytes at `to` stays in it.
    let mut to = out.len();
    let target = out.as_mut_ptr();
    #[cfg(all(target_arch = "x86_64", not(histcore_portable)))]
    // SAFETY: SSE2 is in the x86_64 baseline. Each unaligned 16-byte load is in bounds
    // (`from + 16 <= text.len()`) and its store inside the reserved room; `set_len` counts only
    // bytes copied from `text`.
    unsafe {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8, _mm_storeu_si128};
        while from + 16 <= text.len() {
            let chunk = _mm_loadu_si128(text.as_ptr().add(from).cast::<__m128i>());
            _mm_storeu_si128(target.add(to).cast::<__m128i>(), chunk);
            let mask = _mm_movemask_epi8(S::hits(chunk));
            if mask != 0 {
                let run = mask.trailing_zeros() as usize;
                out.set_len(to + run);
                return from + run;
            }
            from += 16;
            to += 16;
        }
    }
    // SAFETY: each write stores at `to`, inside the reserved room, bytes just read from
    // `text[from..]`; `set_len` counts only those.
    unsafe {
        while let Some(chunk) = text.get(from..from + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
            target.add(to).cast::<u64>().write_unaligned(word.to_le());
            let bits = S::word_bits(word);
            if bits != 0 {
                // Little-endian order: the lowest bits belong to the first byte.
                let run = (bits.trailing_zeros() / 8) as usize;
                out.set_len(to + run);
                return from + run;
            }
            from += 8;
            to += 8;
        }
        while let Some(&byte) = text.get(from) {
            if S::contains(byte) {
                break;
            }
            target.add(to).write(byte);
            from += 1;
            to += 1;
        }
        out.set_len(to);
    }
    from
}

/// Checks a `Stops` class on every byte value at every position, over borrow-provoking backgrounds.
#[cfg(test)]
pub fn check_stops_exactly<S: Stops>(backgrounds: &[u8]) {
    for &background in backgrounds {
        for length in 0..40 {
            for position in 0..length {
                for byte in 0..=255u8 {
                    let mut text = vec![background; length];
                    text[position] = byte;
                    if position + 3 < length {
                        text[position + 3] = b'"';
                    }
                    for from in [0, position, position + 1] {
                        let expected = (from..text.len())
                            .find(|&index| S::contains(text[index]))
                            .unwrap_or(text.len());
                        let mut out = Vec::with_capacity(length + 1);
                        out.push(b'>');
                        assert_eq!(copy_until::<S>(&mut out, &text, from), expected, "{text:?}");
                        assert_eq!(out[1..], text[from..expected]);
                    }
                }
            }
        }
    }
}
