"""Conversation memory owned by the ERP (article §10–12)."""
