"""The ERP's customers and products as an answer names them: matched by identity, not by exact spelling.

A **product** is named by its full name, its SKU (``ALM-004``) or its name without the pack size in brackets
(``Aceite de soja 900 ml``); a **customer** by its full name or its name without the legal form
(``Importadora del Este``); a shortened name counts only when no other product or customer shares it. Names
compare as whole words, case-, accent- and punctuation-insensitively (:func:`shared.text.words`), so ``la
empresa ABC`` names Empresa ABC and ``Empresa AB`` names nobody.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select

from shared.erp.database import Erp
from shared.erp.models import Customer, Product
from shared.text import without_legal_form, without_pack_size, words

__all__ = ["ErpNames", "words"]


def _unique_aliases(names: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Each name first, then its aliases, leaving out any alias that is also another name or another's alias
    (it would identify neither)."""
    counts = Counter(words(alias) for name, aliases in names.items() for alias in {name, *aliases})
    return {
        name: tuple(dict.fromkeys(a for a in (name, *aliases) if a == name or counts[words(a)] == 1))
        for name, aliases in names.items()
    }


@dataclass(frozen=True)
class ErpNames:
    """The names of the ERP's customers and products, with the aliases each is recognised by."""

    customers: dict[str, tuple[str, ...]]
    """Customer name → the texts that name it (the name first)."""
    products: dict[str, tuple[str, ...]]
    """Product name → the texts that name it (the name first, then the SKU and the base name)."""

    @classmethod
    def build(cls, customers: Iterable[str], products: Iterable[tuple[str, str]]) -> ErpNames:
        """From customer names and ``(sku, name)`` pairs of products."""
        return cls(
            customers=_unique_aliases({name: (without_legal_form(name),) for name in customers}),
            products=_unique_aliases({name: (sku, without_pack_size(name)) for sku, name in products}),
        )

    @classmethod
    def of(cls, erp: Erp) -> ErpNames:
        """Every customer and product of ``erp`` (whoever may see them: naming one is naming it)."""
        with erp.session() as session:
            customers = list(session.scalars(select(Customer.name)))
            products = [(sku, name) for sku, name in session.execute(select(Product.sku, Product.name))]
        return cls.build(customers, products)

    def aliases(self, name: str) -> tuple[str, ...]:
        """The texts that name ``name``: its aliases when it is a customer or a product, else itself."""
        return self.customers.get(name) or self.products.get(name) or (name,)

    def names(self, value: str, text: str) -> bool:
        """Whether ``text`` names ``value`` (by any of its :meth:`aliases`)."""
        found = words(text)
        return any(words(alias) in found for alias in self.aliases(value))

    def customers_named(self, text: str) -> set[str]:
        found = words(text)
        return {name for name, aliases in self.customers.items() if any(words(a) in found for a in aliases)}

    def canonical_customer(self, text: str) -> str | None:
        """The customer ``text`` names as a whole (its folded words equal to the customer's name or one of its
        aliases, not merely containing them); ``None`` when it names no customer, or more than one."""
        found = words(text)
        named = [name for name, aliases in self.customers.items() if any(words(a) == found for a in aliases)]
        return named[0] if len(named) == 1 else None
