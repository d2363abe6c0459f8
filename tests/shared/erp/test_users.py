"""The demo ERP's users and salespeople: who the callers are, and whose customers are whose."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from shared.erp.database import Erp
from shared.erp.demo_catalog import DEMO_USERS
from shared.erp.models import ErpUser
from shared.erp.users import DEFAULT_USER, caller_for
from shared.errors import InputError
from shared.security import DEMO_CALLER, DEMO_POLICY, Caller


def test_the_demo_users_are_seeded(erp: Erp) -> None:
    with erp.session() as session:
        users = {u.user_id: (u.name, u.role) for u in session.scalars(select(ErpUser))}
    assert users == {u.user_id: (u.name, u.role) for u in DEMO_USERS}
    assert {"gerente", "ana", "bruno"} <= set(users)
    assert users["gerente"][1] == "gerencia"
    assert users["ana"][1] == users["bruno"][1] == "ventas"
    assert all(role in DEMO_POLICY.roles for _, role in users.values())


def test_caller_for_reads_the_users_table(erp: Erp) -> None:
    assert caller_for(erp, "bruno") == Caller(
        user_id="bruno",
        roles=frozenset({"ventas"}),
        name=next(u.name for u in DEMO_USERS if u.user_id == "bruno"),
    )
    assert caller_for(erp, "ana").roles == frozenset({"ventas"})


def test_the_default_user_is_the_documented_demo_caller(erp: Erp) -> None:
    assert DEFAULT_USER == DEMO_CALLER.user_id == "gerente"
    assert caller_for(erp, DEFAULT_USER) == DEMO_CALLER


def test_an_unknown_user_is_an_input_error_naming_the_known_ones(erp: Erp) -> None:
    with pytest.raises(InputError, match=r"Unknown user 'carlos'.*ana, bruno, gerente"):
        caller_for(erp, "carlos")
