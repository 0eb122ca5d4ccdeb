"""Build the private C++ extension ``hybrid_engine._core``; metadata lives in pyproject.toml."""

import os
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

ParallelCompile("HYBRID_ENGINE_BUILD_JOBS", default=2).install()

extra_compile_args = ["-O3", "-fvisibility=hidden"]
if os.environ.get("HYBRID_ENGINE_NATIVE") == "1":  # opt-in: not portable to other CPUs
    extra_compile_args.append("-march=native")

ext_modules = [
    Pybind11Extension(
        "hybrid_engine._core",
        sorted(glob("csrc/src/*.cpp")) + ["csrc/bindings.cpp"],
        include_dirs=["csrc/include"],
        depends=sorted(glob("csrc/include/hybrid_engine/*.hpp")),  # a header change rebuilds
        cxx_std=17,
        extra_compile_args=extra_compile_args,
        extra_link_args=["-pthread"],
    )
]

setup(ext_modules=ext_modules, cmdclass={"build_ext": build_ext})
