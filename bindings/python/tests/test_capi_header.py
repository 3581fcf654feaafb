"""leap._capi against include/leap.h as the C compiler reads it: the enum values and macros the binding keeps,
and the prototypes and callback types it declares.

* Constants: every ``LEAP_*`` attribute of leap._capi must be an enumerator or a macro of the header with
  the value a C program compiled against the header prints; an enum of which leap._capi has one
  enumerator is mirrored whole, so an enumerator the header adds to it and Python lacks fails.
* Prototypes: every ``leap_*`` function the binding declares (the prototypes of leap._capi and any other
  function looked up on its library) must be declared in the header with as many parameters, each of a
  compatible type: an integer of the same width and signedness (an enum: an int of its width), a float
  of the same width, a pointer where C has one (a typed one for a struct, a handle or another pointer), a
  callback as the ctypes type named as its typedef; and the same result. Callback types (CFUNCTYPE named
  as a typedef) must match the typedef's signature the same way.

The header's declarations are read by a small strict reader over the preprocessed header: a declaration
it cannot read fails the test that needs it, so nothing is compared against a guess."""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pytest
from c_header import preprocess, run_program

from leap import _capi

# ---- A strict reader of the header's declarations -----------------------------------------------------

_TOKEN = re.compile(r'\s+|(?P<tok>[A-Za-z_]\w*|\d\w*|"(?:[^"\\\n]|\\.)*"|\.\.\.|[{}()\[\];,*=|&<>+\-~!/%^?:.])')
_INTEGERS = {"char", "int", "size_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
             "int64_t", "uint64_t"}
_FLOATS = {"float", "double"}


class HeaderSyntaxError(Exception):
    """A declaration the reader does not understand (or a type it does not know)."""


@dataclass(frozen=True)
class CType:
    """A C type as far as the ABI cares: its base type, what kind of type that is, and the pointer depth.
    kind: "void", "int", "float", "enum", "struct" (has a body in the header), "handle" (an opaque struct)
    or "callback" (a function-pointer typedef)."""

    base: str
    kind: str
    pointers: int = 0

    def pointee(self) -> "CType":
        assert self.pointers > 0
        return CType(self.base, self.kind, self.pointers - 1)

    def __str__(self) -> str:
        return self.base + " " + "*" * self.pointers if self.pointers else self.base


@dataclass(frozen=True)
class Signature:
    result: CType
    params: tuple[CType, ...]


@dataclass
class Header:
    functions: dict[str, Signature] = field(default_factory=dict)  # LEAP_API functions
    callbacks: dict[str, Signature] = field(default_factory=dict)  # typedef R (*name)(...);
    enums: dict[str, list[str]] = field(default_factory=dict)  # enum typedef -> enumerators in order
    kinds: dict[str, str] = field(default_factory=dict)  # typedef name -> CType.kind


