"""The loaded model and the generations running on it.

One :class:`Engine` owns the ``leap.Model``. A generation is a *job*: a function run on its own worker
thread (ctypes releases the GIL while the library computes), which emits the library's events into a
:class:`JobHandle` read by the request's coroutine. The library steps the conversations of one model that
generate at the same time together (one pass over the weights per step for all of them), so ``parallel``
jobs at once cost little more than one; more wait in a bounded FIFO queue, and a request finding the queue
full is refused with 503 and ``Retry-After`` instead of piling up memory.

Stopping: :meth:`JobHandle.stop` (a client gone, a stop string matched) sets a flag and calls the stop
callbacks the job registered (``Conversation.stop``), so the generation ends after the token being
computed; the slot is given back only when the worker thread is done with the model.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Deque, Dict, List, Optional, Sequence, Tuple

import leap

from .errors import ApiError, clip, from_leap_error

log = logging.getLogger("leap.server")


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding of every generation the server runs (--spec-type, --spec-draft-n-max): who drafts
    (``GenerationOptions.drafter``: "none", "ngram", "draft_model") and the most tokens drafted per pass
    (None: the library's default). The output is what it would be without it; only its speed changes."""

    drafter: str = "none"
    max_draft_tokens: Optional[int] = None

    def apply(self, options: leap.GenerationOptions, request_max_draft_tokens: Optional[int] = None) -> None:
        """Speculate in ``options`` as the server does; ``request_max_draft_tokens``, a request's own limit
        (``speculative.n_max``; 0: no drafts for it), counts only when the server speculates."""
        if self.drafter == "none" or request_max_draft_tokens == 0:
            options.drafter, options.max_draft_tokens = "none", None
            return
        options.drafter = self.drafter
        options.max_draft_tokens = request_max_draft_tokens or self.max_draft_tokens

    def speculator(self, model: leap.Model, context_size: int,
                   request_max_draft_tokens: Optional[int] = None) -> Optional[leap.Speculator]:
        """The drafts of a low-level verification loop (/v1/completions) as ``apply`` sets a generation's,
        following sequences of at most ``context_size`` tokens; None when it does not speculate (a model
        that speaks never does, as its generations do not)."""
        if self.drafter == "none" or request_max_draft_tokens == 0 or model.supports_audio_output:
            return None
        return leap.Speculator(model, self.drafter, request_max_draft_tokens or self.max_draft_tokens,
                               context_size=context_size)

    def describe(self) -> Dict[str, Any]:
        """For /v1/models: on or off, who drafts, the most tokens a pass drafts (None: the library's default)."""
        spec_type = "draft" if self.drafter == "draft_model" else self.drafter
        return {"speculative": self.drafter != "none", "spec_type": spec_type,
                "spec_draft_n_max": self.max_draft_tokens if self.drafter != "none" else None}


@dataclass
class ModelSettings:
    """What to load and how (from the command line)."""

    model: Optional[str] = None
    bundle: Optional[str] = None
    mmproj: Optional[str] = None
    audio_decoder: Optional[str] = None
    audio_tokenizer: Optional[str] = None
    draft_model: Optional[str] = None  # loaded with the model (its vocabulary must be the model's)
    speculation: Speculation = field(default_factory=Speculation)
    alias: Optional[str] = None
    threads: Optional[int] = None
    ctx_size: Optional[int] = None
    cache_dir: Optional[str] = None
    parallel: int = 4
    queue: int = 64
    progress: bool = True


class _End:
    """The end of a job's events."""


_END = _End()


class JobControl:
    """The worker side of a job: emit events, learn that the reader wants it stopped."""

    def __init__(self, handle: "JobHandle") -> None:
        self._handle = handle

    @property
    def stopped(self) -> bool:
        return self._handle._stop.is_set()

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from any thread) when the job is asked to stop; at once if it already was."""
        self._handle._add_stop_callback(callback)

    def started(self) -> None:
        """The request is accepted (the generation began): from here on failures arrive as events."""
        self._handle._post(self._handle._set_started, None)

    def emit(self, event: Any) -> None:
        self._handle._post(self._handle._queue.put_nowait, event)


Job = Callable[[JobControl], None]


class JobHandle:
    """The request side of a running job: its events in order (:meth:`next`), :meth:`stop`."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._started: asyncio.Future[None] = loop.create_future()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stop_callbacks: List[Callable[[], None]] = []
        self.finished = threading.Event()

    # Worker thread side.
    def _post(self, fn: Callable[[Any], None], arg: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, arg)
        except RuntimeError:
            pass  # the event loop is closed (server shutting down): nobody reads any more

    def _set_started(self, _: Any) -> None:
        if not self._started.done():
            self._started.set_result(None)

    def _fail(self, error: BaseException) -> None:
        if not self._started.done():
            self._started.set_exception(error)
        else:
            self._queue.put_nowait(error)

    def _end(self, _: Any) -> None:
        if not self._started.done():
            self._started.set_result(None)
        self._queue.put_nowait(_END)

    def _add_stop_callback(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._stop_callbacks.append(callback)
            stopped = self._stop.is_set()
        if stopped:
            callback()

    # Event loop side.
    async def wait_started(self) -> None:
        await self._started

    def stop(self) -> None:
        """Ask the job to end after the current token (idempotent, any thread)."""
        with self._lock:
            if self._stop.is_set():
                return
            self._stop.set()
            callbacks = list(self._stop_callbacks)
        for cb in callbacks:
            try:
                cb()
            except Exception as e:  # a conversation already closed: nothing left to stop
                log.debug("stop callback: %s", e)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def next(self) -> Any:
        """The next event; None at the end. An error the job raised after it started is raised here."""
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)  # stay at the end for later calls
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    async def events(self) -> AsyncIterator[Any]:
        """The events in order; a library error after the start comes out as the client-facing ApiError."""
        while True:
            try:
                e = await self.next()
            except leap.LeapError as err:
                raise from_leap_error(err) from None
            if e is None:
                return
            yield e


