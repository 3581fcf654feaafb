"""Server-sent events: ``data: <json>\\n\\n`` frames, the ``data: [DONE]`` terminator, and a streaming
response that notices a client leaving while it waits for the next event.

Starlette's StreamingResponse only learns of a disconnect when a write fails under ASGI 2.4 servers, and
leaves the body iterator unclosed; a generation waiting for its next token (a long prompt, a queue) would
then run on for nobody. :class:`EventStreamResponse` listens for ``http.disconnect`` during the whole
stream, cancels the iterator at once, and always runs ``on_close`` (which stops the generation).
"""
from __future__ import annotations

import json
from typing import Any, AsyncIterator, Callable, Mapping, Optional

import anyio
import anyio.lowlevel
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

DONE = b"data: [DONE]\n\n"

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def event(data: Any, name: Optional[str] = None) -> bytes:
    """One event: ``data`` as compact JSON (``event:`` line when named)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {text}\n\n".encode()


class EventStreamResponse(Response):
    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[bytes], on_close: Callable[[], None],
                 headers: Optional[Mapping[str, str]] = None, status_code: int = 200) -> None:
        self.events = events
        self.on_close = on_close
        self.status_code = status_code
        self.background = None
        self.init_headers({**HEADERS, **(headers or {})})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as tg:
                async def stream() -> None:
                    try:
                        await send({"type": "http.response.start", "status": self.status_code,
                                    "headers": self.raw_headers})
                        async for chunk in self.events:
                            await send({"type": "http.response.body", "body": chunk, "more_body": True})
                            # Events that were ready come out without a pause: yield to the loop after each
                            # so that a failed write's connection_lost (a client gone) is seen before the next
                            # write, and other requests are served between the events of a burst.
                            await anyio.lowlevel.checkpoint()
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                    except OSError:
                        pass  # the client left while we wrote (ASGI 2.4 servers raise on send)
                    tg.cancel_scope.cancel()

                async def watch() -> None:
                    while True:
                        message = await receive()
                        if message["type"] == "http.disconnect":
                            break
                    tg.cancel_scope.cancel()

                tg.start_soon(stream)
                tg.start_soon(watch)
        finally:
            self.on_close()
            aclose = getattr(self.events, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