class _Reader:
    """Recursive descent over the tokens of the preprocessed header. The grammar is the header's:
         typedef enum [tag] { A [= expr], ... } name ;
         typedef struct tag { fields } name ;      typedef struct tag name ;
         typedef type ( * name ) ( params ) ;
         __attribute__((visibility("default"))) type name ( params ) ;   (LEAP_API)
       type := [const] base [const] { * [const] };  params := void | type [name] {, type [name]}."""

    def __init__(self, text: str) -> None:
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise HeaderSyntaxError(f"unexpected character {text[pos]!r} in {text[max(0, pos - 40):pos + 40]!r}")
            if m.group("tok"):
                self.tokens.append(m.group("tok"))
            pos = m.end()
        self.i = 0
        self.header = Header()

    def peek(self, ahead: int = 0) -> Optional[str]:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise HeaderSyntaxError("unexpected end of the header")
        self.i += 1
        return tok

    def expect(self, *words: str) -> None:
        for w in words:
            if self.peek() != w:
                raise HeaderSyntaxError(f"expected {w!r}, found {self.peek()!r} in: {self.context()}")
            self.i += 1

    def ident(self) -> str:
        tok = self.take()
        if not re.fullmatch(r"[A-Za-z_]\w*", tok):
            raise HeaderSyntaxError(f"expected a name, found {tok!r} in: {self.context()}")
        return tok

    def context(self) -> str:
        start = self.i
        while start > 0 and self.tokens[start - 1] not in (";", "}"):
            start -= 1
        return " ".join(self.tokens[start:self.i + 8])

    def read(self) -> Header:
        while self.peek() is not None:
            if self.peek() == "typedef":
                self.typedef()
            elif self.peek() == "__attribute__":
                self.function()
            else:
                raise HeaderSyntaxError(f"cannot read the declaration: {self.context()}")
        return self.header

    def typedef(self) -> None:
        self.expect("typedef")
        if self.peek() == "enum":
            self.expect("enum")
            if self.peek() != "{":
                self.ident()
            self.expect("{")
            names: list[str] = []
            while self.peek() != "}":
                names.append(self.ident())
                if self.peek() == "=":  # the value is the compiler's; here only that it is one expression
                    self.take()
                    previous_operand = False
                    while self.peek() not in (",", "}"):
                        operand = re.fullmatch(r"\w+", self.take()) is not None
                        if operand and previous_operand:
                            raise HeaderSyntaxError(f"two operands in a row in the enum: {self.context()}")
                        previous_operand = operand
                if self.peek() == ",":
                    self.take()
                elif self.peek() != "}":
                    raise HeaderSyntaxError(f"expected ',' or '}}' in the enum: {self.context()}")
            self.expect("}")
            name = self.ident()
            self.expect(";")
            self.header.enums[name] = names
            self.header.kinds[name] = "enum"
        elif self.peek() == "struct":
            self.expect("struct")
            tag = self.ident()
            if self.peek() == "{":  # the fields are test_struct_layout's; here only that it has a body
                depth = 0
                while True:
                    tok = self.take()
                    depth += {"{": 1, "}": -1}.get(tok, 0)
                    if depth == 0:
                        break
                kind = "struct"
            else:
                kind = "handle"
            name = self.ident()
            if name != tag:
                raise HeaderSyntaxError(f"typedef struct {tag} named {name}: {self.context()}")
            self.expect(";")
            self.header.kinds[name] = kind
        else:
            result = self.type()
            self.expect("(", "*")
            name = self.ident()
            self.expect(")")
            params = self.params()
            self.expect(";")
            self.header.callbacks[name] = Signature(result, params)
            self.header.kinds[name] = "callback"

    def function(self) -> None:
        self.expect("__attribute__", "(", "(", "visibility", "(", '"default"', ")", ")", ")")
        result = self.type()
        name = self.ident()
        params = self.params()
        self.expect(";")
        if name in self.header.functions:
            raise HeaderSyntaxError(f"{name} declared twice")
        self.header.functions[name] = Signature(result, params)

    def type(self) -> CType:
        if self.peek() == "const":
            self.take()
        base = self.ident()
        if base in ("struct", "enum"):
            base = self.ident()
        if base == "void":
            kind = "void"
        elif base in _INTEGERS:
            kind = "int"
        elif base in _FLOATS:
            kind = "float"
        elif base in self.header.kinds:
            kind = self.header.kinds[base]
        else:
            raise HeaderSyntaxError(f"unknown type {base!r} in: {self.context()}")
        if self.peek() == "const":
            self.take()
        pointers = 0
        while self.peek() == "*":
            self.take()
            pointers += 1
            if self.peek() == "const":
                self.take()
        return CType(base, kind, pointers)

    def params(self) -> tuple[CType, ...]:
        self.expect("(")
        if self.peek() == "void" and self.peek(1) == ")":
            self.expect("void", ")")
            return ()
        params: list[CType] = []
        while True:
            t = self.type()
            if t.kind == "void" and t.pointers == 0:
                raise HeaderSyntaxError(f"a void parameter among others: {self.context()}")
            params.append(t)
            if self.peek() not in (",", ")"):
                self.ident()  # the parameter's name
            if self.peek() == ",":
                self.take()
                continue
            self.expect(")")  # anything else (an array, "...", a function parameter) is not read
            return tuple(params)


def read_header(text: str) -> Header:
    return _Reader(text).read()


# ---- What compatible means between a ctypes type and a C type -----------------------------------------

_SIGNED, _UNSIGNED = set("bhilq"), set("BHILQ")


