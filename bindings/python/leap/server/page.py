"""The chat page at ``/``: one static HTML file (static/index.html, inline script and style, no build
step) that talks to this server's own endpoints: streamed chat, images as data URLs, the microphone as a
WAV for models that hear, and speech played as it streams for models that speak."""
from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter()


@router.get("/", include_in_schema=False)
async def chat_page() -> HTMLResponse:
    html = resources.files(__package__).joinpath("static", "index.html").read_text("utf-8")
    return HTMLResponse(html, headers={"Cache-Control": "no-cache"})
