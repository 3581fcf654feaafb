"""Every struct the binding mirrors (each ctypes.Structure of leap._capi) against include/leap.h: the same
fields in the same order, each at the offset and with the size the C compiler gives it, and the same total
size. The field lists come from the header's text and the offsets and sizes from a C program compiled
against it (offsetof / sizeof), so a field added to leap.h and not mirrored, a field mirrored out of order or
with another type, and a mirror of a struct the header does not have all fail here. The growable structs are
also checked against the loaded library: its *_init reports the struct_size it was built with."""
from __future__ import annotations

import ctypes
import importlib
import re
from pathlib import Path

import pytest
from c_header import HEADER, run_program

import leap
from leap import _capi


def header_structs(text: str) -> dict[str, list[str]]:
    """typedef name -> field names in declaration order, for every ``typedef struct name { ... } name;``."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    structs: dict[str, list[str]] = {}
    for m in re.finditer(r"typedef\s+struct\s+\w*\s*\{([^{}]*)\}\s*(\w+)\s*;", text):
        body, name = m.groups()
        fields: list[str] = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            pointer_to_function = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
            if pointer_to_function:
                fields.append(pointer_to_function.group(1))
                continue
            # "type a", "type *b[4]", or several declarators: "type a, *b, c[2]".
            for declarator in decl.split(","):
                ident = re.search(r"(\w+)\s*(?:\[[^\]]*\]\s*)*$", declarator)
                assert ident, f"{name}: cannot read the field of {decl!r}"
                fields.append(ident.group(1))
        structs[name] = fields
    return structs


def mirrors() -> dict[str, type[ctypes.Structure]]:
    """The struct mirrors of leap._capi (opaque handle types have no fields and are not mirrors)."""
    return {name: v for name, v in vars(_capi).items()
            if isinstance(v, type) and issubclass(v, ctypes.Structure) and "_fields_" in vars(v)}


def c_layout(tmp_path: Path, structs: dict[str, list[str]]) -> dict[str, dict[str, tuple[int, int]]]:
    """struct -> field -> (offset, size) as the C compiler lays out the header; the whole struct under ""."""
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "leap.h"',
             '#define FIELD(T, f) printf(#T " " #f " %zu %zu\\n", offsetof(T, f), sizeof(((T *)0)->f))',
             '#define STRUCT(T) printf(#T " - 0 %zu\\n", sizeof(T))',
             "int main(void) {"]
    for name, fields in structs.items():
        lines.append(f"    STRUCT({name});")
        lines += [f"    FIELD({name}, {f});" for f in fields]
    lines += ["    return 0;", "}"]
    out = run_program(tmp_path, "layout", lines)
    layout: dict[str, dict[str, tuple[int, int]]] = {}
    for line in out.splitlines():
        struct, field, offset, size = line.split()
        layout.setdefault(struct, {})["" if field == "-" else field] = (int(offset), int(size))
    return layout


@pytest.fixture(scope="module")
def header() -> dict[str, list[str]]:
    structs = header_structs(HEADER.read_text())
    # The reader must see the header's structs, or every check below would compare nothing.
    assert {"leap_model_params", "leap_generation_options", "leap_event"} <= set(structs)
    assert all(structs.values())
    return structs


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory, header: dict[str, list[str]]):
    return c_layout(tmp_path_factory.mktemp("layout"), header)


def test_the_header_reader_reads_declarations():
    text = """typedef struct leap_x {  /* a comment; with a semicolon */
        uint32_t struct_size;
        const char *name;      /* borrowed */
        int64_t ne[4];
        int32_t a, *b, c[2][3];
        int32_t (*on_event)(const char *text, size_t n, void *user_data);
        leap_callback on_other;
    } leap_x;
    typedef struct leap_handle leap_handle;"""
    assert header_structs(text) == {"leap_x": ["struct_size", "name", "ne", "a", "b", "c", "on_event", "on_other"]}


def test_every_mirror_is_named_as_a_struct_of_the_header(header):
    assert mirrors(), "leap._capi mirrors no struct"
    for name, cls in mirrors().items():
        assert cls.__name__ == name, f"leap._capi.{name} is the mirror {cls.__name__}: one name per C struct"
        assert name in header, f"leap._capi.{name} mirrors no struct of include/leap.h"


def test_structs_are_mirrored_only_in_capi():
    # One place for layouts: a Structure with fields anywhere else in the package would escape this test.
    # (leap.server, Python over the public API, has no ctypes.)
    modules = sorted(f"leap.{p.stem}" for p in Path(leap.__file__).parent.glob("*.py") if p.stem != "__init__")
    assert "leap._capi" in modules
    for name in modules:
        for v in vars(importlib.import_module(name)).values():
            if isinstance(v, type) and issubclass(v, ctypes.Structure) and v.__module__ == name:
                assert name == "leap._capi", f"{name}.{v.__name__}: struct mirrors belong in leap._capi"


@pytest.mark.parametrize("name", sorted(mirrors()))
def test_mirror_layout_is_the_compilers(name, header, layout):
    assert name in header, f"leap._capi.{name} mirrors no struct of include/leap.h"
    cls = mirrors()[name]
    c_fields = header[name]
    py_fields = [f[0] for f in cls._fields_]
    missing = [f for f in c_fields if f not in py_fields]
    extra = [f for f in py_fields if f not in c_fields]
    assert not missing, f"{name}: fields of include/leap.h not mirrored in leap._capi: {missing}"
    assert not extra, f"{name}: fields of leap._capi that include/leap.h does not have: {extra}"
    assert py_fields == c_fields, f"{name}: mirrored in the order {py_fields}, the header's is {c_fields}"
    for field in c_fields:
        descriptor = getattr(cls, field)
        assert (descriptor.offset, descriptor.size) == layout[name][field], \
            f"{name}.{field}: (offset, size) {(descriptor.offset, descriptor.size)} in leap._capi, " \
            f"{layout[name][field]} in C"
    assert ctypes.sizeof(cls) == layout[name][""][1], f"{name}: sizeof {ctypes.sizeof(cls)} in leap._capi, " \
                                                      f"{layout[name][''][1]} in C"


@pytest.mark.parametrize("name", sorted(n for n in mirrors() if hasattr(_capi, n + "_init")))
def test_growable_mirror_has_the_librarys_size(name):
    # *_init writes at most the bytes given and sets struct_size to min(given, the library's own size): given
    # more room than the mirror, it reports the size of the struct the loaded library was built with.
    cls = mirrors()[name]
    assert cls._fields_[0][0] == "struct_size"
    room = (ctypes.c_uint8 * (ctypes.sizeof(cls) + 256))()
    getattr(_capi, name + "_init")(ctypes.cast(room, ctypes.POINTER(cls)), len(room))
    assert ctypes.c_uint32.from_buffer(room).value == ctypes.sizeof(cls)