def mismatch(py: Any, c: CType, facts: dict[str, tuple[int, bool]]) -> Optional[str]:
    """Why the ctypes type `py` cannot stand for `c` in a call (None when it can). `facts` maps each scalar
    C type name to (sizeof, signed) as the compiler has them."""
    if c.pointers == 0:
        if c.kind == "void":
            return None if py is None else f"void in C, {py} in Python"
        expected = getattr(_capi, c.base, None)
        if c.kind == "callback":
            ok = expected is not None and py is expected
            return None if ok else f"{c} in C: leap._capi.{c.base} expected, got {py}"
        if c.kind in ("struct", "handle"):
            ok = c.kind == "struct" and expected is not None and py is expected
            return None if ok else f"struct {c} by value in C, {py} in Python"
        size, signed = facts[c.base]
        code = getattr(py, "_type_", None)
        if not (isinstance(py, type) and issubclass(py, ctypes._SimpleCData) and isinstance(code, str)):
            return f"{c} in C, {py} in Python"
        if c.kind == "float":
            ok = code in "fd" and ctypes.sizeof(py) == size
            return None if ok else f"{c} ({size} bytes) in C, {py.__name__} in Python"
        if code not in _SIGNED | _UNSIGNED | ({"c"} if c.base == "char" else set()):
            return f"{c} in C, {py.__name__} (not an integer) in Python"
        if ctypes.sizeof(py) != size:
            return f"{c} ({size} bytes) in C, {py.__name__} ({ctypes.sizeof(py)} bytes) in Python"
        # An enum's signedness is the compiler's choice; its values are small non-negative numbers either way.
        if c.kind == "int" and code != "c" and (code in _SIGNED) != signed:
            return f"{c} ({'signed' if signed else 'unsigned'}) in C, {py.__name__} in Python"
        return None
    if not isinstance(py, type):
        return f"{c} in C, {py} in Python"
    pointee = c.pointee()
    if pointee.pointers == 0 and pointee.kind in ("struct", "handle"):
        # A struct pointer is the POINTER of the mirror; a handle the POINTER of the opaque type named as it.
        target = getattr(py, "_type_", None)
        if not (issubclass(py, ctypes._Pointer) and isinstance(target, type) and target.__name__ == c.base
                and issubclass(target, ctypes.Structure)):
            return f"{c} in C, {py.__name__} in Python (POINTER of {c.base} expected)"
        if pointee.kind == "struct" and target is not getattr(_capi, c.base, None):
            return f"{c} in C: POINTER(leap._capi.{c.base}) expected, got POINTER of another {c.base}"
        if pointee.kind == "handle" and "_fields_" in vars(target):
            return f"{c} (an opaque handle) in C, a pointer to a struct with fields in Python"
        return None
    if py is ctypes.c_char_p:
        bytes_like = pointee.pointers == 0 and pointee.base in ("char", "void", "uint8_t", "int8_t")
        return None if bytes_like else f"{c} in C, c_char_p in Python"
    if py is ctypes.c_void_p:
        # Any pointer to data (void, numbers or pointers to them); never a struct, a handle or a callback.
        return None if pointee.kind in ("void", "int", "float", "enum") else f"{c} in C, c_void_p in Python"
    if issubclass(py, ctypes._Pointer):
        why = mismatch(py._type_, pointee, facts)
        return None if why is None else f"{c} in C, {py.__name__} in Python: {why}"
    return f"{c} (a pointer) in C, {py.__name__} in Python"


def assert_signature(name: str, restype: Any, argtypes: Any, sig: Optional[Signature],
                     facts: dict[str, tuple[int, bool]]) -> None:
    """A function or callback type of the binding (its ctypes result and argument types) against the header's
    declaration of the same name (None: there is none)."""
    assert sig is not None, f"{name}: declared in leap._capi, not a function or function-pointer typedef of " \
                            "include/leap.h"
    assert argtypes is not None, f"{name}: no argtypes in Python (called without a prototype)"
    assert len(argtypes) == len(sig.params), \
        f"{name}: {len(argtypes)} parameters in Python, {len(sig.params)} in include/leap.h"
    problems = []
    why = mismatch(restype, sig.result, facts)
    if why:
        problems.append(f"{name}: result: {why}")
    for i, (py, c) in enumerate(zip(argtypes, sig.params)):
        why = mismatch(py, c, facts)
        if why:
            problems.append(f"{name}: parameter {i + 1}: {why}")
    assert not problems, "\n".join(problems)


# ---- What the binding declares ------------------------------------------------------------------------


