// Private Unicode helpers of the analyzer: UTF-8 decoding and character property tables.
// The tables live in the generated csrc/src/unicode_tables.cpp (scripts/gen_unicode_tables.py).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hybrid_engine::unicode {

/// Character property bits returned by `flags`.
enum Flag : std::uint8_t {
    /// Letter, mark, number or underscore: part of a word.
    kWord = 1,
    /// Han ideograph, kana or Hangul syllable: a token of its own (never merged into a word).
    kCjk = 2,
    /// `to_lower` changes the character.
    kHasLower = 4,
    /// `to_base` changes the character (a Latin/Greek/Cyrillic letter with diacritics).
    kHasBase = 8,
    /// A generic combining diacritic that accent stripping removes.
    kDropMark = 16,
};

/// Unicode version the tables were generated from, e.g. "14.0.0".
extern const char kUnicodeVersion[];

extern const std::uint8_t kFlagStage1[0x110000 >> 8];
extern const std::uint8_t kFlagStage2[];
extern const std::size_t kLowerCount;
extern const char32_t kLowerFrom[];
extern const char32_t kLowerTo[];
extern const std::size_t kBaseCount;
extern const char32_t kBaseFrom[];
extern const char32_t kBaseTo[];

/// Property bits (`Flag`) of a code point; `cp` must be below 0x110000.
inline std::uint8_t flags(char32_t cp) noexcept {
    return kFlagStage2[(static_cast<std::size_t>(kFlagStage1[cp >> 8]) << 8) | (cp & 0xFF)];
}

namespace detail {
inline char32_t lookup(const char32_t* from, const char32_t* to, std::size_t count,
                       char32_t cp) noexcept {
    const char32_t* it = std::lower_bound(from, from + count, cp);
    return (it != from + count && *it == cp) ? to[it - from] : cp;
}
}  // namespace detail

/// Simple lowercase mapping (one code point to one; U+0130 maps to "i"). Identity if none.
inline char32_t to_lower(char32_t cp) noexcept {
    return detail::lookup(kLowerFrom, kLowerTo, kLowerCount, cp);
}

/// Base letter of a Latin/Greek/Cyrillic letter with diacritics ("é" -> "e"). Identity if none.
inline char32_t to_base(char32_t cp) noexcept {
    return detail::lookup(kBaseFrom, kBaseTo, kBaseCount, cp);
}

/// Decodes one well-formed UTF-8 sequence at `p` (with `n` > 0 bytes available) into `cp` and
/// returns its length (1-4). Returns 0 for ill-formed input: a stray continuation byte, a
/// truncated sequence, an overlong form, a surrogate or a value above U+10FFFF.
inline int decode_utf8(const unsigned char* p, std::size_t n, char32_t& cp) noexcept {
    const unsigned char b0 = p[0];
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    if (b0 < 0xC2) return 0;  // continuation byte, or overlong 2-byte lead
    if (b0 < 0xE0) {
        if (n < 2 || (p[1] & 0xC0) != 0x80) return 0;
        cp = (char32_t(b0 & 0x1F) << 6) | (p[1] & 0x3F);
        return 2;
    }
    if (b0 < 0xF0) {
        if (n < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (b0 == 0xE0 && p[1] < 0xA0) return 0;   // overlong
        if (b0 == 0xED && p[1] >= 0xA0) return 0;  // UTF-16 surrogate
        cp = (char32_t(b0 & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        return 3;
    }
    if (b0 > 0xF4) return 0;
    if (n < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) {
        return 0;
    }
    if (b0 == 0xF0 && p[1] < 0x90) return 0;   // overlong
    if (b0 == 0xF4 && p[1] >= 0x90) return 0;  // above U+10FFFF
    cp = (char32_t(b0 & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) |
         (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    return 4;
}

/// Appends the UTF-8 encoding of `cp` (a valid scalar value) to `out`; returns bytes written.
inline int encode_utf8(char32_t cp, char* out) noexcept {
    if (cp < 0x80) {
        out[0] = static_cast<char>(cp);
        return 1;
    }
    if (cp < 0x800) {
        out[0] = static_cast<char>(0xC0 | (cp >> 6));
        out[1] = static_cast<char>(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = static_cast<char>(0xE0 | (cp >> 12));
        out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out[2] = static_cast<char>(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = static_cast<char>(0xF0 | (cp >> 18));
    out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[3] = static_cast<char>(0x80 | (cp & 0x3F));
    return 4;
}

}  // namespace hybrid_engine::unicode
