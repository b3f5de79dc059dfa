//! Byte-level rules of the canonical content form (docs/design.md). Text arrives as Python
//! text bytes: UTF-8, with lone surrogates in the 3-byte `surrogatepass` form `ED A0..BF ..`.

use std::fmt::Write as _;

use crate::core::byte_runs::{below_space_bits, copy_until, equal_bits, Stops};

/// Containers nested deeper than this are rejected (this also stops cycles).
pub const MAX_DEPTH: usize = 256;

/// SDK-only metadata keys dropped from the top level of an item before encoding.
pub const METADATA_KEYS: [&[u8]; 2] = [b"_agents_tool_description", b"_agents_tool_title"];

pub fn depth_error_message() -> String {
    format!("value nested deeper than {MAX_DEPTH} levels")
}

pub fn is_metadata_key(key: &[u8]) -> bool {
    METADATA_KEYS.contains(&key)
}

/// Bytes that may need escaping: controls, `"`, `\`, and `0xED` (a possible lone surrogate).
const CANDIDATE: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table[0xED] = true;
    table
};

struct Candidates;

impl Stops for Candidates {
    #[inline]
    fn contains(byte: u8) -> bool {
        CANDIDATE[usize::from(byte)]
    }

    #[inline]
    fn word_bits(word: u64) -> u64 {
        below_space_bits(word)
            | equal_bits(word, b'"')
            | equal_bits(word, b'\\')
            | equal_bits(word, 0xED)
    }

    #[cfg(all(target_arch = "x86_64", not(histcore_portable)))]
    #[inline]
    fn hits(chunk: std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_min_epu8, _mm_or_si128, _mm_set1_epi8};
        // SAFETY: SSE2 is in the x86_64 baseline; these intrinsics take and return values only.
        unsafe {
            // `min(byte, 0x1F) == byte` exactly when the byte is a control (unsigned).
            let control = _mm_cmpeq_epi8(_mm_min_epu8(chunk, _mm_set1_epi8(0x1F)), chunk);
            let equal = |byte: u8| _mm_cmpeq_epi8(chunk, _mm_set1_epi8(byte.cast_signed()));
            _mm_or_si128(
                _mm_or_si128(control, equal(b'"')),
                _mm_or_si128(equal(b'\\'), equal(0xED)),
            )
        }
    }
}

/// Copy the clean bytes of `text[from..]` to `out`; returns the next escape candidate's position.
#[inline]
fn copy_clean(out: &mut Vec<u8>, text: &[u8], from: usize) -> usize {
    copy_until::<Candidates>(out, text, from)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_unicode_escape(out: &mut Vec<u8>, code: u32) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((code >> shift) & 0xF) as usize]);
    }
}

/// Write Python text bytes as a JSON string (docs/design.md), lone surrogates as `\udXXX`.
pub fn write_string(out: &mut Vec<u8>, text: &[u8]) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut index = copy_clean(out, text, 0);
    while let Some(&byte) = text.get(index) {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0C => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1F => b"",
            0xED if text.get(index + 1).is_some_and(|&next| next >= 0xA0) => b"",
            _ => {
                // 0xED leading an ordinary character (U+D000..U+D7FF).
                out.push(byte);
                index = copy_clean(out, text, index + 1);
                continue;
            }
        };
        out.reserve(text.len() - index + 6);
        if !escape.is_empty() {
            out.extend_from_slice(escape);
            index += 1;
        } else if byte < 0x20 {
            push_unicode_escape(out, u32::from(byte));
            index += 1;
        } else {
            // A lone surrogate: ED, then 10xxxxxx twice (the second byte is A0..BF).
            let middle = u32::from(text[index + 1] & 0x3F);
            let last = u32::from(text.get(index + 2).copied().unwrap_or(0x80) & 0x3F);
            push_unicode_escape(out, 0xD000 | (middle << 6) | last);
            index = (index + 3).min(text.len());
        }
        index = copy_clean(out, text, index);
    }
    out.push(b'"');
}

/// Write an integer in decimal (what `int.__repr__` gives for values that fit in i64).
pub fn write_i64(out: &mut Vec<u8>, value: i64) {
    let mut digits = [0u8; 20];
    let mut position = digits.len();
    let mut rest = value.unsigned_abs();
    loop {
        position -= 1;
        digits[position] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[position..]);
}

/// Write a float as Python's `float.__repr__` does (and `NaN`, `Infinity`, `-Infinity`).
pub fn write_float(out: &mut Vec<u8>, value: f64) {
    if value.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if value.is_infinite() {
        out.extend_from_slice(if value > 0.0 {
            b"Infinity"
        } else {
            b"-Infinity"
        });
        return;
    }
    let scientific = shortest_scientific(value);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` output always has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` exponent is an integer");
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let mut digits = [0u8; 24];
    let mut count = 0;
    for byte in mantissa.bytes().filter(u8::is_ascii_digit) {
        digits[count] = byte;
        count += 1;
    }
    let digits = &digits[..count];
    if negative {
        out.push(b'-');
    }
    // Python's decimal point position: value = 0.d1d2...dn * 10**decpt.
    let decpt = exponent + 1;
    if !(-4 < decpt && decpt <= 16) {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        write_i64(out, i64::from(magnitude));
    } else if decpt <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', decpt.unsigned_abs() as usize));
        out.extend_from_slice(digits);
    } else {
        let whole = decpt.unsigned_abs() as usize;
        if whole < digits.len() {
            out.extend_from_slice(&digits[..whole]);
            out.push(b'.');
            out.extend_from_slice(&digits[whole..]);
        } else {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', whole - digits.len()));
            out.extend_from_slice(b".0");
        }
    }
}

