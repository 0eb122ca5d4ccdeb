"""Generate ``csrc/src/unicode_tables.cpp`` from Python's ``unicodedata``.

Run from the repository root after a Python (and so Unicode) upgrade::

    python scripts/gen_unicode_tables.py

The tables are (see ``csrc/include/hybrid_engine/unicode.hpp`` for their contract):

* per-code-point flags in a two-level table (256-code-point blocks, identical blocks shared):
  word character, CJK character, has a lowercase mapping, has a base letter, droppable mark;
* the simple lowercase mapping, as sorted ``(from, to)`` pairs;
* the accent-stripping base letter, as sorted ``(from, to)`` pairs.
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "csrc" / "src" / "unicode_tables.cpp"
MAX_CP = 0x110000
BLOCK = 256

WORD, CJK, HAS_LOWER, HAS_BASE, DROP_MARK = 1, 2, 4, 8, 16

# Han (URO, extension A..H, compatibility), kana and Hangul syllables.
CJK_RANGES = [
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3038, 0x303C),  # Suzhou numerals, vertical iteration marks
    (0x3400, 0x4DBF),  # Han extension A
    (0x4E00, 0x9FFF),  # Han unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # Han compatibility ideographs
    (0xFF66, 0xFF9F),  # halfwidth Katakana
    (0x1B000, 0x1B16F),  # kana supplement and extension A
    (0x20000, 0x3134F),  # Han extensions B..G and compatibility supplement
]

# Scripts whose letters lose their diacritics: Latin, Greek, Cyrillic.
STRIP_SCRIPT_RANGES = [
    (0x0041, 0x024F),
    (0x1E00, 0x1EFF),
    (0x2C60, 0x2C7F),
    (0xA720, 0xA7FF),
    (0xAB30, 0xAB6F),
    (0x0370, 0x03FF),
    (0x1F00, 0x1FFF),
    (0x0400, 0x052F),
    (0x1C80, 0x1C8F),
    (0x2DE0, 0x2DFF),
    (0xA640, 0xA69F),
]

# Generic combining diacritics (used with Latin, Greek and Cyrillic); dropped when stripping.
# Script-specific marks (Indic vowel signs, kana voicing marks, ...) are letters' parts and stay.
DROP_MARK_RANGES = [
    (0x0300, 0x036F),
    (0x0483, 0x0489),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE20, 0xFE2F),
]


def in_ranges(cp: int, ranges: list[tuple[int, int]]) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def is_word(ch: str) -> bool:
    """Letters, marks, numbers and underscore: Python's ``\\w`` plus combining marks."""
    return unicodedata.category(ch)[0] in "LMN" or ch == "_"


def simple_lower(ch: str) -> str:
    low = ch.lower()
    # Only U+0130 (capital I with dot above) lowercases to two code points: "i" + U+0307.
    return low if len(low) == 1 else low[0]


def base_letter(ch: str) -> str | None:
    """NFKD base letter of a Latin/Greek/Cyrillic letter carrying only combining marks."""
    if not in_ranges(ord(ch), STRIP_SCRIPT_RANGES) or not unicodedata.category(ch).startswith("L"):
        return None
    decomposed = unicodedata.normalize("NFKD", ch)
    if len(decomposed) < 2 or not unicodedata.category(decomposed[0]).startswith("L"):
        return None
    if not all(unicodedata.category(m).startswith("M") for m in decomposed[1:]):
        return None
    return decomposed[0]


def flags_of(cp: int) -> int:
    ch = chr(cp)
    if not is_word(ch):
        return 0
    flags = WORD
    cat = unicodedata.category(ch)
    if in_ranges(cp, CJK_RANGES) and cat[0] in "LN":
        flags |= CJK
    if simple_lower(ch) != ch:
        flags |= HAS_LOWER
    if base_letter(ch) is not None:
        flags |= HAS_BASE
    if cat == "Mn" and in_ranges(cp, DROP_MARK_RANGES):
        flags |= DROP_MARK
    return flags


def c_array(ctype: str, name: str, values: list[int], per_line: int, fmt: str) -> str:
    lines = []
    for i in range(0, len(values), per_line):
        lines.append("    " + ", ".join(fmt.format(v) for v in values[i : i + per_line]) + ",")
    body = "\n".join(lines)
    return f"const {ctype} {name}[{len(values)}] = {{\n{body}\n}};\n"


def main() -> int:
    flags = [flags_of(cp) for cp in range(MAX_CP)]
    blocks: dict[tuple[int, ...], int] = {}
    stage1: list[int] = []
    stage2: list[int] = []
    for start in range(0, MAX_CP, BLOCK):
        block = tuple(flags[start : start + BLOCK])
        if block not in blocks:
            blocks[block] = len(blocks)
            stage2.extend(block)
        stage1.append(blocks[block])
    if len(blocks) > 256:
        raise SystemExit("more than 256 distinct flag blocks: widen kFlagStage1 to uint16_t")

    lower_pairs = []
    base_pairs = []
    for cp in range(MAX_CP):
        ch = chr(cp)
        if not flags[cp] & WORD:
            continue
        low = simple_lower(ch)
        if low != ch:
            lower_pairs.append((cp, ord(low)))
        base = base_letter(ch)
        if base is not None:
            base_pairs.append((cp, ord(base)))

    parts = [
        f"// Generated by scripts/gen_unicode_tables.py from Unicode "
        f"{unicodedata.unidata_version} (Python {sys.version.split()[0]}); do not edit.\n",
        '#include "hybrid_engine/unicode.hpp"\n\n',
        "namespace hybrid_engine::unicode {\n\n",
        f'const char kUnicodeVersion[] = "{unicodedata.unidata_version}";\n\n',
        c_array("std::uint8_t", "kFlagStage1", stage1, 16, "{}"),
        "\n",
        c_array("std::uint8_t", "kFlagStage2", stage2, 24, "{}"),
        "\n",
        f"const std::size_t kLowerCount = {len(lower_pairs)};\n",
        c_array("char32_t", "kLowerFrom", [a for a, _ in lower_pairs], 10, "0x{:X}"),
        c_array("char32_t", "kLowerTo", [b for _, b in lower_pairs], 10, "0x{:X}"),
        "\n",
        f"const std::size_t kBaseCount = {len(base_pairs)};\n",
        c_array("char32_t", "kBaseFrom", [a for a, _ in base_pairs], 10, "0x{:X}"),
        c_array("char32_t", "kBaseTo", [b for _, b in base_pairs], 10, "0x{:X}"),
        "\n}  // namespace hybrid_engine::unicode\n",
    ]
    OUT.write_text("".join(parts), encoding="utf-8")
    print(
        f"wrote {OUT}: {len(blocks)} flag blocks, {len(lower_pairs)} lowercase and "
        f"{len(base_pairs)} base-letter mappings"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
