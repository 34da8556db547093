"""The web page's server: a Starlette app (run by uvicorn in `polyzero serve`).

JSON over HTTP for requests, one WebSocket per open game for live updates (each
move, each search's analysis). Every bad request gets a 4xx with a one-line JSON
body {"error": "..."}; a player's search runs in a worker thread, so the page keeps
answering while an agent thinks.
"""

from __future__ import annotations

import asyncio
import json
import math
from importlib import resources
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from .sessions import RequestError, RunIndex, SessionStore

__all__ = ["create_app"]

SUGGESTED_GAMES = [
    "connect_four",
    "tic_tac_toe",
    "go(board_size=9)",
    "hex(board_size=7)",
    "othello",
    "breakthrough(rows=6,columns=6)",
    "chess",
    "nannon",
    "backgammon",
    "kuhn_poker",
    "leduc_poker",
    "liars_dice",
    "dark_hex(board_size=3)",
]
SUGGESTED_PLAYERS = ["human", "random", "mcts:200", "mcts-solver:1000", "cfr:200", "ismcts:200"]
MAX_BODY = 16_384
MAX_POINTS = 2_000  # per curve sent to the page


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(message).split())}, status_code=status)


async def _body(request: Request) -> dict:
    """The JSON object a POST carries. Only `application/json`: a page of another site can
    send text or form bodies to this machine without asking, but not JSON (the browser
    asks first, and this server grants no other origin). Read up to MAX_BODY bytes only."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise RequestError("requests must carry Content-Type: application/json", 415)
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise RequestError(f"request body over {MAX_BODY} bytes", 413)
    try:
        body = json.loads(raw.decode("utf-8")) if raw else {}
    except (UnicodeDecodeError, ValueError):
        raise RequestError("the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    return body


def _static(name: str, media: str):
    text = resources.files("polyzero.web").joinpath("static", name).read_bytes()

    async def serve(request: Request) -> Response:
        return Response(text, media_type=media)

    return serve


def _series(records: list[dict]) -> dict:
    """{kind: {key: [[step, minutes, value], ...]}} of the finite numbers in metrics.jsonl."""
    out: dict = {}
    for r in records:
        kind = r.get("kind", "train")
        minutes = (r.get("time") or 0) / 60 if isinstance(r.get("time"), (int, float)) else None
        for key, value in r.items():
            if key in ("step", "time", "kind") or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if math.isfinite(value):
                out.setdefault(kind, {}).setdefault(key, []).append([r["step"], minutes, value])
    for curves in out.values():
        for key, points in curves.items():
            if len(points) > MAX_POINTS:
                stride = math.ceil(len(points) / MAX_POINTS)
                curves[key] = points[::stride] + ([points[-1]] if (len(points) - 1) % stride else [])
    return out


class _Server:
    """The app's handlers over the given runs and the games in progress."""

    def __init__(self, run_dirs):
        self.runs = RunIndex(run_dirs)
        self.store = SessionStore(self.runs)

    async def info(self, request: Request):
        from .. import __version__

        return JSONResponse(
            {
                "version": __version__,
                "games": SUGGESTED_GAMES,
                "players": SUGGESTED_PLAYERS + [f"run:{r}" for r in self.runs.runs],
                "runs": self.runs.describe(),
            }
        )

    async def new_session(self, request: Request):
        session = await asyncio.to_thread(self.store.create, await _body(request))  # a cfr: player solves first
        self._advance_soon(session)
        return JSONResponse(session.view(), status_code=201)

    async def get_session(self, request: Request):
        return JSONResponse(self.store.get(request.path_params["sid"]).view())

    async def move(self, request: Request):
        session = self.store.get(request.path_params["sid"])
        body = await _body(request)
        if "action" not in body:
            raise RequestError("the body must hold 'action', one of the legal action ids")
        session.human_move(body["action"])
        _notify(session)
        self._advance_soon(session)
        return JSONResponse(session.view())

    async def undo(self, request: Request):
        session = self.store.get(request.path_params["sid"])
        session.undo()
        _notify(session)
        return JSONResponse(session.view())

    async def analyse(self, request: Request):
        """A learned player's search of the current position, for the person to move."""
        session = self.store.get(request.path_params["sid"])
        body = await _body(request)
        analysis = await asyncio.to_thread(session.analyse_position, body.get("player"), self.runs)
        return JSONResponse(analysis)

    async def run_metrics(self, request: Request):
        from ..errors import UsageError
        from ..eval.plot import read_metrics

        path = self.runs.path(request.path_params["name"])
        try:
            records = await asyncio.to_thread(read_metrics, path)
        except UsageError as exc:
            raise RequestError(str(exc).replace(str(path), request.path_params["name"]), 404) from None
        return JSONResponse({"run": request.path_params["name"], "series": _series(records)})

    async def run_ladder(self, request: Request):
        path: Path = self.runs.path(request.path_params["name"]) / "ladder.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            raise RequestError(
                f"run '{request.path_params['name']}' has no readable ladder.json (polyzero ladder makes one)", 404
            ) from None
        return JSONResponse(
            {"run": request.path_params["name"], "summary": data.get("summary"), "points": data.get("points", [])}
        )

    def _advance_soon(self, session) -> None:
        if session.agent_to_move() and not session.advancing:
            session.advancing = True
            session.task = asyncio.get_running_loop().create_task(self._advance(session))

    async def _advance(self, session) -> None:
        """Players' moves until a human is to move or the game ends; a watched game
        (no human) paces itself so a person can follow it."""
        try:
            while session.agent_to_move() and self.store.sessions.get(session.id) is session:
                session.thinking = True
                _notify(session)
                await asyncio.to_thread(session.agent_step)
                _notify(session)
                if not session.humans:
                    await asyncio.sleep(session.delay)
        finally:
            session.advancing = False

    async def websocket(self, ws: WebSocket):
        try:
            session = self.store.get(ws.path_params["sid"])
        except RequestError:
            await ws.close(code=4404)
            return
        await ws.accept()
        queue: asyncio.Queue = asyncio.Queue()
        session.listeners.add(queue)
        receiver = asyncio.ensure_future(ws.receive())
        try:
            await ws.send_json(session.view())
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, receiver}, return_when=asyncio.FIRST_COMPLETED)
                if receiver in done:
                    getter.cancel()
                    if receiver.result().get("type") == "websocket.disconnect":
                        return
                    receiver = asyncio.ensure_future(ws.receive())  # the page sends nothing; ignore it
                    continue
                while not queue.empty():  # only the newest view matters
                    queue.get_nowait()
                await ws.send_json(session.view())
        except (WebSocketDisconnect, RuntimeError):
            return
        finally:
            receiver.cancel()
            session.listeners.discard(queue)


