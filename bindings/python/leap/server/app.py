"""The FastAPI application: middleware (request log line, API key, body limit), health, models, chat and
text completions. Endpoints of other kinds (audio, realtime, a page) are added as routers by
:func:`create_app`'s ``routers`` or ``include_router`` on the returned app; they reach the model through
``app.state.server`` (:class:`ServerState`).
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass, field, replace
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Sequence, TypeVar

from fastapi import APIRouter, FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import leap

from . import completions
from .chat import ChatRequest, ModelCaps, chat_job, model_caps, parse_chat_request, remote_urls
from .chat_audio import SpokenTurn
from .engine import Engine, Job, JobHandle, merged_events
from .errors import ApiError, ClientGone, install_error_handlers
from .media import MediaLimits, fetch_remote
from .schemas import Fields, parse_json_body
from .sse import DONE, EventStreamResponse, event
from .turn import ChatTurn, timings_of, usage_of

log = logging.getLogger("leap.server")
T = TypeVar("T")

#: Paths answered without the API key (load balancers and supervisors probe them; the chat page holds no
#: data and asks for the key itself).
PUBLIC_PATHS = {"/health", "/v1/health", "/"}


@dataclass
class ServerSettings:
    api_key: Optional[str] = None
    max_body: int = 32 << 20
    media: MediaLimits = field(default_factory=MediaLimits)
    max_tokens: int = 0  # per request; 0: the context size
    cors_origins: List[str] = field(default_factory=list)  # browsers' origins allowed to call the API ("*": any)


class ServerState:
    """What routes share: the engine and the settings (``request.app.state.server``)."""

    def __init__(self, engine: Engine, settings: ServerSettings) -> None:
        self.engine = engine
        self.settings = settings
        self._caps: Optional[ModelCaps] = None

    def model(self) -> leap.Model:
        return self.engine.require_model()

    def chat_job(self, req: ChatRequest) -> Job:
        """The job answering ``req`` on the model, with the server's speculative decoding (every route that
        generates a chat turn starts its job here)."""
        return chat_job(self.model(), req, self.engine.settings.speculation)

    @property
    def caps(self) -> ModelCaps:
        if self._caps is None:
            self._caps = model_caps(self.engine.model_id, self.model())
        return self._caps

    @property
    def max_tokens(self) -> int:
        return self.settings.max_tokens or self.model().context_size

    @property
    def default_max_tokens(self) -> Optional[int]:
        """The limit of a request that names none: --max-tokens, else none (to the end of the context)."""
        return self.settings.max_tokens or None


def server_state(request: Request) -> ServerState:
    state = request.app.state.server
    assert isinstance(state, ServerState)
    return state


def record_usage(request: Request, *stats: Optional[leap.GenerationStats]) -> None:
    """Token counts for the request's log line (of all its choices: see ``usage_of``)."""
    if any(s is not None for s in stats):
        u = usage_of(*stats)
        request.scope.setdefault("state", {})["leap_usage"] = (
            u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"], u["completion_tokens"])


# ---- Middleware ------------------------------------------------------------------------------------


class RequestLog:
    """One line per request: method, path, status, duration, tokens (prompt / cached / completion)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.monotonic()
        status = [0]
        scope.setdefault("state", {})

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            usage = scope["state"].get("leap_usage")
            tokens = f" tokens prompt={usage[0]} cached={usage[1]} completion={usage[2]}" if usage else ""
            log.info("%s %s %d %.3fs%s", scope["method"], scope["path"], status[0] or 499,
                     time.monotonic() - start, tokens)


class ApiKeyCheck:
    """401 unless ``Authorization: Bearer <key>`` (or ``api-key`` / ``x-api-key``) carries the key; compared
    in constant time."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.key = api_key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"] not in PUBLIC_PATHS:
            headers = dict(scope.get("headers") or [])
            given = b""
            auth = headers.get(b"authorization", b"")
            if auth[:7].lower() == b"bearer ":
                given = auth[7:].strip()
            else:
                given = headers.get(b"x-api-key") or headers.get(b"api-key") or b""
            if not hmac.compare_digest(given, self.key):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                err = ApiError(401, "Incorrect API key provided" if given else "an API key is required "
                               "(Authorization: Bearer <key>)", code="invalid_api_key")
                await err.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BodyLimit:
    """413 for a body over ``limit`` bytes: at once from Content-Length, else as soon as the bytes read pass
    it (the rest is never read)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def error(self) -> ApiError:
        return ApiError(413, f"the request body is larger than the server's limit of {self.limit} bytes",
                        code="request_too_large")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers") or []:
            if name == b"content-length":
                try:
                    too_large = int(value) > self.limit
                except ValueError:
                    too_large = False
                if too_large:
                    await self.error().response()(scope, receive, send)
                    return
        seen = [0]

        async def counted() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                seen[0] += len(message.get("body", b""))
                if seen[0] > self.limit:
                    raise self.error()
            return message

        await self.app(scope, counted, send)


# ---- Helpers -------------------------------------------------------------------------------------


async def until_disconnected(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def unless_disconnected(request: Request, work: Awaitable[T]) -> T:
    """``await work``, cancelled (ClientGone) if the client disconnects first."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(until_disconnected(request))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        watcher.cancel()
        raise
    if task in done:
        watcher.cancel()
        return task.result()
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    raise ClientGone()


