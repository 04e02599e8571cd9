"""Build the compiled twin ``clobkit._core_c`` (Cython + the project's own C).

``CLOBKIT_NO_EXTENSIONS=1`` at install time skips the build; the package then
runs on its pure-Python twin. ``CLOBKIT_SANITIZE=1`` builds with
AddressSanitizer and UndefinedBehaviorSanitizer, ``CLOBKIT_SANITIZE=thread``
with ThreadSanitizer (see docs/development.md).
"""

import glob
import os
import sys

from setuptools import Extension, setup

ext_modules = []
if os.environ.get("CLOBKIT_NO_EXTENSIONS", "") in ("", "0"):
    from Cython.Build import cythonize

    if sys.platform == "win32":
        extra_compile_args = ["/O2"]
        extra_link_args: list[str] = []
    else:
        extra_compile_args = ["-O3", "-fno-strict-aliasing", "-Wall", "-Wno-unused-function", "-pthread"]
        extra_link_args = ["-pthread"]
        sanitize = os.environ.get("CLOBKIT_SANITIZE", "")
        if sanitize not in ("", "0"):
            # "thread": ThreadSanitizer (the worker pool); anything else: ASan + UBSan
            kind = "thread" if sanitize == "thread" else "address,undefined"
            san = [f"-fsanitize={kind}", "-fno-omit-frame-pointer", "-O1", "-g"]
            extra_compile_args += san
            extra_link_args += san
    ext_modules = cythonize(
        [
            Extension(
                "clobkit._core_c",
                sources=[
                    "ext/_core_c.pyx",
                    "ext/batch.c",
                    "ext/keccak.c",
                    "ext/sha256.c",
                    "ext/sign.c",
                    "ext/workers.c",
                ],
                include_dirs=["ext"],
                # the .pyx's included parts and the C headers: an edit to any rebuilds
                depends=sorted(glob.glob("ext/*.pxi") + glob.glob("ext/*.h")),
                extra_compile_args=extra_compile_args,
                extra_link_args=extra_link_args,
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

setup(ext_modules=ext_modules)
