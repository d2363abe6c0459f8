"""Sales operations: one registry that both modes use."""

from shared.operations.registry import Operation, OperationRegistry, OperationSpec
from shared.operations.sales import sales_registry

__all__ = ["Operation", "OperationRegistry", "OperationSpec", "sales_registry"]
