"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``, with the HTTP status.

Every failure a client can cause is an :class:`ApiError` raised anywhere under a route; the handlers
installed by :func:`install_error_handlers` turn it, FastAPI's validation errors (never 422 here), unknown
routes and unexpected exceptions into that shape.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

import leap

log = logging.getLogger("leap.server")

# OpenAI's error types by status (what its API and SDK use).
_TYPE_BY_STATUS = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
                   405: "invalid_request_error", 413: "invalid_request_error", 429: "rate_limit_error",
                   500: "server_error", 503: "server_error"}


class ApiError(Exception):
    """A failure to report to the client with ``status`` and OpenAI's error body."""

    def __init__(self, status: int, message: str, *, param: Optional[str] = None, code: Optional[str] = None,
                 type: Optional[str] = None, headers: Optional[Mapping[str, str]] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type or _TYPE_BY_STATUS.get(status, "invalid_request_error" if status < 500 else "server_error")
        self.headers = dict(headers or {})

    def body(self) -> Dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


#: The most characters of a client's value an error message repeats.
QUOTE_LIMIT = 100
#: The most characters of the library's own error message passed on (it may quote what it was given).
LIBRARY_MESSAGE_LIMIT = 1000


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` as an error message repeats it: whole when short, else its first ``limit`` characters, an
    ellipsis and its full length (a hostile value is never echoed whole)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def quote(value: Any) -> str:
    """A client's value quoted in an error message (a string's ``repr``, any other value's), bounded by
    :func:`clip`."""
    if isinstance(value, str):
        return repr(value) if len(value) <= QUOTE_LIMIT else f"{value[:QUOTE_LIMIT]!r}... ({len(value)} characters)"
    return clip(repr(value))


def bad_request(message: str, param: Optional[str] = None, code: Optional[str] = "invalid_value") -> ApiError:
    return ApiError(400, message, param=param, code=code)


class ClientGone(Exception):
    """The client closed the connection before the answer was ready (answered 499, which nobody reads, for
    the log line)."""


def from_leap_error(e: leap.LeapError, param: Optional[str] = None, at_start: bool = False) -> ApiError:
    """The client-facing error for a library failure (its message says what was wrong). ``at_start``: the
    library refused to begin the request's generation (its history, tools or options), a 400."""
    message = clip(str(e), LIBRARY_MESSAGE_LIMIT)
    if isinstance(e, leap.PromptExceedsContextError):
        return ApiError(400, message, param="messages" if param is None else param, code="context_length_exceeded")
    if isinstance(e, (leap.InvalidArgumentError, leap.SerializationError, leap.FormatError, leap.AudioFormatError,
                      leap.UnsupportedError, leap.FunctionCallParsingError)):
        return ApiError(400, message, param=param, code="invalid_value")
    if at_start and isinstance(e, leap.GenerationError):
        return ApiError(400, message, param=param, code="invalid_value")
    if isinstance(e, leap.LeapMemoryError):
        return ApiError(503, f"out of memory: {message}", code="out_of_memory", headers={"Retry-After": "5"})
    log.error("library error: %s", message)
    return ApiError(500, f"generation failed: {message}", code=None)


def install_error_handlers(app: FastAPI) -> None:
    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return exc.response()

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        loc = [str(p) for p in first.get("loc", ()) if p != "body"]
        return ApiError(400, str(first.get("msg", "invalid request")), param=".".join(loc) or None).response()

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404:
            return ApiError(404, f"no route {request.method} {clip(request.url.path)}", code="not_found").response()
        if exc.status_code == 405:
            return ApiError(405, f"{request.method} is not allowed on {clip(request.url.path)}",
                            code="method_not_allowed", headers=exc.headers).response()
        return ApiError(exc.status_code, str(exc.detail), headers=exc.headers).response()

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return ApiError(500, "internal server error", code=None).response()

    async def on_client_gone(request: Request, exc: Exception) -> Response:
        return Response(status_code=499)

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(ClientGone, on_client_gone)
    # A client that leaves before it sent the whole body (request.body() or form() raise this).
    app.add_exception_handler(ClientDisconnect, on_client_gone)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