async def merged_events(handles: Sequence[JobHandle]) -> AsyncIterator[Tuple[int, Any]]:
    """The events of several jobs (a request's choices) as they come, each with its job's index; the first
    error of any of them is raised."""
    if len(handles) == 1:
        async for e in handles[0].events():
            yield 0, e
        return
    queue: asyncio.Queue[Tuple[int, Any, Optional[Exception]]] = asyncio.Queue()

    async def pump(index: int, handle: JobHandle) -> None:
        try:
            async for e in handle.events():
                queue.put_nowait((index, e, None))
        except Exception as err:
            queue.put_nowait((index, None, err))
            return
        queue.put_nowait((index, _END, None))

    pumps = [asyncio.ensure_future(pump(i, h)) for i, h in enumerate(handles)]
    try:
        running = len(handles)
        while running:
            index, e, err = await queue.get()
            if err is not None:
                raise err
            if e is _END:
                running -= 1
            else:
                yield index, e
    finally:
        for p in pumps:
            p.cancel()


class Slots:
    """``parallel`` places for running jobs and a FIFO queue of at most ``queue`` waiting requests."""

    def __init__(self, parallel: int, queue: int) -> None:
        self.parallel = parallel
        self.queue_limit = queue
        self.active = 0
        self._waiters: Deque[asyncio.Future[None]] = collections.deque()

    @property
    def waiting(self) -> int:
        return sum(1 for f in self._waiters if not f.done())

    async def acquire(self) -> None:
        if self.active < self.parallel and not self.waiting:
            self.active += 1
            return
        if self.waiting >= self.queue_limit:
            raise ApiError(503, f"the server is busy: {self.active} generations running and {self.waiting} "
                                f"waiting (the queue holds {self.queue_limit}); retry later",
                           code="server_busy", type="server_error", headers={"Retry-After": "1"})
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                self.release()  # the place was handed over just as the request left: pass it on
            raise
        finally:
            try:
                self._waiters.remove(fut)
            except ValueError:
                pass

    def release(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)  # the place goes to the next waiter as it is
                return
        self.active -= 1