def python_constants() -> dict[str, Any]:
    return {name: v for name, v in vars(_capi).items() if re.fullmatch(r"LEAP_[A-Z0-9_]+", name)}


def declared_functions() -> dict[str, Any]:
    """Every C function of the library the binding has looked up: the prototypes of leap._capi, and any
    other (ctypes keeps each function looked up on a CDLL as its attribute)."""
    found: dict[str, Any] = {}
    for name, v in vars(_capi).items():
        if isinstance(v, ctypes._CFuncPtr) and not isinstance(v, type):
            assert v.__name__ == name, f"leap._capi.{name} is the C function {v.__name__}: name it as its C function"
            found[name] = v
    for name, v in vars(_capi.lib).items():
        if isinstance(v, ctypes._CFuncPtr):
            found.setdefault(name, v)
    return found


def callback_types() -> dict[str, Any]:
    """The CFUNCTYPE types of leap._capi, by attribute name."""
    return {name: v for name, v in vars(_capi).items()
            if isinstance(v, type) and issubclass(v, ctypes._CFuncPtr) and hasattr(v, "_argtypes_")}


# ---- Fixtures: the header read, and what the compiler computes from it -------------------------------


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("capi_header")


@pytest.fixture(scope="module")
def header(tmp: Path) -> Header:
    h = read_header(preprocess(tmp))
    # The reader must see the header's declarations, or every check below would compare nothing.
    assert {"leap_status", "leap_role", "leap_event_kind"} <= set(h.enums)
    assert {"leap_conversation_generate_begin", "leap_model_load", "leap_generation_next"} <= set(h.functions)
    assert {"leap_log_callback", "leap_download_progress_fn"} <= set(h.callbacks)
    return h


@pytest.fixture(scope="module")
def header_macros(tmp: Path) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^#define (LEAP_\w+) ", preprocess(tmp, macros=True), re.M)}


def compiled_facts(tmp: Path, constants: list[str], scalar_types: list[str]) -> tuple[dict[str, int],
                                                                                       dict[str, tuple[int, bool]]]:
    """The value of each constant and (sizeof, signed) of each scalar type, printed by a C program."""
    lines = ["#include <stdio.h>", '#include "leap.h"', "int main(void) {"]
    lines += [f'    printf("value {n} %lld\\n", (long long)({n}));' for n in constants]
    lines += [f'    printf("type {t} %zu %d\\n", sizeof({t}), (int)(({t})-1 < ({t})0));' for t in scalar_types]
    lines += ["    return 0;", "}"]
    values: dict[str, int] = {}
    types: dict[str, tuple[int, bool]] = {}
    for line in run_program(tmp, "capi_facts", lines).splitlines():
        what, name, *rest = line.split()
        if what == "value":
            values[name] = int(rest[0])
        else:
            types[name] = (int(rest[0]), rest[1] == "1")
    return values, types


@pytest.fixture(scope="module")
def facts(tmp: Path, header: Header, header_macros: set[str]) -> tuple[dict[str, int], dict[str, tuple[int, bool]]]:
    enumerators = {n for names in header.enums.values() for n in names}
    known = sorted(n for n in python_constants() if n in enumerators or n in header_macros)
    signatures = list(header.functions.values()) + list(header.callbacks.values())
    scalars = sorted({t.base for s in signatures for t in (s.result,) + s.params
                      if t.kind in ("int", "float", "enum")} | set(header.enums))
    return compiled_facts(tmp, known, scalars)


# ---- The reader itself --------------------------------------------------------------------------------

SAMPLE = """
typedef enum leap_color { LEAP_RED = 0, LEAP_GREEN = 1 << 2, LEAP_BLUE, } leap_color;
typedef struct leap_thing leap_thing;
typedef struct leap_opts { uint32_t struct_size; struct { int a; } inner; } leap_opts;
typedef int32_t (*leap_cb)(const char *text, size_t n, void *user_data);
__attribute__((visibility("default"))) leap_color leap_f(const leap_thing *const t, leap_opts *o, char **out,
    leap_cb cb, float x);
__attribute__((visibility("default"))) const char *leap_g(void);
"""


