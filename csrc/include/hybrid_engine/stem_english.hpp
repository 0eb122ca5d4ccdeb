// Private allocation-free entry point of the English stemmer, for the analyzer's hot loop.
#pragma once

#include <string>
#include <string_view>

namespace hybrid_engine {

/// `stem_english(word)` written to `out` (its capacity is reused).
void stem_english_into(std::string_view word, std::string& out);

}  // namespace hybrid_engine
