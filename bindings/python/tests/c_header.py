"""include/leap.h as the C compiler sees it, for the tests that hold leap._capi to it: a C program compiled
against the header and run (its output is what the compiler computed), and the header preprocessed."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
INCLUDE = REPO / "include"
HEADER = INCLUDE / "leap.h"


def compiler() -> str:
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler (cc or $CC) to read include/leap.h with")
    return cc


def run_program(tmp_path: Path, name: str, lines: list[str], header: Path = HEADER) -> str:
    """The standard output of a C99 program (`lines`) that includes `header`, compiled warning-free."""
    source = tmp_path / f"{name}.c"
    source.write_text("\n".join(lines) + "\n")
    exe = tmp_path / name
    build = subprocess.run([compiler(), "-std=c99", "-Wall", "-Werror", "-pedantic", f"-I{header.parent}",
                            str(source), "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, f"the program {name}.c does not compile against {header.name}:\n{build.stderr}"
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def preprocess(tmp_path: Path, header: Path = HEADER, macros: bool = False) -> str:
    """The header after the C preprocessor (C99, not C++): comments gone, conditionals decided, LEAP_API
    expanded. <stddef.h> and <stdint.h> are read as empty files so that only the header's own declarations
    remain. macros=True gives the #define lines in effect at its end instead."""
    stubs = tmp_path / "stub-include"
    stubs.mkdir(exist_ok=True)
    for name in ("stddef.h", "stdint.h"):
        (stubs / name).write_text("")
    args = [compiler(), "-std=c99", "-E", "-P", f"-I{stubs}", str(header)]
    if macros:
        args.insert(2, "-dM")
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, f"the preprocessor cannot read {header}:\n{out.stderr}"
    return out.stdout
