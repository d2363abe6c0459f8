"""Specification of ``shared/memory/store.py``: the ERP-owned conversation memory."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, func, insert, inspect, select
from sqlalchemy.exc import IntegrityError

from shared.answer import MemoryItem
from shared.errors import ConversationAccessDenied, InputError, StorageError
from shared.memory import writing
from shared.memory.context import Exchange, render_context
from shared.memory.store import MemoryStore, MessageIn, TurnRecord, check_conversation_id, open_memory_store
from shared.memory.tables import Conversation, ConversationState, MemoryRecord, Message
from tests.shared.memory.conftest import statements_run, turn

TODAY = date(2026, 11, 30)


def count_rows(engine: Engine, table: type[Any]) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(select(func.count()).select_from(table)) or 0)


def all_counts(engine: Engine) -> dict[str, int]:
    tables = (Conversation, ConversationState, Message, MemoryRecord)
    return {table.__tablename__: count_rows(engine, table) for table in tables}


# -- conversations -------------------------------------------------------------------------------------------


def test_create_conversation_returns_a_new_uuid4_hex_and_remembers_the_user(
    memory_store: MemoryStore,
) -> None:
    first = memory_store.create_conversation(user_id="ana")
    second = memory_store.create_conversation()

    assert first != second
    assert len(first) == 32 and int(first, 16) >= 0
    info = memory_store.get_conversation(first)
    assert info is not None
    assert (info.id, info.user_id) == (first, "ana")
    assert info.created_at.tzinfo is not None
    assert abs((datetime.now(UTC) - info.created_at).total_seconds()) < 3600
    assert memory_store.create_conversation(conversation_id="demo-1") == "demo-1"
    with pytest.raises(InputError, match="already exists"):
        memory_store.create_conversation(conversation_id="demo-1")


BAD_IDS = {
    "empty": ("", "empty"),
    "too long": ("x" * 65, "1 to 64 characters"),
    "newline": ("demo\n1", "control character"),
    "NUL": ("demo\x001", "control character"),
    "lone surrogate": ("demo\ud8001", "lone surrogate"),
    "not text": (123, "must be text"),
}


@pytest.mark.parametrize("good_id", ["a", "x" * 64, "demo-1", "conversación ñandú", "a b"])
def test_check_conversation_id_returns_a_good_id(good_id: str) -> None:
    assert check_conversation_id(good_id) == good_id


@pytest.mark.parametrize(("bad_id", "reason"), BAD_IDS.values(), ids=BAD_IDS.keys())
def test_every_store_method_refuses_an_invalid_conversation_id_with_a_short_input_error(
    memory_store: MemoryStore, bad_id: Any, reason: str
) -> None:
    calls = {
        "check_conversation_id": lambda: check_conversation_id(bad_id),
        "create_conversation": lambda: memory_store.create_conversation(conversation_id=bad_id),
        "ensure_conversation": lambda: memory_store.ensure_conversation(bad_id),
        "record_turn": lambda: memory_store.record_turn(bad_id, turn("hola", "hola")),
        "merge_state": lambda: memory_store.merge_state(bad_id, {"anio": 2025}),
        "get_state": lambda: memory_store.get_state(bad_id),
        "history": lambda: memory_store.history(bad_id),
        "memories": lambda: memory_store.memories(bad_id),
        "build_context": lambda: memory_store.build_context(bad_id, TODAY),
        "get_conversation": lambda: memory_store.get_conversation(bad_id),
    }
    for name, call in calls.items():
        with pytest.raises(InputError, match=reason) as caught:
            call()
            pytest.fail(f"{name} accepted {bad_id!r}")
        message = str(caught.value)
        assert "\n" not in message and len(message) < 200  # one short line, never the whole id echoed back
    assert set(all_counts(memory_store.engine).values()) == {0}


def test_an_unknown_conversation_reads_as_empty_and_a_new_one_too(memory_store: MemoryStore) -> None:
    assert memory_store.get_conversation("nope") is None
    assert memory_store.history("nope") == []
    assert memory_store.get_state("nope") == {} == memory_store.get_state(memory_store.create_conversation())
    context = memory_store.build_context("nope", TODAY)
    assert context.today == TODAY
    assert (context.memories, context.state, context.recent_exchanges) == ([], {}, [])


def test_ensure_conversation_creates_once_and_keeps_the_first_user(memory_store: MemoryStore) -> None:
    assert memory_store.ensure_conversation("c1", user_id="ana") == "c1"
    assert memory_store.ensure_conversation("c1", user_id="beto") == "c1"

    info = memory_store.get_conversation("c1")
    assert info is not None and info.user_id == "ana"
    assert count_rows(memory_store.engine, Conversation) == 1


# -- recording turns and history -----------------------------------------------------------------------------


def test_history_returns_every_message_in_order_with_its_metadata(memory_store: MemoryStore) -> None:
    cid = memory_store.create_conversation()
    memory_store.record_turn(cid, turn("u1", "a1", tool_steps=1))
    memory_store.record_turn(cid, turn("u2", "a2"))

    history = memory_store.history(cid)

    assert [(m.role, m.content) for m in history] == [
        ("user", "u1"),
        ("assistant", ""),
        ("tool", '{"total": 1}'),
        ("assistant", "a1"),
        ("user", "u2"),
        ("assistant", "a2"),
    ]
    assert history[1].metadata == {
        "tool_calls": [{"id": "call0", "name": "ventas_anuales", "args": {"anio": 2025}}]
    }
    assert history[2].metadata == {"tool_call_id": "call0"}
    assert history[0].metadata == {}
    assert [m.is_final_answer for m in history] == [False, False, False, True, False, True]
    assert [m.id for m in history] == sorted(m.id for m in history)
    assert all(m.conversation_id == cid and m.created_at.tzinfo is not None for m in history)


# -- state ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("returning", [True, False], ids=["update-returning", "update-then-select"])
def test_writes_return_the_merged_state_with_or_without_update_returning(
    memory_store: MemoryStore, monkeypatch: pytest.MonkeyPatch, returning: bool
) -> None:
    # SQLite 3.35+ and PostgreSQL read the state in the locking UPDATE; MySQL needs a SELECT after it.
    monkeypatch.setattr(memory_store.engine.dialect, "update_returning", returning)
    cid = memory_store.create_conversation()
    with memory_store.engine.begin() as connection:  # a conversation created without its state row
        connection.execute(insert(Conversation).values(id="externa", user_id=None))

    assert memory_store.record_turn(cid, turn("u1", "a1", state={"anio": 2025})) == {"anio": 2025}
    assert memory_store.record_turn(cid, turn("u2", "a2", state={"tema": "ventas"})) == {
        "anio": 2025,
        "tema": "ventas",
    }
    assert memory_store.merge_state(cid, {"anio": None}) == {"tema": "ventas"}
    memory_store.merge_state("nueva", {"tema": "compras"})  # an unknown conversation is created
    assert memory_store.record_turn("nueva", turn("u", "a", state={"x": 1})) == {"tema": "compras", "x": 1}
    assert memory_store.record_turn("externa", turn("u", "a", state={"y": 2})) == {"y": 2}
    assert [memory_store.get_state(c) for c in (cid, "nueva", "externa")] == [
        {"tema": "ventas"},
        {"tema": "compras", "x": 1},
        {"y": 2},
    ]
    assert memory_store.get_conversation("nueva") is not None


def test_a_turn_that_leaves_the_state_as_it_was_does_not_rewrite_it(memory_store: MemoryStore) -> None:
    cid = memory_store.create_conversation()
    memory_store.record_turn(cid, turn("u1", "a1", state={"tema": "ventas"}))

    with statements_run(memory_store.engine) as run:
        state = memory_store.record_turn(cid, turn("u2", "a2", state={"tema": "ventas", "ausente": None}))

    assert state == {"tema": "ventas"}
    state_writes = [sql for sql, _ in run if sql.startswith("UPDATE conversation_state SET state")]
    assert state_writes == []
    assert [m.content for m in memory_store.history(cid)] == ["u1", "a1", "u2", "a2"]


def test_merge_state_replaces_values_whole_and_none_deletes_keys(memory_store: MemoryStore) -> None:
    cid = memory_store.create_conversation()
    memory_store.merge_state(cid, {"tema": "ventas", "filtros": {"anio": 2025, "mes": 3}, "cliente": "ABC"})

    new_state = memory_store.merge_state(cid, {"filtros": {"anio": 2024}, "cliente": None, "ausente": None})

    assert new_state == {"tema": "ventas", "filtros": {"anio": 2024}}
    assert memory_store.get_state(cid) == {"tema": "ventas", "filtros": {"anio": 2024}}


def test_get_state_returns_a_copy(memory_store: MemoryStore) -> None:
    memory_store.merge_state("c", {"tema": "ventas"})
    memory_store.get_state("c")["tema"] = "compras"

    assert memory_store.get_state("c") == {"tema": "ventas"}


# -- memory items --------------------------------------------------------------------------------------------


def test_memories_rank_by_importance_then_most_recent(memory_store: MemoryStore) -> None:
    cid = memory_store.create_conversation()
    memory_store.record_turn(cid, turn("u1", "a1", memories=[("viejo", 0.5), ("clave", 0.9)]))
    memory_store.record_turn(cid, turn("u2", "a2", memories=[("nuevo", 0.5), ("menor", 0.1)]))

    assert [m.content for m in memory_store.memories(cid)] == ["clave", "nuevo", "viejo", "menor"]
    assert [m.content for m in memory_store.memories(cid, limit=2)] == ["clave", "nuevo"]


def test_a_repeated_memory_is_stored_once_with_the_higher_importance(memory_store: MemoryStore) -> None:
    cid = memory_store.create_conversation()
    memory_store.record_turn(cid, turn("u1", "a1", memories=[("El mejor cliente es Empresa ABC.", 0.4)]))
    memory_store.record_turn(cid, turn("u2", "a2", memories=[("el  mejor cliente es EMPRESA ABC.", 0.8)]))
    memory_store.record_turn(cid, turn("u3", "a3", memories=[("El mejor cliente es Empresa ABC.", 0.2)]))

    assert memory_store.memories(cid) == [
        MemoryItem(contenido="El mejor cliente es Empresa ABC.", importancia=0.8)
    ]
    assert count_rows(memory_store.engine, MemoryRecord) == 1
    # Within one turn too; an empty item is no memory.
    memory_store.record_turn(
        "c2", turn("u", "a", memories=[("Año 2025", 0.3), ("año 2025", 0.7), ("  ", 1.0)])
    )
    assert memory_store.memories("c2") == [MemoryItem(contenido="Año 2025", importancia=0.7)]


# -- build_context -------------------------------------------------------------------------------------------


def test_an_unanswered_question_is_not_an_exchange(memory_store: MemoryStore) -> None:
    cid = memory_store.create_conversation()
    memory_store.record_turn(cid, turn("u1", "a1"))
    memory_store.record_turn(cid, TurnRecord(messages=[MessageIn(role="user", content="u2 sin respuesta")]))

    assert memory_store.build_context(cid, TODAY).recent_exchanges == [Exchange(usuario="u1", asistente="a1")]


def test_a_turn_longer_than_the_first_window_is_still_found(memory_store: MemoryStore) -> None:
    memory_store.record_turn("c", turn("pregunta larga", "respuesta final", tool_steps=12))

    assert memory_store.build_context("c", TODAY).recent_exchanges == [
        Exchange(usuario="pregunta larga", asistente="respuesta final")
    ]


ARTICLE = [
    turn(
        "¿Cuánto vendimos en 2025?",
        "En 2025 vendimos ₲850.000.000.",
        memories=[("Estamos hablando de ventas de 2025.", 0.8)],
        state={"tema": "ventas", "anio": 2025},
    ),
    turn(
        "¿Cuál fue mi mejor cliente?",
        "El mejor cliente fue Empresa ABC.",
        memories=[("El mejor cliente es Empresa ABC.", 0.8)],
        state={"cliente_actual": "Empresa ABC"},
        tool_steps=2,
    ),
]


def test_context_after_10000_messages_holds_the_article_example_within_its_limits_in_three_queries(
    memory_store: MemoryStore,
) -> None:
    cid = memory_store.create_conversation()
    other = memory_store.create_conversation()
    rows = [
        {
            "conversation_id": cid,
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"m{i}",
            "meta": {},
        }
        for i in range(10_000)
    ]
    old = [
        {"conversation_id": cid, "content": f"viejo {i}", "content_key": f"k{i}", "importance": 0.5}
        for i in range(2_000)
    ]
    with memory_store.engine.begin() as connection:
        connection.execute(insert(Message), rows)
        connection.execute(insert(MemoryRecord), old)
    for record in ARTICLE:
        memory_store.record_turn(cid, record)
    memory_store.record_turn(other, turn("otra", "conversación", memories=[("ajeno", 1.0)]))
    assert count_rows(memory_store.engine, Message) == 10_000 + 8 + 2

    with statements_run(memory_store.engine) as run:
        context = memory_store.build_context(cid, TODAY, memory_limit=3, exchanges=3)

    assert len(run) == 3
    assert context.state == {"tema": "ventas", "anio": 2025, "cliente_actual": "Empresa ABC"}
    assert context.memories == [
        "El mejor cliente es Empresa ABC.",
        "Estamos hablando de ventas de 2025.",
        "viejo 1999",
    ]
    assert context.recent_exchanges == [
        Exchange(usuario="m9998", asistente="m9999"),
        Exchange(usuario="¿Cuánto vendimos en 2025?", asistente="En 2025 vendimos ₲850.000.000."),
        Exchange(usuario="¿Cuál fue mi mejor cliente?", asistente="El mejor cliente fue Empresa ABC."),
    ]
    nothing = memory_store.build_context(cid, TODAY, memory_limit=0, exchanges=0)
    assert (nothing.memories, nothing.recent_exchanges) == ([], [])
    assert render_context(memory_store.build_context(cid, TODAY, exchanges=1)).endswith(
        "Último intercambio:\n"
        "Usuario: ¿Cuál fue mi mejor cliente?\n"
        "Asistente: El mejor cliente fue Empresa ABC."
    )


# -- isolation -----------------------------------------------------------------------------------------------


def test_two_conversations_never_see_each_other(memory_store: MemoryStore) -> None:
    a = memory_store.create_conversation(user_id="ana")
    b = memory_store.create_conversation(user_id="ana")
    memory_store.record_turn(
        a, turn("ua", "aa", memories=[("compartido", 0.2), ("solo A", 0.9)], state={"x": "A"})
    )
    memory_store.record_turn(b, turn("ub", "ab", memories=[("compartido", 0.7)], state={"y": "B"}))
    memory_store.merge_state(b, {"x": None})

    assert memory_store.get_state(a) == {"x": "A"}
    assert memory_store.get_state(b) == {"y": "B"}
    assert memory_store.memories(a) == [
        MemoryItem(contenido="solo A", importancia=0.9),
        MemoryItem(contenido="compartido", importancia=0.2),
    ]
    assert memory_store.memories(b) == [MemoryItem(contenido="compartido", importancia=0.7)]
    assert [m.content for m in memory_store.history(a)] == ["ua", "aa"]
    assert [m.content for m in memory_store.history(b)] == ["ub", "ab"]
    assert memory_store.build_context(b, TODAY).recent_exchanges == [Exchange(usuario="ub", asistente="ab")]


# -- atomicity -----------------------------------------------------------------------------------------------


def test_a_turn_failing_in_the_middle_leaves_no_rows_in_a_new_conversation(memory_store: MemoryStore) -> None:
    invalid = MessageIn.model_construct(role="robot", content="imposible", metadata={})  # bypasses validation
    record = turn("u", "a", memories=[("un hecho", 0.5)], state={"tema": "ventas"})
    record.messages.append(invalid)

    with pytest.raises(StorageError, match="Cannot write the conversation memory") as caught:
        memory_store.record_turn("nueva", record)
    assert isinstance(caught.value.__cause__, IntegrityError)  # the role's CHECK constraint

    assert set(all_counts(memory_store.engine).values()) == {0}  # no row in any of the four tables
    assert memory_store.get_conversation("nueva") is None


def test_a_turn_failing_at_the_state_step_leaves_the_conversation_as_it_was(
    memory_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid = memory_store.create_conversation()
    memory_store.record_turn(cid, turn("u1", "a1", memories=[("antes", 0.5)], state={"anio": 2025}))
    before = all_counts(memory_store.engine)

    def explode(*_args: Any) -> dict[str, Any]:
        raise RuntimeError("disk full")

    monkeypatch.setattr(writing, "write_state", explode)
    with pytest.raises(RuntimeError, match="disk full"):
        memory_store.record_turn(cid, turn("u2", "a2", memories=[("después", 0.9)], state={"anio": 2024}))

    assert all_counts(memory_store.engine) == before
    assert [m.content for m in memory_store.history(cid)] == ["u1", "a1"]
    assert memory_store.memories(cid) == [MemoryItem(contenido="antes", importancia=0.5)]
    assert memory_store.get_state(cid) == {"anio": 2025}


# -- persistence, engines, concurrency -----------------------------------------------------------------------


def test_a_store_on_a_shared_engine_adds_only_its_tables_and_leaves_the_engine_open(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'erp.sqlite3'}")
    store = MemoryStore(engine)
    store.record_turn("c", turn("u", "a"))
    store.close()

    assert set(inspect(engine).get_table_names()) == {
        "conversations",
        "messages",
        "conversation_state",
        "memory_items",
    }
    assert count_rows(engine, Message) == 2  # the engine still works after close()
    engine.dispose()


def test_open_memory_store_reads_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "desde_env.sqlite3"
    monkeypatch.setenv("ERP_AI_MEMORY_URL", f"sqlite:///{path}")
    with open_memory_store() as store:
        store.create_conversation()
    assert path.exists()

    explicit = tmp_path / "explicito.sqlite3"
    with open_memory_store(f"sqlite:///{explicit}") as store:
        assert store.engine.url.database == str(explicit)


# -- ownership -----------------------------------------------------------------------------------------------


def test_the_first_turn_makes_its_user_the_owner_and_another_user_is_refused(
    memory_store: MemoryStore,
) -> None:
    memory_store.record_turn("c1", turn("hola", "ok", state={"tema": "hola"}), user_id="ana")

    info = memory_store.get_conversation("c1")
    assert info is not None and info.user_id == "ana"
    memory_store.check_access("c1", "ana")  # the owner passes
    with pytest.raises(ConversationAccessDenied) as denied:
        memory_store.check_access("c1", "bruno")
    assert denied.value.conversation_id == "c1"
    with pytest.raises(ConversationAccessDenied):
        memory_store.record_turn("c1", turn("intruso", "ok", state={"tema": "x"}), user_id="bruno")
    assert [m.content for m in memory_store.history("c1")] == ["hola", "ok"]
    assert memory_store.get_state("c1") == {"tema": "hola"}


def test_an_unknown_conversation_is_open_and_an_ownerless_one_is_nobodys(memory_store: MemoryStore) -> None:
    memory_store.check_access("nueva", "bruno")  # the turn will create it for bruno
    memory_store.record_turn("legacy", turn("Empresa ABC compró 120.000.000", "ok"))  # no owner

    for user in ("bruno", "gerente"):  # its context could hold anyone's data
        with pytest.raises(ConversationAccessDenied):
            memory_store.check_access("legacy", user)
        with pytest.raises(ConversationAccessDenied):
            memory_store.record_turn("legacy", turn("sigue", "ok"), user_id=user)
    assert len(memory_store.history("legacy")) == 2
