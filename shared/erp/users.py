"""The caller a turn runs as, read from the ERP's users (the demo's: `shared.erp.demo_catalog.DEMO_USERS`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from sqlalchemy import select

from shared.erp.models import ErpUser
from shared.errors import InputError
from shared.security import DEMO_CALLER, Caller

if TYPE_CHECKING:
    from shared.erp.database import Erp


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
