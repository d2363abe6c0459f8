"""ERP side shared by both modes: demo ERP, operation registry, memory store, model providers."""
