"""Embedding planner_mode: a bookshop's assistant over its own database, served by FastAPI with streaming.

Everything an application brings is here, in one file: its own tables (``libros``, ``ventas_libros``), two
operations declared with the registry's decorator, its own roles and users, the conversation memory in the
same database, any LangChain chat model, and an HTTP API whose ``POST /chat`` streams the turn as NDJSON.
``docs/design.md`` ("Embedding planner_mode") walks through it; ``tests/docs/test_embedding_example.py``
runs it.

Run it (needs the ``server`` extra; ``ollama`` for the default model below)::

    BOOKSHOP_MODEL=qwen2.5:7b python docs/examples/embed_planner.py
    curl -N localhost:8001/chat -H 'X-User: marta' -H 'Content-Type: application/json' \\
         -d '{"conversation_id": "c1", "message": "¿Cuántos ejemplares de Rayuela vendimos en 2025?"}'

The offline model of this repository only understands the demo's sales questions, so the server defaults to
a real model (Ollama); the tests drive the same app with a small scripted chat model.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from datetime import date
from typing import Annotated, cast

from fastapi import Depends, FastAPI, Header, HTTPException
from fastapi.responses import StreamingResponse
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field
from sqlalchemy import ForeignKey, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from planner_mode import PlannerAI, PlannerEngine
from shared.erp.database import open_erp
from shared.errors import ConversationAccessDenied, DomainError
from shared.events import TurnEvent
from shared.memory.store import MemoryStore
from shared.operations import OperationRegistry
from shared.security import Caller, OperationContext, RolePolicy

# -- 1. The application's own database -----------------------------------------------------------------------


class Base(DeclarativeBase):
    pass


class Libro(Base):
    __tablename__ = "libros"
    id: Mapped[int] = mapped_column(primary_key=True)
    titulo: Mapped[str] = mapped_column(unique=True)
    autor: Mapped[str]
    precio: Mapped[int]  # guaraníes
    stock: Mapped[int]


class VentaLibro(Base):
    __tablename__ = "ventas_libros"
    id: Mapped[int] = mapped_column(primary_key=True)
    libro_id: Mapped[int] = mapped_column(ForeignKey("libros.id"))
    fecha: Mapped[date]
    ejemplares: Mapped[int]


def create_bookshop(url: str) -> None:
    """Create the bookshop's tables and a few rows unless they exist (your application does this its way)."""
    engine = create_engine(url)
    try:
        Base.metadata.create_all(engine)
        with Session(engine) as session, session.begin():
            if session.scalar(select(func.count()).select_from(Libro)):
                return
            rayuela = Libro(titulo="Rayuela", autor="Julio Cortázar", precio=120_000, stock=4)
            hijo = Libro(titulo="Hijo de hombre", autor="Augusto Roa Bastos", precio=95_000, stock=11)
            session.add_all([rayuela, hijo])
            session.flush()
            session.add_all(
                [
                    VentaLibro(libro_id=rayuela.id, fecha=date(2025, 3, 14), ejemplares=3),
                    VentaLibro(libro_id=rayuela.id, fecha=date(2025, 9, 2), ejemplares=4),
                    VentaLibro(libro_id=hijo.id, fecha=date(2025, 5, 20), ejemplares=6),
                    VentaLibro(libro_id=rayuela.id, fecha=date(2024, 11, 8), ejemplares=2),
                ]
            )
    finally:
        engine.dispose()


# -- 2. Who may do what: roles → permissions, and the application's users ------------------------------------

POLICY = RolePolicy(
    roles={
        "encargado": frozenset({"catalogo:leer", "ventas:leer"}),
        "cajero": frozenset({"catalogo:leer"}),
    }
)
USERS = {
    "marta": Caller(user_id="marta", roles=frozenset({"encargado"}), name="Marta"),
    "tomas": Caller(user_id="tomas", roles=frozenset({"cajero"}), name="Tomás"),
}
"""Stands in for your authentication: map your session or token to a ``Caller``."""


# -- 3. Two operations, declared once: the model reads the docstrings and parameter descriptions -------------

registry = OperationRegistry(policy=POLICY)

Titulo = Annotated[str, Field(min_length=2, max_length=120, description="Título del libro, o parte de él.")]
Anio = Annotated[int, Field(ge=2000, le=2100, description="Año calendario de las ventas, por ejemplo 2025.")]


class Stock(BaseModel):
    titulo: str
    autor: str
    stock: int


class VentasLibro(BaseModel):
    titulo: str
    anio: int
    ejemplares: int
    total: int