/// The shortest round-trip digits of finite `value` as `d[.ddd]e<exp>`, ties to even.
fn shortest_scientific(value: f64) -> String {
    let mut shortest = String::with_capacity(32);
    write!(shortest, "{value:e}").expect("formatting into a String cannot fail");
    // Rust's shortest form breaks exact ties upwards; its fixed-precision form rounds half to
    // even, as Python does: use it when as short and still read back as `value`.
    let digits = shortest.split('e').next().map_or(0, |mantissa| {
        mantissa.bytes().filter(u8::is_ascii_digit).count()
    });
    let mut rounded = String::with_capacity(32);
    write!(
        rounded,
        "{value:.precision$e}",
        precision = digits.saturating_sub(1)
    )
    .expect("formatting into a String cannot fail");
    if rounded != shortest && rounded.parse::<f64>() == Ok(value) {
        rounded
    } else {
        shortest
    }
}

pub fn write_constant(out: &mut Vec<u8>, value: Option<bool>) {
    out.extend_from_slice(match value {
        None => b"null",
        Some(true) => b"true",
        Some(false) => b"false",
    });
}

/// The content key of canonical bytes: XXH3-128, big-endian.
pub fn content_key(canonical: &[u8]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(canonical).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &[u8]) -> String {
        let mut out = Vec::new();
        write_string(&mut out, text);
        String::from_utf8(out).expect("escaped output is UTF-8")
    }

    fn float(value: f64) -> String {
        let mut out = Vec::new();
        write_float(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(string(b"plain"), r#""plain""#);
        assert_eq!(string(b"a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string(b"\x08\x0c\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(string(b"\x00\x01\x1f\x7f"), "\"\\u0000\\u0001\\u001f\x7f\"");
        assert_eq!(string("é€😀".as_bytes()), "\"é€😀\"");
    }

    #[test]
    fn long_strings_escape_in_every_position() {
        let text = "0123456789abcdef\"0123456\n89abcdef".repeat(3);
        let expected = format!("\"{}\"", text.replace('"', "\\\"").replace('\n', "\\n"));
        assert_eq!(string(text.as_bytes()), expected);
    }

    #[test]
    fn clean_copies_stop_exactly_at_the_first_candidate() {
        crate::core::byte_runs::check_stops_exactly::<Candidates>(&[b'a', 0x21, 0x80, 0xEC, 0xFF]);
    }

    #[test]
    fn strings_escape_every_candidate_byte_at_every_position() {
        for position in 0..40 {
            for byte in 0..0x80u8 {
                let mut text = vec![b'x'; 40];
                text[position] = byte;
                let text = String::from_utf8(text).unwrap();
                let expected = reference_string(&text);
                assert_eq!(string(text.as_bytes()), expected, "{position} {byte}");
            }
        }
    }

    fn reference_string(text: &str) -> String {
        let mut out = String::from("\"");
        for character in text.chars() {
            match character {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\0'..='\u{1f}' => out.push_str(&format!("\\u{:04x}", u32::from(character))),
                _ => out.push(character),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn lone_surrogates_are_escaped_in_lowercase_hex() {
        // "\ud800" and "\udfff" as written by Python's surrogatepass handler.
        assert_eq!(string(b"a\xed\xa0\x80b\xed\xbf\xbf"), r#""a\ud800b\udfff""#);
        // U+D7FF (Hangul) shares the 0xED lead byte but is an ordinary character.
        assert_eq!(string("\u{d7ff}".as_bytes()), "\"\u{d7ff}\"");
    }

    #[test]
    fn floats_follow_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e-7, "1.5e-07"),
            (123456789.125, "123456789.125"),
            (1e100, "1e+100"),
            (-2.5e-300, "-2.5e-300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            // Halfway between two shortest candidates, where Python keeps the even one.
            (f64::from_bits(0x42d4_e1fd_6c0f_a988), "91843407658662.12"),
            (f64::from_bits(0x4316_6cc0_58ad_7621), "1578005716229512.2"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (value, expected) in cases {
            assert_eq!(float(value), expected, "{value:?}");
        }
    }

    #[test]
    fn integers_are_decimal() {
        for (value, expected) in [(0, "0"), (-7, "-7"), (i64::MIN, "-9223372036854775808")] {
            let mut out = Vec::new();
            write_i64(&mut out, value);
            assert_eq!(out, expected.as_bytes());
        }
    }

    #[test]
    fn content_key_is_big_endian_xxh3_128() {
        // xxhash.xxh3_128_digest(b"").hex() in Python.
        let key = content_key(b"");
        assert_eq!(
            key.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            "99aa06d3014798d86001c324468d497f"
        );
    }
}
