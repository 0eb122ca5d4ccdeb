"""Build the private C++ extension ``hybrid_engine._core``; metadata lives in pyproject.toml."""

import os
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

ParallelCompile("HYBRID_ENGINE_BUILD_JOBS", default=2).install()

extra_compile_args = ["-O3", "-fvisibility=hidden"]
extra_link_args = ["-pthread"]
if os.environ.get("HYBRID_ENGINE_NATIVE") == "1":  # opt-in: not portable to other CPUs
    extra_compile_args.append("-march=native")
# Opt-in sanitizers, e.g. HYBRID_ENGINE_SANITIZE=address,undefined (the .ci/sanitize lane):
# debug info and frame pointers for readable reports, and any UB finding aborts.
sanitize = os.environ.get("HYBRID_ENGINE_SANITIZE")
if sanitize:
    flags = [f"-fsanitize={sanitize}", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"]
    extra_compile_args += ["-O1", "-g", *flags]  # after -O3: the later -O wins
    extra_link_args += flags

ext_modules = [
    Pybind11Extension(
        "hybrid_engine._core",
        sorted(glob("csrc/src/*.cpp")) + ["csrc/bindings.cpp"],
        include_dirs=["csrc/include"],
        depends=sorted(glob("csrc/include/hybrid_engine/*.hpp")),  # a header change rebuilds
        cxx_std=17,
        extra_compile_args=extra_compile_args,
        extra_link_args=extra_link_args,
    )
]

setup(ext_modules=ext_modules, cmdclass={"build_ext": build_ext})
