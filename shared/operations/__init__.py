"""Sales operations: one registry that both modes use."""

from shared.operations.registry import Operation, OperationRegistry, OperationSpec

__all__ = ["Operation", "OperationRegistry", "OperationSpec"]
