"""The demo ERP's users (``gerente``; salespeople ``ana`` and ``bruno``), and the caller a turn runs as."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from sqlalchemy import select

from shared.erp.models import ErpUser
from shared.errors import InputError
from shared.security import DEMO_CALLER, Caller

if TYPE_CHECKING:
    from shared.erp.database import Erp


@dataclass(frozen=True)
class DemoUser:
    """One row of the demo ERP's ``erp_users``."""

    user_id: str
    name: str
    role: str


DEMO_USERS: Final[tuple[DemoUser, ...]] = (
    DemoUser("gerente", "Gerencia", "gerencia"),
    DemoUser("ana", "Ana Benítez", "ventas"),
    DemoUser("bruno", "Bruno Giménez", "ventas"),
)
"""The users the seed creates (:func:`shared.erp.seed.seed_erp`)."""

DEFAULT_USER: Final = DEMO_CALLER.user_id
"""The user of the single-user demo when none is named (``gerente``): ``caller_for(erp, DEFAULT_USER)`` equals
:data:`shared.security.DEMO_CALLER`."""


def caller_for(erp: Erp, user_id: str) -> Caller:
    """The caller ``user_id`` of ``erp``'s users table: their id, their role, their display name."""
    with erp.session() as session:
        row = session.execute(select(ErpUser.name, ErpUser.role).where(ErpUser.user_id == user_id)).first()
        if row is None:
            known = sorted(session.scalars(select(ErpUser.user_id)))
            shown = user_id if len(user_id) <= 64 else f"{user_id[:64]}…"
            raise InputError(f"Unknown user {shown!r}. Known users: {', '.join(known) or '(none)'}.")
    name, role = row
    return Caller(user_id=user_id, roles=frozenset({role}), name=name)
