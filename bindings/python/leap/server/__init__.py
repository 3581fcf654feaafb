"""``leap-server``: an OpenAI-compatible HTTP server over the Python bindings (FastAPI + uvicorn).

``python -m leap.server --model model.gguf`` or the ``leap-server`` console script (``pip install
"libleap[server]"``); :func:`leap.server.app.create_app` builds the ASGI app for embedding.
"""
from __future__ import annotations

__all__ = ["main"]


def main(argv: "list[str] | None" = None) -> int:
    from .cli import main as _main

    return _main(argv)