async def read_json(request: Request) -> Dict[str, Any]:
    return parse_json_body(await request.body())


def check_model(state: ServerState, body: Dict[str, Any]) -> None:
    state.model()  # 503 while loading
    state.engine.check_model_name(Fields(body).string("model"))


def completion_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


# ---- Routes --------------------------------------------------------------------------------------

router = APIRouter()


@router.get("/health")
@router.get("/v1/health")
async def health(request: Request) -> JSONResponse:
    engine = server_state(request).engine
    if engine.state == "ready":
        return JSONResponse({"status": "ok", "slots_idle": engine.slots.parallel - engine.slots.active,
                             "slots_processing": engine.slots.active, "queued": engine.slots.waiting})
    if engine.state == "loading":
        return ApiError(503, "Loading model", code="model_loading", type="unavailable_error",
                        headers={"Retry-After": "1"}).response()
    return ApiError(503, f"the model is not available: {engine.error or engine.state}", code="model_unavailable",
                    type="unavailable_error").response()


def _model_entry(state: ServerState) -> Dict[str, Any]:
    engine = state.engine
    entry: Dict[str, Any] = {"id": engine.model_id or (engine.model_names() or ["model"])[0], "object": "model",
                             "created": engine.created, "owned_by": "libleap"}
    if engine.model is not None:
        m = engine.model
        entry["meta"] = {"architecture": m.architecture, "n_ctx": m.context_size, "vocab_size": m.vocab_size,
                         "images": m.supports_images, "audio_input": m.supports_audio_input,
                         "audio_output": m.supports_audio_output,
                         **engine.settings.speculation.describe()}
    return entry


@router.get("/v1/models")
async def list_models(request: Request) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [_model_entry(server_state(request))]})


@router.get("/v1/models/{model_name:path}")
async def get_model(request: Request, model_name: str) -> JSONResponse:
    state = server_state(request)
    if model_name not in state.engine.model_names():
        state.engine.check_model_name(model_name)
    return JSONResponse(_model_entry(state))


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    state = server_state(request)
    body = await read_json(request)
    check_model(state, body)
    limits = state.settings.media
    fetched = {}
    if limits.allow_remote:
        for i, url in enumerate(remote_urls(body)):
            fetched[url] = await fetch_remote(url, limits, "messages")
    req = await asyncio.to_thread(parse_chat_request, body, state.caps, limits, state.max_tokens, fetched,
                                  state.default_max_tokens)
    choices = [replace(req, sampling=req.sampling.for_choice(i)) for i in range(req.sampling.n)]
    handles = await unless_disconnected(request, state.engine.start_all([state.chat_job(c) for c in choices]))
    turns = [_chat_turn(c, h) for c, h in zip(choices, handles)]

    def stop_all() -> None:
        for h in handles:
            h.stop()

    rid, created, name = completion_id("chatcmpl"), int(time.time()), state.engine.model_id
    if req.stream:
        return EventStreamResponse(_stream_chat(request, handles, turns, req, rid, created, name), on_close=stop_all)
    try:
        await unless_disconnected(request, asyncio.gather(*(t.consume(h.events()) for t, h in zip(turns, handles))))
    finally:
        stop_all()
    stats = [t.stats for t in turns]
    record_usage(request, *stats)
    result: Dict[str, Any] = {
        "id": rid, "object": "chat.completion", "created": created, "model": name,
        "choices": [{"index": i, "message": t.message(), "logprobs": t.message_logprobs(),
                     "finish_reason": t.finish_reason} for i, t in enumerate(turns)],
        "usage": usage_of(*stats),
    }
    timings = timings_of(turns[0].stats)
    if timings is not None:
        result["timings"] = timings
    return JSONResponse(result)


def _chat_turn(req: ChatRequest, handle: JobHandle) -> ChatTurn:
    forced = req.tool_mode == "forced"
    turn = ChatTurn(req.sampling.stop, forced, handle.stop) if req.audio_output is None else \
        SpokenTurn(req.sampling.stop, forced, handle.stop, req.audio_output, req.stream)
    turn.logprobs = req.logprobs.enabled
    return turn


