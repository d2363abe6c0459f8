"""Who asks, and what the ERP lets them do: the turn's caller, roles → permissions, the operation context.

The ERP decides, never the model: the registry offers and runs only what the caller's permissions allow, and
each handler's :class:`OperationContext` scopes its queries to the caller's rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

ALL_CUSTOMERS = "clientes:todos"
"""The permission to see every customer's data; without it a caller sees only the customers assigned to them
(``customers.vendedor == caller.user_id`` in the demo ERP)."""


class Caller(BaseModel):
    """The person a turn runs for, as the embedding application authenticated them."""

    model_config = ConfigDict(frozen=True)

    user_id: str = Field(min_length=1, max_length=64, description="Stable user id (owner of conversations).")
    roles: frozenset[str] = Field(default_factory=frozenset, description="Role names the policy maps.")
    name: str | None = Field(default=None, description="Display name, for the user's own greeting only.")


DEMO_CALLER = Caller(user_id="gerente", roles=frozenset({"gerencia"}), name="Gerencia")
"""The single-user demo's caller: the manager, who sees every customer (the article's figures). The CLI and
the benchmark pass it explicitly; the engines never fall back to it (a turn always names its caller)."""


def require_caller(caller: object) -> Caller:
    """``caller`` itself when it is a :class:`Caller`; else a ``TypeError`` that says what to pass."""
    if isinstance(caller, Caller):
        return caller
    raise TypeError(
        f"caller must be a shared.security.Caller (the authenticated user: "
        f"Caller(user_id=..., roles=frozenset({{...}}))), not {type(caller).__name__} {caller!r:.60}. "
        "The engine never guesses who is asking; the single-user demo passes shared.security.DEMO_CALLER."
    )


@dataclass(frozen=True)
class RolePolicy:
    """Roles → permissions: a caller holds the union of their roles' permissions (unknown roles: none)."""

    roles: Mapping[str, frozenset[str]]

    def permissions(self, caller: Caller) -> frozenset[str]:
        """Every permission ``caller`` holds."""
        return frozenset().union(*(self.roles.get(role, frozenset()) for role in caller.roles))


DEMO_POLICY = RolePolicy(
    roles={
        "gerencia": frozenset({"ventas:leer", "ventas:analisis", "cobranzas:leer", ALL_CUSTOMERS}),
        "ventas": frozenset({"ventas:leer", "cobranzas:leer"}),
    }
)
"""The demo ERP's roles: management sees everything; salespeople read sales and receivables of their own
customers, and not the category analysis (``ventas:analisis``)."""


@dataclass(frozen=True)
class OperationContext:
    """What a handler receives: who asks, the ERP's today, and the ERP's backend (for the demo ERP, a
    SQLAlchemy ``Session``; an ERP reached over REST would put its client here)."""

    caller: Caller
    permissions: frozenset[str]
    today: date
    backend: Any
    operation: str = ""
    """The name of the operation running (for the errors it raises)."""

    @property
    def sees_all_customers(self) -> bool:
        """Whether the caller's data scope is every customer (else only their own)."""
        return ALL_CUSTOMERS in self.permissions
