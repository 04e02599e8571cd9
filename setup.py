"""Build the compiled twin ``clobkit.core._core_c`` (Cython + the project's own C).

``CLOBKIT_NO_EXTENSIONS=1`` at install time skips the build; the package then
runs on its pure-Python twin. Without a working C compiler the build of the
extension fails, and the install goes on with the pure twin after a warning
(what failed, what it costs, how to get the compiled core);
``CLOBKIT_REQUIRE_EXTENSIONS=1`` turns that failure into an error (the wheels
cibuildwheel builds set it). ``CLOBKIT_SANITIZE=1`` builds with
AddressSanitizer and UndefinedBehaviorSanitizer, ``CLOBKIT_SANITIZE=thread``
with ThreadSanitizer (see docs/development.md).

Compile flags are chosen by the compiler that will run, not by the platform:
MSVC takes ``/O2``, every other compiler (gcc, clang, MinGW) the GNU flags.
The C sources pick their SIMD paths themselves (x86 only, behind
``__x86_64__``/``__i386__`` and function-level ``target`` attributes chosen
at run time from CPUID), so no ``-m`` flag is ever passed and the same
command builds on x86-64, aarch64 and macOS arm64.
"""

import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NO_COMPILER_WARNING = """
*** clobkit: the compiled core clobkit.core._core_c could not be built ({error}).
*** clobkit is installed with its pure-Python twin instead: every result is
*** the same, but slower: `clobkit order-ids` on a 1,000,000-row file
*** takes 10 to 20 times as long (about 25 s instead of 1 to 2 s).
*** For the compiled core, install a C compiler (gcc or clang; on Windows the
*** Microsoft C++ Build Tools) and reinstall with
***     pip install --force-reinstall --no-deps --no-cache-dir .
*** or install a prebuilt wheel. Set CLOBKIT_NO_EXTENSIONS=1 to skip the
*** build on purpose, CLOBKIT_REQUIRE_EXTENSIONS=1 to make this an error.
"""


def _on(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


class OptionalBuildExt(build_ext):
    """Builds the extension; where no C compiler works, warns and leaves it out."""

    def build_extensions(self) -> None:
        gnu = self.compiler.compiler_type != "msvc"
        for ext in self.extensions:
            if gnu:
                ext.extra_compile_args = [
                    "-O3",
                    "-fno-strict-aliasing",
                    "-Wall",
                    "-Wno-unused-function",
                ]
                ext.extra_link_args = []
                if sys.platform != "win32":
                    ext.extra_compile_args.append("-pthread")  # workers.c: POSIX threads
                    ext.extra_link_args.append("-pthread")
                if _on("CLOBKIT_SANITIZE"):
                    # "thread": ThreadSanitizer (the worker pool); anything else: ASan + UBSan
                    kind = (
                        "thread"
                        if os.environ["CLOBKIT_SANITIZE"] == "thread"
                        else "address,undefined"
                    )
                    san = [f"-fsanitize={kind}", "-fno-omit-frame-pointer", "-O1", "-g"]
                    ext.extra_compile_args += san
                    ext.extra_link_args += san
            else:
                ext.extra_compile_args = ["/O2"]
                ext.extra_link_args = []
        super().build_extensions()

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # CompileError, LinkError, a missing compiler: all alike
            self._give_up(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        if _on("CLOBKIT_REQUIRE_EXTENSIONS") or _on("CLOBKIT_SANITIZE"):
            raise exc
        error = " ".join(str(exc).split()) or type(exc).__name__
        print(NO_COMPILER_WARNING.format(error=error), file=sys.stderr, flush=True)


ext_modules = []
if not _on("CLOBKIT_NO_EXTENSIONS"):
    from Cython.Build import cythonize

    ext_modules = cythonize(
        [
            Extension(
                "clobkit.core._core_c",
                sources=[
                    "ext/_core_c.pyx",
                    "ext/batch.c",
                    "ext/csvcols.c",
                    "ext/keccak.c",
                    "ext/sha256.c",
                    "ext/sign.c",
                    "ext/workers.c",
                ],
                include_dirs=["ext"],
                # the .pyx's included parts and the C headers: an edit to any rebuilds
                depends=sorted(glob.glob("ext/*.pxi") + glob.glob("ext/*.h")),
            )
        ],
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "embedsignature": True,
        },
    )

setup(ext_modules=ext_modules, cmdclass={"build_ext": OptionalBuildExt})
