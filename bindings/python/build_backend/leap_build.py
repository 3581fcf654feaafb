"""PEP 517 build backend of the ``libleap`` distribution (standard library only).

A wheel is the ``leap`` package plus ``leap/libleap.so``, so it is platform-specific (tag
``py3-none-<platform>``: ctypes bindings work with any Python 3, the library with one OS and CPU kind).
The library comes from, in this order:

* ``LEAP_WHEEL_LIBRARY``: a ``libleap.so`` built beforehand (packagers, cross builds);
* the repository around this folder: ``scripts/build.sh --library`` (the release build; incremental, so
  quick when nothing changed) and its ``build/lib/libleap.so``.

Anything else (an unpacked sdist without the Swift sources, a missing toolchain) fails with a message
saying what to do, never with a wheel lacking its library.
"""
from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

_here = Path(__file__).resolve().parent.parent  # bindings/python
_repo = _here.parent.parent
_package = _here / "leap"

NAME = "libleap"
VERSION = "0.1.0"
SUMMARY = "Python bindings for libleap, an on-device LLM SDK (LEAP conversation API over GGUF models)"
# The one place the distribution's metadata is written down (pyproject.toml names this backend only).
REQUIRES_PYTHON = ">=3.9"
EXTRAS = {
    "test": ["pytest", "numpy"],
    # leap-server (leap.server): the ASGI stack, images in requests, remote media and its test client,
    # uploads (multipart), uvicorn's WebSocket support (/v1/realtime) and numpy (logits of text
    # completions, voice activity detection).
    "server": ["fastapi>=0.110", "uvicorn>=0.29", "pillow>=10", "httpx>=0.27", "python-multipart>=0.0.9",
               "websockets>=12", "numpy>=1.21"],
}
# Console scripts: name -> module:function.
CONSOLE_SCRIPTS = {"leap-server": "leap.server.cli:main"}


class BuildError(RuntimeError):
    pass


def _metadata() -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {VERSION}",
        f"Summary: {SUMMARY}",
        "License: Apache-2.0",
        f"Requires-Python: {REQUIRES_PYTHON}",
    ]
    for extra, reqs in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    readme = _here / "README.md"
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + (readme.read_text("utf-8") if readme.exists() else "")


def _platform_tag() -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _dist_info() -> str:
    return f"{NAME}-{VERSION}.dist-info"


def _wheel_name() -> str:
    return f"{NAME}-{VERSION}-py3-none-{_platform_tag()}.whl"


def _library() -> Path:
    given = os.environ.get("LEAP_WHEEL_LIBRARY")
    if given:
        path = Path(given)
        if not path.is_file():
            raise BuildError(f"LEAP_WHEEL_LIBRARY={given}: no such file")
        return path
    build = _repo / "scripts" / "build.sh"
    if not (build.is_file() and (_repo / "Package.swift").is_file()):
        raise BuildError(
            f"no libleap sources around {_here} (scripts/build.sh and Package.swift not found): build the "
            "wheel from a libleap repository checkout, or set LEAP_WHEEL_LIBRARY to a built libleap.so")
    print(f"building libleap: {build} --library (Swift release build; minutes on a fresh checkout)",
          file=sys.stderr, flush=True)
    try:
        # The build's output goes to stderr: pip shows it with -v and when the build fails.
        subprocess.run(["bash", str(build), "--library"], cwd=_repo, check=True, stdout=sys.stderr)
    except FileNotFoundError as e:
        raise BuildError(f"cannot run {build}: {e}") from e
    except subprocess.CalledProcessError as e:
        raise BuildError(
            f"{build} --library failed (exit {e.returncode}); it needs the Swift 6.3 toolchain on PATH "
            "(see the repository README)") from e
    built = _repo / "build" / "lib" / "libleap.so"
    if not built.is_file():
        raise BuildError(f"{build} finished but {built} is missing")
    return built


def _package_files() -> List[Path]:
    return sorted(p for p in _package.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith("libleap.so"))


class _WheelWriter:
    def __init__(self, path: Path) -> None:
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self._records: List[str] = []

    def add(self, arcname: str, data: bytes, mode: int = 0o644) -> None:
        info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self._records.append(f"{arcname},sha256={digest},{len(data)}")

    def close(self, dist_info: str) -> None:
        record = f"{dist_info}/RECORD"
        self._records.append(f"{record},,")
        self._zip.writestr(zipfile.ZipInfo(record, date_time=(1980, 1, 1, 0, 0, 0)),
                           "\n".join(self._records) + "\n")
        self._zip.close()


def _entry_points() -> str:
    return "[console_scripts]\n" + "".join(f"{name} = {target}\n" for name, target in CONSOLE_SCRIPTS.items())


def _write_dist_info(w: _WheelWriter, tag: str) -> None:
    d = _dist_info()
    w.add(f"{d}/METADATA", _metadata().encode())
    w.add(f"{d}/entry_points.txt", _entry_points().encode())
    w.add(f"{d}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: {NAME} build_backend\n"
                         f"Root-Is-Purelib: false\nTag: {tag}\n").encode())


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, str]] = None) -> str:
    d = Path(metadata_directory) / _dist_info()
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(_metadata(), "utf-8")
    (d / "entry_points.txt").write_text(_entry_points(), "utf-8")
    return d.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, str]] = None,
                metadata_directory: Optional[str] = None) -> str:
    library = _library()
    name = _wheel_name()
    w = _WheelWriter(Path(wheel_directory) / name)
    for p in _package_files():
        w.add("leap/" + p.relative_to(_package).as_posix(), p.read_bytes())
    w.add("leap/libleap.so", library.read_bytes(), 0o755)
    _write_dist_info(w, f"py3-none-{_platform_tag()}")
    w.close(_dist_info())
    return name


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, str]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """An editable install: a .pth file puts bindings/python on sys.path; the library is built and copied
    into leap/ (where the loader looks first) as for a wheel."""
    library = _library()
    target = _package / "libleap.so"
    if library.resolve() != target.resolve():
        tmp = target.with_name(f"libleap.so.tmp.{os.getpid()}")
        tmp.write_bytes(library.read_bytes())
        os.replace(tmp, target)
    name = _wheel_name()
    w = _WheelWriter(Path(wheel_directory) / name)
    w.add(f"__editable__.{NAME}.pth", (str(_here) + "\n").encode())
    _write_dist_info(w, f"py3-none-{_platform_tag()}")
    w.close(_dist_info())
    return name


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, str]] = None) -> str:
    """The Python sources only: building a wheel from it needs LEAP_WHEEL_LIBRARY (no Swift sources)."""
    base = f"{NAME}-{VERSION}"
    name = f"{base}.tar.gz"
    files = [_here / "pyproject.toml", _here / "README.md", Path(__file__)] + _package_files()
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as t:
        for p in files:
            data = p.read_bytes()
            info = tarfile.TarInfo(f"{base}/{p.relative_to(_here).as_posix()}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            t.addfile(info, io.BytesIO(data))
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size, info.mode, info.mtime = len(pkg_info), 0o644, 0
        t.addfile(info, io.BytesIO(pkg_info))
    return name