def _notify(session) -> None:
    for queue in list(session.listeners):
        queue.put_nowait(session.version)


async def _on_request_error(request, exc: RequestError):
    return _error(str(exc), exc.status)


async def _on_http_error(request, exc: HTTPException):
    return _error(exc.detail, exc.status_code)


async def _on_any_error(request, exc: Exception):  # a bug: still one line, and the server serves on
    return _error(f"internal error: {type(exc).__name__}", 500)


def create_app(run_dirs=()) -> Starlette:
    """The app serving the page, the games and the given run directories (only those)."""
    server = _Server(run_dirs)
    routes = [
        Route("/", _static("index.html", "text/html; charset=utf-8")),
        Route("/app.js", _static("app.js", "text/javascript; charset=utf-8")),
        Route("/style.css", _static("style.css", "text/css; charset=utf-8")),
        Route("/api/info", server.info),
        Route("/api/sessions", server.new_session, methods=["POST"]),
        Route("/api/sessions/{sid}", server.get_session),
        Route("/api/sessions/{sid}/move", server.move, methods=["POST"]),
        Route("/api/sessions/{sid}/undo", server.undo, methods=["POST"]),
        Route("/api/sessions/{sid}/analyse", server.analyse, methods=["POST"]),
        Route("/api/runs/{name}/metrics", server.run_metrics),
        Route("/api/runs/{name}/ladder", server.run_ladder),
        WebSocketRoute("/ws/sessions/{sid}", server.websocket),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={RequestError: _on_request_error, HTTPException: _on_http_error, Exception: _on_any_error},
    )
