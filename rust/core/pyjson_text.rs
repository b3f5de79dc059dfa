//! Byte-level rules of `json.dumps(value, sort_keys=True)` text with the standard library's
//! defaults (`ensure_ascii`, `", "` and `": "`); numbers and constants are `canonical.rs`'s.

use crate::core::byte_runs::{below_space_bits, copy_until, equal_bits, Stops, HIGH_BITS};

#[inline]
fn is_plain(byte: u8) -> bool {
    (0x20..0x7F).contains(&byte) && byte != b'"' && byte != b'\\'
}

/// What json's ASCII encoder escapes: controls, `"`, `\`, DEL and every non-ASCII byte.
struct Escaped;

impl Stops for Escaped {
    #[inline]
    fn contains(byte: u8) -> bool {
        !is_plain(byte)
    }

    #[inline]
    fn word_bits(word: u64) -> u64 {
        (word & HIGH_BITS)
            | below_space_bits(word)
            | equal_bits(word, b'"')
            | equal_bits(word, b'\\')
            | equal_bits(word, 0x7F)
    }

    #[cfg(all(target_arch = "x86_64", not(histcore_portable)))]
    #[inline]
    fn hits(chunk: std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_or_si128, _mm_set1_epi8};
        // SAFETY: SSE2 is in the x86_64 baseline; these intrinsics take and return values only.
        unsafe {
            // As signed bytes, controls are 0..0x1F and non-ASCII bytes negative: both < 0x20.
            let below_space = _mm_cmplt_epi8(chunk, _mm_set1_epi8(0x20));
            let equal = |byte: u8| _mm_cmpeq_epi8(chunk, _mm_set1_epi8(byte.cast_signed()));
            _mm_or_si128(
                _mm_or_si128(below_space, equal(b'"')),
                _mm_or_si128(equal(b'\\'), equal(0x7F)),
            )
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_unicode_escape(out: &mut Vec<u8>, code: u32) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[((code >> 12) & 0xF) as usize],
        HEX[((code >> 8) & 0xF) as usize],
        HEX[((code >> 4) & 0xF) as usize],
        HEX[(code & 0xF) as usize],
    ]);
}

/// The code point and length of the UTF-8 sequence at non-ASCII `text[index]`.
#[inline]
fn decode(text: &[u8], index: usize) -> (u32, usize) {
    let byte = |offset: usize| u32::from(text.get(index + offset).copied().unwrap_or(0x80) & 0x3F);
    let lead = u32::from(text[index]);
    if lead < 0xE0 {
        (((lead & 0x1F) << 6) | byte(1), 2)
    } else if lead < 0xF0 {
        (((lead & 0x0F) << 12) | (byte(1) << 6) | byte(2), 3)
    } else {
        (
            ((lead & 0x07) << 18) | (byte(1) << 12) | (byte(2) << 6) | byte(3),
            4,
        )
    }
}

/// Write `text` as json's ASCII encoder does (beyond U+FFFF as a surrogate pair).
pub fn write_ascii_string(out: &mut Vec<u8>, text: &[u8]) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut index = 0;
    while index < text.len() {
        index = copy_until::<Escaped>(out, text, index);
        let Some(&byte) = text.get(index) else {
            break;
        };
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0C => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            _ => b"",
        };
        if !escape.is_empty() {
            out.extend_from_slice(escape);
            index += 1;
        } else if byte < 0x80 {
            push_unicode_escape(out, u32::from(byte));
            index += 1;
        } else {
            let (code, length) = decode(text, index);
            if code >= 0x1_0000 {
                let offset = code - 0x1_0000;
                push_unicode_escape(out, 0xD800 | (offset >> 10));
                push_unicode_escape(out, 0xDC00 | (offset & 0x3FF));
            } else {
                push_unicode_escape(out, code);
            }
            index = (index + length).min(text.len());
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> String {
        let mut out = Vec::new();
        write_ascii_string(&mut out, text.as_bytes());
        String::from_utf8(out).expect("ASCII output")
    }

    fn reference(text: &str) -> String {
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
                ' '..='~' => out.push(character),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in character.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn escapes_like_json_ensure_ascii() {
        assert_eq!(string("plain"), r#""plain""#);
        assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(
            string("\u{8}\u{c}\n\r\t\u{0}\u{1f}\u{7f}"),
            r#""\b\f\n\r\t\u0000\u001f\u007f""#
        );
        assert_eq!(string("é€😀"), r#""\u00e9\u20ac\ud83d\ude00""#);
        assert_eq!(
            string("\u{10ffff}\u{d7ff}\u{e000}"),
            r#""\udbff\udfff\ud7ff\ue000""#
        );
    }

    #[test]
    fn plain_copies_stop_exactly_at_the_first_escaped_byte() {
        crate::core::byte_runs::check_stops_exactly::<Escaped>(&[b'a', 0x21, 0x7E, 0x80, 0xFF]);
    }

    #[test]
    fn lone_surrogates_are_written_as_themselves() {
        let mut out = Vec::new();
        write_ascii_string(&mut out, b"a\xed\xa0\x80b\xed\xbf\xbf");
        assert_eq!(out, br#""a\ud800b\udfff""#);
    }

    #[test]
    fn every_character_class_at_every_position() {
        let specials = [
            '"', '\\', '\n', '\u{1}', '\u{7f}', '~', ' ', 'é', '€', '😀', '\u{80}',
        ];
        for background in ['a', '~', ' ', 'é'] {
            for length in 0..40 {
                for position in 0..length.max(1) {
                    for &special in &specials {
                        let mut text: Vec<char> = vec![background; length];
                        if position < length {
                            text[position] = special;
                        }
                        let text: String = text.into_iter().collect();
                        assert_eq!(string(&text), reference(&text), "{text:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_byte_value_at_every_position() {
        for start in 0..3 {
            for position in start..45 {
                for byte in 0..0x80u8 {
                    let mut text = [b'x'; 45];
                    text[position] = byte;
                    let text = String::from_utf8(text[start..].to_vec()).unwrap();
                    assert_eq!(string(&text), reference(&text), "{byte} at {position}");
                }
            }
        }
    }
}
