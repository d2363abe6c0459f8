"""The AI server app ``erp-ai serve`` and the load-test fleet run (uvicorn's factory, in every worker)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks.stand_ins.models import build_model

if TYPE_CHECKING:
    from fastapi import FastAPI


def served_app() -> FastAPI:
    """The AI server configured from the environment (:func:`planner_mode.server.app_from_env`), its models
    made by the stand-ins' builder: ``ERP_AI_PROVIDER`` unset serves the offline stand-in."""
    from planner_mode.server import app_from_env

    return app_from_env(build_model, default_provider="offline")