class Engine:
    """The model (loaded in the background: ``state`` is loading, ready or failed) and its job slots."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self.state = "loading"
        self.error: Optional[str] = None
        self.model: Optional[leap.Model] = None
        self.model_id = settings.alias or ""
        self.created = int(time.time())
        self.slots = Slots(max(1, settings.parallel), max(0, settings.queue))
        self._threads: List[threading.Thread] = []
        self._running: List[JobHandle] = []

    # ---- Loading ----------------------------------------------------------------------------------

    def load(self) -> None:
        """Load the model (blocking; run on a thread at startup). Failures leave state "failed"."""
        s = self.settings
        try:
            cache = leap.CacheOptions(path=s.cache_dir) if s.cache_dir else leap.CacheOptions(disk=False)
            if s.bundle:
                model = leap.load_bundle(s.bundle, progress=_progress_bar() if s.progress else None,
                                         cpu_threads=s.threads, context_size=s.ctx_size, cache=cache)
            else:
                assert s.model is not None
                model = leap.load_model(s.model, context_size=s.ctx_size, cpu_threads=s.threads,
                                        mmproj_path=s.mmproj, audio_decoder_path=s.audio_decoder,
                                        audio_tokenizer_path=s.audio_tokenizer, cache=cache,
                                        draft_model=s.draft_model)
            self.model = model
            self.model_id = s.alias or model.model_id or os.path.basename(s.model or s.bundle or "model")
            self.state = "ready"
            spec = s.speculation
            log.info("model %s ready (%s, context %d%s%s%s%s)", self.model_id, model.architecture, model.context_size,
                     ", images" if model.supports_images else "", ", audio in" if model.supports_audio_input else "",
                     ", audio out" if model.supports_audio_output else "",
                     "" if spec.drafter == "none" else f", speculative decoding: {spec.drafter}" +
                     (f" drafting at most {spec.max_draft_tokens} tokens a pass" if spec.max_draft_tokens else ""))
        except Exception as e:
            self.state = "failed"
            self.error = str(e)
            log.error("cannot load the model: %s", e)

    def close(self) -> None:
        """Stop taking jobs, wait for running ones, release the model (which flushes the prompt cache)."""
        if self.state != "failed":
            self.state = "closing"
        for h in list(self._running):
            h.stop()
        for t in list(self._threads):
            t.join(timeout=30)
        if self.model is not None:
            self.model.close()
            self.model = None

    def require_model(self) -> leap.Model:
        """The model, or 503 while it loads (or could not be loaded)."""
        if self.state == "ready" and self.model is not None:
            return self.model
        if self.state == "loading":
            raise ApiError(503, "the model is loading", code="model_loading", type="server_error",
                           headers={"Retry-After": "1"})
        raise ApiError(503, f"the model is not available: {self.error or self.state}", code="model_unavailable",
                       type="server_error")

    def model_names(self) -> List[str]:
        """Names a request's ``model`` may use: the alias or model id, and the model file's names."""
        names = [self.model_id]
        for p in (self.settings.model, self.settings.bundle):
            if p:
                base = os.path.basename(p.rstrip("/"))
                names += [base, os.path.splitext(base)[0]]
        if self.model is not None:
            names.append(self.model.model_id)
        return [n for i, n in enumerate(names) if n and n not in names[:i]]

    def check_model_name(self, name: Optional[str]) -> None:
        """404 model_not_found unless ``name`` is one of :meth:`model_names`; an omitted or empty name means
        the loaded model (one model per server)."""
        if name is None or name == "":
            return
        if name not in self.model_names():
            raise ApiError(404, f"The model `{clip(name)}` does not exist: this server serves `{self.model_id}`",
                           param="model", code="model_not_found")

    # ---- Jobs -------------------------------------------------------------------------------------

    async def start(self, job: Job) -> JobHandle:
        """Run ``job`` on a worker thread once a slot is free (503 when the queue is full); returns when the
        job called ``started`` (raising what it raised before that)."""
        self.require_model()
        await self.slots.acquire()
        loop = asyncio.get_running_loop()
        handle = JobHandle(loop)
        try:
            thread = threading.Thread(target=self._run, args=(job, handle, loop), name="leap-generation", daemon=True)
            self._threads.append(thread)
            self._running.append(handle)
            thread.start()
        except BaseException:
            self.slots.release()
            raise
        try:
            await handle.wait_started()
        except BaseException:
            handle.stop()
            raise
        return handle

    async def start_all(self, jobs: Sequence[Job]) -> List[JobHandle]:
        """:meth:`start` the jobs of one request (its ``n`` choices) together; if one cannot start, those
        that did are stopped and its error is raised."""
        results = await asyncio.gather(*(self.start(job) for job in jobs), return_exceptions=True)
        handles = [r for r in results if isinstance(r, JobHandle)]
        if len(handles) < len(results):
            for h in handles:
                h.stop()
            raise next(r for r in results if not isinstance(r, JobHandle))
        return handles

    def _run(self, job: Job, handle: JobHandle, loop: asyncio.AbstractEventLoop) -> None:
        try:
            job(JobControl(handle))
        except BaseException as e:  # delivered to the request (before or after it started)
            handle._post(handle._fail, e)
        finally:
            handle.finished.set()
            handle._post(handle._end, None)
            try:
                loop.call_soon_threadsafe(self._job_done, threading.current_thread(), handle)
            except RuntimeError:
                pass

    def _job_done(self, thread: threading.Thread, handle: JobHandle) -> None:
        if thread in self._threads:
            self._threads.remove(thread)
        if handle in self._running:
            self._running.remove(handle)
        self.slots.release()


def _progress_bar() -> Callable[[str, int, Optional[int]], Optional[bool]]:
    """A one-line download progress bar on stderr for ``leap.load_bundle``."""
    last = [0.0]

    def progress(name: str, done: int, total: Optional[int]) -> Optional[bool]:
        now = time.monotonic()
        finished = total is not None and done >= total
        if now - last[0] < 0.2 and not finished:
            return None
        last[0] = now
        if total:
            width = 30
            filled = int(width * done / total)
            line = f"\r{name}: [{'#' * filled}{'.' * (width - filled)}] {done / 1e6:.1f}/{total / 1e6:.1f} MB"
        else:
            line = f"\r{name}: {done / 1e6:.1f} MB"
        sys.stderr.write(line + ("\n" if finished else ""))
        sys.stderr.flush()
        return None

    return progress
