// The only file that knows Python: argument checks, array allocation, GIL release, exceptions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hybrid_engine/analyzer.hpp"
#include "hybrid_engine/impact_index.hpp"
#include "hybrid_engine/index_builder.hpp"
#include "hybrid_engine/query_encoder.hpp"
#include "hybrid_engine/string_table.hpp"
#include "hybrid_engine/string_table_view.hpp"

namespace py = pybind11;
namespace he = hybrid_engine;

namespace {

template <class T>
using CArray = py::array_t<T, py::array::c_style>;

/// A numpy array that owns `values` without copying them.
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& values) {
    auto* owner = new std::vector<T>(std::move(values));
    py::capsule free_owner(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>({static_cast<py::ssize_t>(owner->size())}, owner->data(), free_owner);
}

py::array_t<uint8_t> to_numpy(std::string&& bytes) {
    auto* owner = new std::string(std::move(bytes));
    py::capsule free_owner(owner, [](void* p) { delete static_cast<std::string*>(p); });
    return py::array_t<uint8_t>({static_cast<py::ssize_t>(owner->size())},
                                reinterpret_cast<const uint8_t*>(owner->data()), free_owner);
}

/// UTF-8 copy of one str; `label` names it in error messages ("query 3", "text").
std::string utf8_text(py::handle item, const std::string& label) {
    if (!PyUnicode_Check(item.ptr())) {
        throw py::type_error(label + " is " + std::string(Py_TYPE(item.ptr())->tp_name) +
                             ", expected str");
    }
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
    if (data == nullptr) {
        PyErr_Clear();
        throw py::value_error(label +
                              " is not valid Unicode (it holds a lone surrogate); clean it "
                              "first, e.g. text.encode('utf-8', 'replace').decode()");
    }
    return std::string(data, static_cast<std::size_t>(size));
}

/// UTF-8 copies of a sequence of str; `what` names the items in error messages.
std::vector<std::string> utf8_texts(const py::sequence& items, const char* what) {
    std::vector<std::string> texts;
    texts.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        texts.push_back(utf8_text(items[i], std::string(what) + " " + std::to_string(i)));
    }
    return texts;
}

using ByteArray = CArray<uint8_t>;
using OffsetArray = CArray<int64_t>;
using SlotArray = CArray<uint64_t>;

/// Raw pointers into a vocabulary's arena and offsets: 1-d, the offsets non-empty.
std::pair<std::string_view, const int64_t*> vocabulary_arrays(const ByteArray& vocab_bytes,
                                                              const OffsetArray& vocab_offsets) {
    if (vocab_bytes.ndim() != 1 || vocab_offsets.ndim() != 1 || vocab_offsets.size() < 1) {
        throw py::value_error("vocab_bytes and vocab_offsets must be 1-d, vocab_offsets non-empty");
    }
    return {std::string_view(reinterpret_cast<const char*>(vocab_bytes.data()),
                             static_cast<std::size_t>(vocab_bytes.size())),
            vocab_offsets.data()};
}

/// The strings of an arena and its offsets (as `vocabulary_arrays` reads them): offsets from
/// 0 to the arena's size, never falling. Views into the arrays.
std::vector<std::string_view> arena_strings(const ByteArray& bytes, const OffsetArray& offsets) {
    const auto [arena, starts] = vocabulary_arrays(bytes, offsets);
    const auto n = static_cast<std::size_t>(offsets.size() - 1);
    if (starts[0] != 0 || starts[n] != static_cast<int64_t>(arena.size())) {
        throw py::value_error("offsets must run from 0 to the number of bytes");
    }
    std::vector<std::string_view> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (starts[i + 1] < starts[i]) throw py::value_error("offsets must not fall");
        out[i] = arena.substr(static_cast<std::size_t>(starts[i]),
                              static_cast<std::size_t>(starts[i + 1] - starts[i]));
    }
    return out;
}