async def _stream_chat(request: Request, handles: List[JobHandle], turns: List[ChatTurn], req: ChatRequest,
                       rid: str, created: int, name: str) -> AsyncIterator[bytes]:
    """The chunks of the choices as their tokens come (each chunk carries its choice's index)."""
    def chunk(index: int, delta: Dict[str, Any], finish: Optional[str] = None) -> bytes:
        turn = turns[index]
        c: Dict[str, Any] = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": name,
                             "choices": [{"index": index, "delta": delta,
                                          "logprobs": turn.take_logprobs() if "content" in delta else None,
                                          "finish_reason": finish}]}
        if req.include_usage:
            c["usage"] = None
        return event(c)

    for i in range(len(turns)):
        yield chunk(i, {"role": "assistant", "content": ""})
    finished = set()
    try:
        async for i, e in merged_events(handles):
            for delta in turns[i].feed(e):
                yield chunk(i, delta)
            if isinstance(e, leap.Complete):
                finished.add(i)
                yield _final_chunk(turns[i], i, req, rid, created, name)
    except ApiError as err:
        yield event(err.body())
        yield DONE
        return
    for i in range(len(turns)):
        if i not in finished:  # a generation closed before its end (stopped): its choice still ends
            yield _final_chunk(turns[i], i, req, rid, created, name)
    stats = [t.stats for t in turns]
    record_usage(request, *stats)
    if req.include_usage:
        yield event({"id": rid, "object": "chat.completion.chunk", "created": created, "model": name,
                     "choices": [], "usage": usage_of(*stats)})
    yield DONE


def _final_chunk(turn: ChatTurn, index: int, req: ChatRequest, rid: str, created: int, name: str) -> bytes:
    final: Dict[str, Any] = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": name,
                             "choices": [{"index": index, "delta": {}, "logprobs": None,
                                          "finish_reason": turn.finish_reason}]}
    timings = timings_of(turn.stats)
    if timings is not None:
        final["timings"] = timings
    if req.include_usage:
        final["usage"] = None
    return event(final)


@router.post("/v1/completions")
async def text_completions(request: Request) -> Response:
    state = server_state(request)
    body = await read_json(request)
    check_model(state, body)
    model = state.model()
    req = completions.parse_completion_request(body, state.max_tokens)
    jobs = [completions.completion_job(model, replace(req, sampling=req.sampling.for_choice(i)),
                                       state.engine.settings.speculation)
            for i in range(req.sampling.n)]
    handles = await unless_disconnected(request, state.engine.start_all(jobs))

    def stop_all() -> None:
        for h in handles:
            h.stop()

    rid, created, name = completion_id("cmpl"), int(time.time()), state.engine.model_id
    if req.stream:
        return EventStreamResponse(completions.stream_events(request, handles, req, rid, created, name),
                                   on_close=stop_all)
    try:
        result = await unless_disconnected(request, completions.collect(handles, req, rid, created, name))
    finally:
        stop_all()
    u = result["usage"]
    request.scope.setdefault("state", {})["leap_usage"] = (u["prompt_tokens"], 0, u["completion_tokens"])
    return JSONResponse(result)


# ---- The application -----------------------------------------------------------------------------


def create_app(engine: Engine, settings: Optional[ServerSettings] = None, load: bool = True,
               routers: Sequence[APIRouter] = (), on_load_failed: Optional[Callable[[], None]] = None) -> FastAPI:
    """The ASGI app serving ``engine``'s model. With ``load``, the model loads on a thread at startup (the
    server answers /health with 503 until it is ready; ``on_load_failed`` is called if it cannot be
    loaded); the model is released at shutdown."""
    settings = settings or ServerSettings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loading = asyncio.ensure_future(asyncio.to_thread(engine.load)) if load else None
        if loading is not None and on_load_failed is not None:
            loading.add_done_callback(lambda _: on_load_failed() if engine.state == "failed" else None)
        try:
            yield
        finally:
            if loading is not None:
                with contextlib.suppress(BaseException):
                    await loading
            await asyncio.to_thread(engine.close)

    app = FastAPI(title="leap-server", version=leap.__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.server = ServerState(engine, settings)
    install_error_handlers(app)
    app.include_router(router)
    from . import audio_speech, page, realtime, transcriptions

    for r in (audio_speech.router, transcriptions.router, realtime.router, page.router, *routers):
        app.include_router(r)
    # Added innermost first: the log line sees every answer, CORS preflights are answered without the key,
    # the key is checked before the body is read.
    app.add_middleware(BodyLimit, limit=settings.max_body)
    if settings.api_key:
        app.add_middleware(ApiKeyCheck, api_key=settings.api_key)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"],
                           allow_headers=["*"])
    app.add_middleware(RequestLog)
    return app
