//! Byte-level rules of `json.dumps(value, sort_keys=True)` text with the standard
//! library's defaults: `ensure_ascii` escaping, `", "` and `": "` separators.
//!
//! Plain Rust, no Python: the walker in `sorted_json.rs` feeds it values. Text arrives as
//! Python text bytes (UTF-8, lone surrogates in their 3-byte `surrogatepass` form; see
//! `canonical.rs`). Numbers and constants are written by `canonical.rs`, whose forms are
//! `float.__repr__`'s and json's (`NaN`, `Infinity`, `-Infinity`).

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that json's ASCII encoder escapes (controls,
/// `"`, `\`, DEL and every non-ASCII byte), plus possibly bits of bytes after the first
/// such byte (borrows only run upwards): the lowest set bit marks the first one exactly.
#[inline]
fn escaped_bits(word: u64) -> u64 {
    let equal = |byte: u8| {
        let bits = word ^ (LOW_BITS * u64::from(byte));
        bits.wrapping_sub(LOW_BITS) & !bits
    };
    let below_space = word.wrapping_sub(LOW_BITS * 0x20) & !word;
    (word | below_space | equal(b'"') | equal(b'\\') | equal(0x7F)) & HIGH_BITS
}

/// Whether json's ASCII encoder writes `byte` as it is.
#[inline]
fn is_plain(byte: u8) -> bool {
    (0x20..0x7F).contains(&byte) && byte != b'"' && byte != b'\\'
}

/// The length of the run of plain bytes of `text` from `from` on.
#[inline]
fn plain_run(text: &[u8], from: usize) -> usize {
    let mut index = from;
    while let Some(chunk) = text.get(index..index + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        let bits = escaped_bits(word);
        if bits != 0 {
            // Little-endian order: the lowest bits belong to the first byte.
            return index + (bits.trailing_zeros() / 8) as usize - from;
        }
        index += 8;
    }
    while text.get(index).copied().is_some_and(is_plain) {
        index += 1;
    }
    index - from
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

/// The code point of the (generalised) UTF-8 sequence starting at `text[index]`, a
/// non-ASCII lead byte, and the sequence's length.
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

/// Write `text` as json's ASCII encoder does: `"` and `\` escaped, `\b \f \n \r \t`,
/// other controls and DEL as `\u00XX`, every other non-ASCII character as `\uXXXX`
/// (lowercase hex; beyond U+FFFF as a surrogate pair; a lone surrogate as itself).
pub fn write_ascii_string(out: &mut Vec<u8>, text: &[u8]) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut index = 0;
    while index < text.len() {
        let run = plain_run(text, index);
        out.extend_from_slice(&text[index..index + run]);
        index += run;
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

    /// A character-by-character statement of json's ASCII string form.
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
        // In 8-byte words and in the bytes after the last whole word, from three starting
        // offsets.
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
