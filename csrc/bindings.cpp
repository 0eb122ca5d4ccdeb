// The only file that knows Python: argument checks, array allocation, GIL release, exceptions.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "hybrid_engine/analyzer.hpp"

namespace py = pybind11;
namespace he = hybrid_engine;

namespace {

he::AnalyzerConfig analyzer_config_from_kwargs(bool lowercase, bool strip_accents, bool stopwords,
                                               std::string stemmer, std::size_t min_token_length,
                                               std::size_t max_token_length, std::string cjk) {
    he::AnalyzerConfig config;
    config.lowercase = lowercase;
    config.strip_accents = strip_accents;
    config.stopwords = stopwords;
    config.stemmer = std::move(stemmer);
    config.min_token_length = min_token_length;
    config.max_token_length = max_token_length;
    config.cjk = std::move(cjk);
    return config;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "hybrid_engine private C++ core; use the public Python API instead.";

    py::class_<he::Analyzer>(m, "Analyzer")
        .def(py::init([](bool lowercase, bool strip_accents, bool stopwords, std::string stemmer,
                         std::size_t min_token_length, std::size_t max_token_length,
                         std::string cjk) {
                 return he::Analyzer(analyzer_config_from_kwargs(
                     lowercase, strip_accents, stopwords, std::move(stemmer), min_token_length,
                     max_token_length, std::move(cjk)));
             }),
             py::kw_only(), py::arg("lowercase") = true, py::arg("strip_accents") = true,
             py::arg("stopwords") = true, py::arg("stemmer") = "english",
             py::arg("min_token_length") = 2, py::arg("max_token_length") = 64,
             py::arg("cjk") = "unigram")
        .def(
            "analyze",
            [](const he::Analyzer& self, std::string_view text) {
                std::vector<std::string> terms;
                {
                    py::gil_scoped_release release;
                    terms = self.analyze(text);
                }
                return terms;
            },
            py::arg("text"));

    m.def("stem_english", &he::stem_english, py::arg("word"));
}
