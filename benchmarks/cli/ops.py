"""``erp-ai ops list`` and ``erp-ai ops call``: the ERP's sales operations, with no model involved."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from benchmarks.cli.common import (
    DbUrl,
    DemoOpt,
    Group,
    UserOpt,
    console,
    errors_as_json,
    fail,
    open_erp,
    refuse,
)
from shared.errors import ErpAiError
from shared.security import DEMO_CALLER

ops_app = typer.Typer(
    cls=Group,
    help="List or call the ERP's sales operations directly (no model involved).",
    no_args_is_help=True,
)


@ops_app.command("list")
def ops_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
    user: UserOpt = DEMO_CALLER.user_id,
    db_url: DbUrl = None,
    demo: DemoOpt = False,
) -> None:
    """List the sales operations the user may run, with their parameters."""
    from shared.erp.users import caller_for
    from shared.operations.sales import sales_registry

    try:
        caller = caller_for(open_erp(db_url, demo), user)
    except ErpAiError as exc:
        with errors_as_json(as_json):
            raise refuse(exc) from None
    catalog = sales_registry().catalog(caller)
    if as_json:
        typer.echo(json.dumps([spec.model_dump() for spec in catalog], ensure_ascii=False, indent=2))
        return
    table = Table(title="Sales operations")
    table.add_column("name", style="bold")
    table.add_column("parameters")
    table.add_column("description", overflow="fold")
    for spec in catalog:
        required = set(spec.parameters.get("required", []))
        params = ", ".join(
            f"{name}{'' if name in required else '?'}" for name in spec.parameters.get("properties", {})
        )
        table.add_row(spec.name, params, spec.description)
    console.print(table)


@ops_app.command("call")
def ops_call(
    name: Annotated[str, typer.Argument(help="Operation name, e.g. ventas_anuales.")],
    params: Annotated[
        str, typer.Argument(help="Parameters as a JSON object, e.g. '{\"anio\": 2025}'.")
    ] = "{}",
    db_url: DbUrl = None,
    demo: DemoOpt = False,
    user: UserOpt = DEMO_CALLER.user_id,
) -> None:
    """Call one operation against the ERP as a user (their permissions and customers) and print the result.

    The result is JSON on stdout; so is a refusal (exit 2): {"error": {"kind": ..., "message": ...}}.
    """
    with errors_as_json(True):
        typer.echo(
            json.dumps(_call(name, params, db_url=db_url, demo=demo, user=user), ensure_ascii=False, indent=2)
        )


def _call(name: str, params: str, *, db_url: str | None, demo: bool, user: str) -> object:
    from shared.erp.users import caller_for
    from shared.operations.sales import sales_registry

    try:
        parsed = json.loads(params)
    except json.JSONDecodeError as exc:
        raise fail(
            f"PARAMS is not valid JSON ({exc.msg}); pass an object like '{{\"anio\": 2025}}'.", kind="input"
        ) from None
    except (RecursionError, ValueError):  # nested past the interpreter's limit, or a huge integer
        raise fail(
            "PARAMS nests too deeply or holds a number too large; pass a flat JSON object.", kind="input"
        ) from None
    if not isinstance(parsed, dict):
        raise fail(f"PARAMS must be a JSON object, not {type(parsed).__name__}.", kind="input")
    try:
        erp = open_erp(db_url, demo)
        try:
            return sales_registry().execute(erp, name, parsed, caller=caller_for(erp, user))
        finally:
            erp.engine.dispose()
    except ErpAiError as exc:
        raise refuse(exc) from None