/// A view of a vocabulary's arrays (checked as `StringTableView`'s constructor does).
he::StringTableView vocabulary_view(const ByteArray& vocab_bytes, const OffsetArray& vocab_offsets,
                                    const SlotArray& vocab_slots) {
    const auto [bytes, offsets] = vocabulary_arrays(vocab_bytes, vocab_offsets);
    if (vocab_slots.ndim() != 1) throw py::value_error("vocab_slots must be 1-d");
    return he::StringTableView(bytes.data(), bytes.size(), offsets,
                               static_cast<std::size_t>(vocab_offsets.size() - 1),
                               vocab_slots.data(), static_cast<std::size_t>(vocab_slots.size()));
}

/// The arrays of a finished index, by their Python names.
py::dict index_dict(he::InvertedIndexArrays&& arrays) {
    py::dict out;
    out["vocab_bytes"] = to_numpy(std::move(arrays.vocab_bytes));
    out["vocab_offsets"] = to_numpy(std::move(arrays.vocab_offsets));
    out["vocab_slots"] = to_numpy(std::move(arrays.vocab_slots));
    out["doc_freqs"] = to_numpy(std::move(arrays.doc_freqs));
    out["posting_offsets"] = to_numpy(std::move(arrays.posting_offsets));
    out["postings"] = to_numpy(std::move(arrays.postings));
    out["doc_lengths"] = to_numpy(std::move(arrays.doc_lengths));
    if (!arrays.position_offsets.empty()) {
        out["position_offsets"] = to_numpy(std::move(arrays.position_offsets));
        out["positions"] = to_numpy(std::move(arrays.positions));
    }
    return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "hybrid_engine private C++ core; use the public Python API instead.";

    py::class_<he::AnalyzerConfig>(m, "AnalyzerConfig")
        .def(py::init<>())
        .def_readwrite("lowercase", &he::AnalyzerConfig::lowercase)
        .def_readwrite("strip_accents", &he::AnalyzerConfig::strip_accents)
        .def_readwrite("stopwords", &he::AnalyzerConfig::stopwords)
        .def_readwrite("stemmer", &he::AnalyzerConfig::stemmer)
        .def_readwrite("min_token_length", &he::AnalyzerConfig::min_token_length)
        .def_readwrite("max_token_length", &he::AnalyzerConfig::max_token_length)
        .def_readwrite("cjk", &he::AnalyzerConfig::cjk);

    py::class_<he::Analyzer>(m, "Analyzer")
        .def(py::init<he::AnalyzerConfig>(), py::arg("config"))
        .def(
            "analyze",
            [](const he::Analyzer& self, const py::object& text) {
                const std::string utf8 = utf8_text(text, "text");
                std::vector<std::string> terms;
                {
                    py::gil_scoped_release release;
                    terms = self.analyze(utf8);
                }
                return terms;
            },
            py::arg("text"));

    m.def("stem_english", &he::stem_english, py::arg("word"));

    py::class_<he::IndexBuilder>(m, "IndexBuilder")
        .def(py::init<he::AnalyzerConfig, unsigned, bool>(), py::arg("config"),
             py::arg("num_threads"), py::arg("positions") = false)
        .def(
            "add",
            [](he::IndexBuilder& self, const py::sequence& texts) {
                const std::vector<std::string> utf8 = utf8_texts(texts, "document");
                py::gil_scoped_release release;
                self.add(utf8);
            },
            py::arg("texts"))
        .def_property_readonly("num_documents", &he::IndexBuilder::num_documents)
        .def("terms",
             [](const he::IndexBuilder& self) {
                 const he::StringTable& terms = self.terms();
                 std::vector<std::string> out;
                 out.reserve(terms.size());
                 for (std::size_t t = 0; t < terms.size(); ++t) {
                     out.emplace_back(terms.key(static_cast<int32_t>(t)));
                 }
                 return out;
             })
        .def("finish",
             [](he::IndexBuilder& self) {
                 he::InvertedIndexArrays arrays;
                 {
                     py::gil_scoped_release release;
                     arrays = self.finish();
                 }
                 return index_dict(std::move(arrays));
             })
        .def(
            "finish_mapped",
            [](he::IndexBuilder& self, const CArray<int32_t>& targets, const ByteArray& vocab_bytes,
               const OffsetArray& vocab_offsets) {
                if (targets.ndim() != 1) throw py::value_error("targets must be 1-d");
                const auto [bytes, offsets] = vocabulary_arrays(vocab_bytes, vocab_offsets);
                const auto n = static_cast<std::size_t>(vocab_offsets.size() - 1);
                std::vector<int32_t> mapped(targets.data(), targets.data() + targets.size());
                he::InvertedIndexArrays arrays;
                {
                    py::gil_scoped_release release;
                    arrays = self.finish_mapped(
                        mapped,
                        he::StringTable::from_arena(bytes.data(), bytes.size(), offsets, n));
                }
                return index_dict(std::move(arrays));
            },
            py::arg("targets").noconvert(), py::arg("vocab_bytes").noconvert(),
            py::arg("vocab_offsets").noconvert());

    m.def(
        "invert_impacts",
        [](const CArray<int64_t>& doc_offsets, const CArray<int32_t>& terms,
           const CArray<uint8_t>& impacts, int64_t n_terms) {
            if (doc_offsets.ndim() != 1 || terms.ndim() != 1 || impacts.ndim() != 1 ||
                doc_offsets.size() < 1) {
                throw py::value_error(
                    "doc_offsets, terms and impacts must be 1-d, doc_offsets "
                    "non-empty (n_docs + 1 entries)");
            }
            if (terms.size() != impacts.size()) {
                throw py::value_error("terms and impacts must have the same length, got " +
                                      std::to_string(terms.size()) + " and " +
                                      std::to_string(impacts.size()));
            }
            if (n_terms < 0) {
                throw py::value_error("n_terms must be >= 0, got " + std::to_string(n_terms));
            }
            const int64_t* offsets = doc_offsets.data();
            const auto n_docs = static_cast<std::size_t>(doc_offsets.size() - 1);
            const int32_t* term_data = terms.data();
            const uint8_t* impact_data = impacts.data();
            const auto n_entries = static_cast<std::size_t>(terms.size());
            he::ImpactIndexArrays arrays;
            {
                py::gil_scoped_release release;
                arrays = he::invert_impacts(offsets, n_docs, term_data, impact_data, n_entries,
                                            static_cast<std::size_t>(n_terms));
            }
            py::dict out;
            out["posting_offsets"] = to_numpy(std::move(arrays.posting_offsets));
            out["doc_freqs"] = to_numpy(std::move(arrays.doc_freqs));
            out["doc_ids"] = to_numpy(std::move(arrays.doc_ids));
            out["impacts"] = to_numpy(std::move(arrays.impacts));
            return out;
        },
        py::arg("doc_offsets").noconvert(), py::arg("terms").noconvert(),
        py::arg("impacts").noconvert(), py::arg("n_terms"));

    // A growing vocabulary: the live engine's term ids shared across segments
    // (hybrid_engine/live/statistics.py), a few bytes a term where a dict takes ~150.
    py::class_<he::StringTable>(m, "StringTable")
        .def(py::init<>())
        .def("__len__", &he::StringTable::size)
        .def(
            "insert_arena",
            [](he::StringTable& self, const ByteArray& bytes, const OffsetArray& offsets) {
                const std::vector<std::string_view> keys = arena_strings(bytes, offsets);
                std::vector<int64_t> ids(keys.size());
                {
                    py::gil_scoped_release release;
                    for (std::size_t i = 0; i < keys.size(); ++i) ids[i] = self.insert(keys[i]);
                }
                return to_numpy(std::move(ids));
            },
            py::arg("bytes").noconvert(), py::arg("offsets").noconvert())
        .def("keys",
             [](const he::StringTable& self) {
                 std::vector<std::string> out;
                 out.reserve(self.size());
                 for (std::size_t t = 0; t < self.size(); ++t) {
                     out.emplace_back(self.key(static_cast<int32_t>(t)));
                 }
                 return out;
             })
        .def(
            "find_arena",
            [](const he::StringTable& self, const ByteArray& bytes, const OffsetArray& offsets) {
                const std::vector<std::string_view> keys = arena_strings(bytes, offsets);
                std::vector<int64_t> ids(keys.size());
                for (std::size_t i = 0; i < keys.size(); ++i) ids[i] = self.find(keys[i]);
                return to_numpy(std::move(ids));
            },
            py::arg("bytes").noconvert(), py::arg("offsets").noconvert())
        .def(
            "take",
            [](const he::StringTable& self, const CArray<int64_t>& ids) {
                std::vector<std::string> out;
                out.reserve(static_cast<std::size_t>(ids.size()));
                for (py::ssize_t i = 0; i < ids.size(); ++i) {
                    const int64_t id = ids.data()[i];
                    if (id < 0 || id >= static_cast<int64_t>(self.size())) {
                        throw py::index_error("term id " + std::to_string(id) +
                                              " is outside 0 .. " + std::to_string(self.size()) +
                                              " - 1");
                    }
                    out.emplace_back(self.key(static_cast<int32_t>(id)));
                }
                return out;
            },
            py::arg("ids").noconvert());

    m.def(
        "vocab_slots",
        [](const ByteArray& vocab_bytes, const OffsetArray& vocab_offsets) {
            const auto [bytes, offsets] = vocabulary_arrays(vocab_bytes, vocab_offsets);
            const auto n = static_cast<std::size_t>(vocab_offsets.size() - 1);
            std::vector<uint64_t> slots;
            {
                py::gil_scoped_release release;
                slots = he::StringTable::from_arena(bytes.data(), bytes.size(), offsets, n).slots();
            }
            return to_numpy(std::move(slots));
        },
        py::arg("vocab_bytes").noconvert(), py::arg("vocab_offsets").noconvert());

    m.def(
        "check_vocab_slots",
        [](const ByteArray& vocab_bytes, const OffsetArray& vocab_offsets,
           const SlotArray& vocab_slots) {
            const he::StringTableView view =
                vocabulary_view(vocab_bytes, vocab_offsets, vocab_slots);
            py::gil_scoped_release release;
            view.verify();
        },
        py::arg("vocab_bytes").noconvert(), py::arg("vocab_offsets").noconvert(),
        py::arg("vocab_slots").noconvert());

    // The encoder reads the arrays in place: they live as long as it does (keep_alive).
    py::class_<he::QueryEncoder>(m, "QueryEncoder")
        .def(py::init([](he::AnalyzerConfig config, const ByteArray& vocab_bytes,
                         const OffsetArray& vocab_offsets, const SlotArray& vocab_slots) {
                 return he::QueryEncoder(std::move(config),
                                         vocabulary_view(vocab_bytes, vocab_offsets, vocab_slots));
             }),
             py::arg("config"), py::arg("vocab_bytes").noconvert(),
             py::arg("vocab_offsets").noconvert(), py::arg("vocab_slots").noconvert(),
             py::keep_alive<1, 3>(), py::keep_alive<1, 4>(), py::keep_alive<1, 5>())
        .def(
            "encode",
            [](const he::QueryEncoder& self, const py::sequence& queries) {
                const std::vector<std::string> utf8 = utf8_texts(queries, "query");
                he::EncodedQueries encoded;
                {
                    py::gil_scoped_release release;
                    encoded = self.encode(utf8);
                }
                return py::make_tuple(to_numpy(std::move(encoded.terms)),
                                      to_numpy(std::move(encoded.weights)),
                                      to_numpy(std::move(encoded.offsets)));
            },
            py::arg("queries"))
        .def("term_id", [](const he::QueryEncoder& self, std::string_view term) {
            return self.vocabulary().find(term);
        });
}