def _libro(ctx: OperationContext, operation: str, titulo: str) -> Libro:
    """The one book whose title contains ``titulo``; a clear refusal (``DomainError``) otherwise."""
    session = cast(Session, ctx.backend)  # registry.execute opens one session per operation
    found = session.scalars(select(Libro).where(Libro.titulo.icontains(titulo)).limit(2)).all()
    if len(found) != 1:
        problem = "ningún libro" if not found else "varios libros"
        raise DomainError(operation, f"Hay {problem} con el título {titulo!r}.")
    return found[0]


@registry.operation(requires={"catalogo:leer"})
def stock_libro(ctx: OperationContext, titulo: Titulo) -> Stock:
    """Ejemplares de un libro que quedan en stock, y su autor."""
    libro = _libro(ctx, "stock_libro", titulo)
    return Stock(titulo=libro.titulo, autor=libro.autor, stock=libro.stock)


@registry.operation(requires={"ventas:leer"})
def ventas_libro(ctx: OperationContext, titulo: Titulo, anio: Anio) -> VentasLibro:
    """Ejemplares vendidos de un libro en un año y su importe en guaraníes."""
    libro = _libro(ctx, "ventas_libro", titulo)
    session = cast(Session, ctx.backend)
    sold = session.scalar(
        select(func.coalesce(func.sum(VentaLibro.ejemplares), 0)).where(
            VentaLibro.libro_id == libro.id,
            VentaLibro.fecha >= date(anio, 1, 1),
            VentaLibro.fecha < date(anio + 1, 1, 1),
        )
    )
    return VentasLibro(titulo=libro.titulo, anio=anio, ejemplares=sold or 0, total=(sold or 0) * libro.precio)


# -- 4. The engine and the HTTP API --------------------------------------------------------------------------


class ChatRequest(BaseModel):
    conversation_id: str
    message: str


def current_caller(x_user: Annotated[str, Header()]) -> Caller:
    """Your authentication goes here; the example trusts an ``X-User`` header."""
    caller = USERS.get(x_user)
    if caller is None:
        raise HTTPException(status_code=401, detail="Unknown user.")
    return caller


CurrentCaller = Annotated[Caller, Depends(current_caller)]
NOT_YOURS = "This conversation belongs to another user."


def create_app(db_url: str, model: BaseChatModel) -> FastAPI:
    """The bookshop's assistant over the database at ``db_url``, answering with ``model``."""
    create_bookshop(db_url)
    erp = open_erp(db_url)  # opens it as it is: no demo tables, today is the real date
    store = MemoryStore(erp.engine)  # conversations live next to the bookshop's tables
    engine = PlannerEngine(registry, erp, store, PlannerAI(model))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        erp.engine.dispose()

    app = FastAPI(title="Librería: asistente", lifespan=lifespan)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/chat", response_class=StreamingResponse)
    async def chat(body: ChatRequest, caller: CurrentCaller) -> StreamingResponse:
        """The turn as NDJSON, one ``shared.events`` event per line; the last line is ``{"type": "turn"}``."""
        # astream is an async generator (annotated as an AsyncIterator): say so, to be able to close it.
        events = cast(
            AsyncGenerator[TurnEvent, None], engine.astream(body.conversation_id, body.message, caller)
        )
        try:
            # The first event (the plan) comes once call 1 is done; another user's conversation is refused
            # before that, with no model call: answer 403 instead of a stream.
            first = await anext(events)
        except ConversationAccessDenied:
            raise HTTPException(status_code=403, detail=NOT_YOURS) from None
        return StreamingResponse(_ndjson(first, events), media_type="application/x-ndjson")

    @app.get("/conversations/{conversation_id}")
    def history(conversation_id: str, caller: CurrentCaller) -> list[dict[str, str]]:
        """The conversation's messages, for its owner only."""
        info = store.get_conversation(conversation_id)
        if info is None:
            raise HTTPException(status_code=404, detail="No such conversation.")
        if info.user_id != caller.user_id:
            raise HTTPException(status_code=403, detail=NOT_YOURS)
        return [{"role": m.role, "content": m.content} for m in store.history(conversation_id)]

    return app


async def _ndjson(first: TurnEvent, events: AsyncGenerator[TurnEvent, None]) -> AsyncIterator[str]:
    """The events as NDJSON lines; closing the response (a client that hangs up) closes the turn: nothing is
    recorded unless the turn reached its last event."""
    async with aclosing(events):
        yield first.model_dump_json() + "\n"
        async for event in events:
            yield event.model_dump_json() + "\n"


def main() -> None:
    import uvicorn

    from shared.llm import build_chat_model

    model = build_chat_model(
        os.environ.get("BOOKSHOP_PROVIDER", "ollama"), model=os.environ.get("BOOKSHOP_MODEL", "qwen2.5:7b")
    )
    app = create_app(os.environ.get("BOOKSHOP_DB_URL", "sqlite:///bookshop.sqlite3"), model)
    uvicorn.run(app, host="127.0.0.1", port=8001)


if __name__ == "__main__":
    main()
