//! Runs of ASCII digits in JSON text: orjson reads an integer beyond 64 bits as a float, so
//! texts holding a long run go to the exact decoder instead.

/// Digits in a row from which a JSON integer may not fit in `i64` (a negative 19-digit one).
pub const LONG_RUN: usize = 19;

// The SIMD scan below relies on a long run never fitting inside one 16-byte block.
const _: () = assert!(LONG_RUN > 16);

pub fn has_long_run(text: &[u8]) -> bool {
    let mut run = 0usize;
    #[allow(
        unused_mut,
        reason = "only the SIMD blocks advance it, and they may be compiled out"
    )]
    let mut from = 0usize;
    #[cfg(all(target_arch = "x86_64", not(histcore_portable)))]
    // SAFETY: SSE2 is in the x86_64 baseline; every 16-byte load is inside `text`.
    unsafe {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
            _mm_set1_epi8, _mm_sub_epi8,
        };
        let zero = _mm_set1_epi8(b'0'.cast_signed());
        let nine = _mm_set1_epi8(9);
        while from + 16 <= text.len() {
            let chunk = _mm_loadu_si128(text.as_ptr().add(from).cast::<__m128i>());
            // `byte - '0'` is at most 9 (unsigned) exactly for the digits.
            let offset = _mm_sub_epi8(chunk, zero);
            let digits = _mm_cmpeq_epi8(_mm_min_epu8(offset, nine), offset);
            let mask = _mm_movemask_epi8(digits).cast_unsigned();
            if mask == 0xFFFF {
                run += 16;
            } else {
                // A long run crosses a block boundary: it continues the previous run.
                if run + mask.trailing_ones() as usize >= LONG_RUN {
                    return true;
                }
                run = (mask << 16).leading_ones() as usize;
            }
            if run >= LONG_RUN {
                return true;
            }
            from += 16;
        }
    }
    for &byte in &text[from..] {
        if byte.is_ascii_digit() {
            run += 1;
            if run >= LONG_RUN {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(text: &[u8]) -> bool {
        text.split(|byte| !byte.is_ascii_digit())
            .any(|run| run.len() >= LONG_RUN)
    }

    #[test]
    fn finds_runs_at_every_offset_and_length() {
        for length in 0..60 {
            for start in 0..40 {
                let mut text = vec![b'a'; start + length + 20];
                text[start..start + length].fill(b'7');
                assert_eq!(has_long_run(&text), length >= LONG_RUN, "{start} {length}");
                assert_eq!(has_long_run(&text), reference(&text));
            }
        }
    }

    #[test]
    fn agrees_with_the_reference_on_mixed_text() {
        let alphabet = b"0123456789012345678901234567890123456789a\":,{}[]-.e\xc3\xa9";
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for length in (0..300).step_by(7) {
            for _ in 0..50 {
                let text: Vec<u8> = (0..length)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        alphabet[usize::try_from(state % alphabet.len() as u64).unwrap()]
                    })
                    .collect();
                assert_eq!(has_long_run(&text), reference(&text), "{text:?}");
            }
        }
    }

    #[test]
    fn eighteen_digits_are_not_long() {
        assert!(!has_long_run(b"{\"n\":-922337203685477580}"));
        assert!(has_long_run(b"{\"n\":-9223372036854775809}"));
        assert!(has_long_run(b"[123456789012345678901234567890]"));
    }
}