def test_the_reader_reads_every_form_of_declaration():
    h = read_header(SAMPLE)
    assert h.enums == {"leap_color": ["LEAP_RED", "LEAP_GREEN", "LEAP_BLUE"]}
    assert h.kinds == {"leap_color": "enum", "leap_thing": "handle", "leap_opts": "struct", "leap_cb": "callback"}
    assert h.callbacks["leap_cb"] == Signature(CType("int32_t", "int"), (
        CType("char", "int", 1), CType("size_t", "int"), CType("void", "void", 1)))
    assert h.functions == {
        "leap_f": Signature(CType("leap_color", "enum"), (
            CType("leap_thing", "handle", 1), CType("leap_opts", "struct", 1), CType("char", "int", 2),
            CType("leap_cb", "callback"), CType("float", "float"))),
        "leap_g": Signature(CType("char", "int", 1), ()),
    }


@pytest.mark.parametrize("text", [
    "int leap_f(void);",  # no LEAP_API
    '__attribute__((visibility("default"))) void leap_f(int32_t a[4]);',  # an array parameter
    '__attribute__((visibility("default"))) void leap_f(const char *format, ...);',  # variadic
    '__attribute__((visibility("default"))) void leap_f(leap_unknown *u);',  # a type never declared
    '__attribute__((visibility("default"))) void leap_f(unsigned int n);',  # two-word base types
    '__attribute__((visibility("default"))) void leap_f(void (*cb)(void));',  # an inline function pointer
    '__attribute__((visibility("default"))) void leap_f(int32_t a)',  # no semicolon
    "typedef enum leap_e { LEAP_A = 0 LEAP_B } leap_e;",
    "typedef struct leap_a leap_b;",
    "extern int32_t leap_global;",
])
def test_the_reader_refuses_what_it_cannot_read(text):
    with pytest.raises(HeaderSyntaxError):
        read_header(text)


# ---- Constants ----------------------------------------------------------------------------------------


def test_constants_are_named_as_in_the_header(header, header_macros):
    constants = python_constants()
    assert constants, "leap._capi keeps no LEAP_* constant"
    enumerators = {n for names in header.enums.values() for n in names}
    for name, value in constants.items():
        assert type(value) is int, f"leap._capi.{name} = {value!r}: an int expected"
        assert name in enumerators or name in header_macros, \
            f"leap._capi.{name} is neither an enumerator nor a macro of include/leap.h"


def test_constants_have_the_headers_values(header, facts):
    values, _ = facts
    for name, value in python_constants().items():
        assert name in values, f"leap._capi.{name}: not in include/leap.h"
        assert value == values[name], f"leap._capi.{name} = {value}, include/leap.h says {values[name]}"


def test_a_mirrored_enum_is_mirrored_whole(header):
    constants = python_constants()
    mirrored = {e: names for e, names in header.enums.items() if any(n in constants for n in names)}
    assert mirrored, "leap._capi mirrors no enum of include/leap.h"
    for enum, names in mirrored.items():
        missing = [n for n in names if n not in constants]
        assert not missing, f"{enum}: enumerators of include/leap.h missing from leap._capi: {missing}"


def test_an_enum_parameter_is_a_mirrored_enum(header):
    # An enum the binding passes to or gets from the library is one whose values it has, by name.
    constants = python_constants()
    signatures = [header.functions[n] for n in declared_functions() if n in header.functions]
    signatures += [header.callbacks[n] for n in callback_types() if n in header.callbacks]
    used = {t.base for s in signatures for t in (s.result,) + s.params if t.kind == "enum"}
    for enum in sorted(used):
        assert all(n in constants for n in header.enums[enum]), f"{enum} is used by the binding, not mirrored"


# ---- Prototypes and callback types --------------------------------------------------------------------


def test_the_binding_declares_functions():
    functions = declared_functions()
    # Those declared in the module and the version check made while loading the library.
    assert {"leap_model_load", "leap_generation_next", "leap_version_number"} <= set(functions)


@pytest.mark.parametrize("name", sorted(declared_functions()))
def test_prototype_matches_the_header(name, header, facts):
    f = declared_functions()[name]
    assert_signature(name, f.restype, f.argtypes, header.functions.get(name), facts[1])


@pytest.mark.parametrize("name", sorted(callback_types()))
def test_callback_type_matches_the_typedef(name, header, facts):
    t = callback_types()[name]
    assert_signature(name, t._restype_, t._argtypes_, header.callbacks.get(name), facts[1])
