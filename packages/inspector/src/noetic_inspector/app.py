"""The inspector's web app (Starlette): pages, a JSON API over the store, assets and Live (IN-2).

Pages are static HTML shells from the package's `assets/`; the page's script fetches JSON
from `/api/...` and builds the DOM with `textContent` and `createElement` (never `innerHTML`),
so model, tool and user text is always shown as text. The server never interpolates data into
HTML. Defences on top of that: a Content-Security-Policy that allows only the package's own
scripts and styles (no inline script runs even if markup got in), `nosniff`, a Host check
(`127.0.0.1` / `localhost` only, against DNS rebinding), assets served only from the fixed list
of files shipped in `assets/` (a name is looked up, never joined into a path), and a store that
refuses writes (`ReadOnlyStore`). `/api/live` takes pushed events only as `application/json`
(a cross-site form cannot send that without a CORS preflight, which is never granted) and at
most `MAX_PUSH` bytes per request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from importlib import resources
from typing import Any

from noetic.errors import NoeticError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from noetic_inspector.live import LiveRelay
from noetic_inspector.reading import ReadOnlyStore, list_executions, load_execution

__all__ = ["MAX_PUSH", "create_app"]

#: The largest body `/api/live` accepts (bytes).
MAX_PUSH = 4 * 1024 * 1024
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _shipped_assets() -> dict[str, tuple[bytes, str]]:
    """Every file shipped in `assets/`, read once: name -> (bytes, content type)."""
    found: dict[str, tuple[bytes, str]] = {}
    for entry in resources.files("noetic_inspector").joinpath("assets").iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if entry.is_file() and suffix in _TYPES:
            found[entry.name] = (entry.read_bytes(), _TYPES[suffix])
    return found


class _SecurityHeaders:
    """Adds `_HEADERS` to every response."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend((k.lower().encode(), v.encode()) for k, v in _HEADERS.items())
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message[:1000]}}, status_code=status)


def create_app(store: ReadOnlyStore | None, *, workflow: dict[str, Any] | None = None) -> Starlette:
    """The inspector app over `store` (None: Live and the workflow only), showing `workflow`
    (a `workflow_graph`) on `/workflow`."""
    assets = _shipped_assets()
    relay = LiveRelay()

    def page(name: str) -> Callable[[Request], Awaitable[Response]]:
        async def serve(request: Request) -> Response:
            body, media = assets[name]
            return Response(body, media_type=media)

        return serve

    async def asset(request: Request) -> Response:
        found = assets.get(request.path_params["name"])
        if found is None:
            return _error(404, "NOT_FOUND", "no such asset")
        return Response(found[0], media_type=found[1])

    async def executions(request: Request) -> Response:
        if store is None:
            return JSONResponse({"executions": []})
        try:
            rows = await list_executions(store)
        except NoeticError as exc:
            return _error(500, exc.code, exc.message)
        return JSONResponse({"executions": [asdict(row) for row in rows]})

    async def execution(request: Request) -> Response:
        if store is None:
            return _error(404, "UNKNOWN_EXECUTION", "no store is open")
        try:
            detail = await load_execution(store, request.path_params["execution_id"])
        except NoeticError as exc:
            return _error(500, exc.code, exc.message)
        if detail is None:
            return _error(404, "UNKNOWN_EXECUTION", "the store holds no such execution")
        return JSONResponse({**asdict(detail), "has_workflow": workflow is not None})

    async def workflow_api(request: Request) -> Response:
        if workflow is None:
            return _error(404, "NO_WORKFLOW", "start the inspector with --workflow DOC to draw one")
        return JSONResponse(workflow)

    async def push(request: Request) -> Response:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _error(415, "UNSUPPORTED_MEDIA_TYPE", "events are pushed as application/json")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_PUSH:
                return _error(413, "TOO_LARGE", f"a push is at most {MAX_PUSH} bytes")
        try:
            events = json.loads(body)
        except (ValueError, RecursionError):
            return _error(400, "BAD_JSON", "a push is a JSON array of events")
        if not isinstance(events, list):
            return _error(400, "BAD_JSON", "a push is a JSON array of events")
        relay.publish(events)
        return JSONResponse({"accepted": len(events)})

    async def live_events(request: Request) -> Response:
        return StreamingResponse(relay.subscribe(), media_type="text/event-stream")

    routes = [
        Route("/", page("index.html")),
        Route("/executions/{execution_id:path}", page("execution.html")),
        Route("/workflow", page("workflow.html")),
        Route("/live", page("live.html")),
        Route("/assets/{name}", asset),
        Route("/api/executions", executions),
        Route("/api/executions/{execution_id:path}", execution),
        Route("/api/workflow", workflow_api),
        Route("/api/live", push, methods=["POST"]),
        Route("/api/live/events", live_events),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]"]),
        ],
    )
    app.state.relay = relay
    return app
