"""Writing the final answer from operation results (``respuesta``, ``memoria``, ``estado``), and the fixed
replies for questions that need no operation.

Amounts are written as ``₲850.000.000`` and names verbatim, so a scorer can find the key figures; lists
mention every item with its total. ``estado`` holds the keys the instructions name whose value changed,
``memoria`` restates the results unless the instructions keep it for other facts; empty ones are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from benchmarks.stand_ins.offline._prompt import Conversation
from shared.text import fold, format_guaranies

MONTHS_ES = [
    "enero", "febrero", "marzo", "abril", "mayo", "junio",
    "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre",
]  # fmt: skip
_TOPICS = {"top_productos": "productos", "facturas_pendientes": "facturas", "buscar_cliente": "clientes"}
DESCRIPTIONS = {
    "ventas_anuales": "las ventas del año",
    "mejor_cliente": "el mejor cliente",
    "compras_cliente": "las compras del cliente",
    "ventas_mensuales": "las ventas mensuales",
    "top_productos": "los productos más vendidos",
    "ventas_por_categoria": "las ventas por categoría",
    "facturas_pendientes": "las facturas pendientes",
    "buscar_cliente": "la búsqueda de clientes",
}
"""What each operation consults, as a sentence's object."""
_QUOTED_CUSTOMER = re.compile(r"cliente (['\"])(.+?)\1")
_MATCHED_CUSTOMER = re.compile(r"coincide con (['\"])(.+?)\1")


REPLIES = {
    "greeting": "¡Hola! Soy el asistente de ventas del ERP. Puedo consultar ventas anuales y mensuales, el "
    "mejor cliente, las compras de un cliente, los productos más vendidos, las ventas por categoría, las "
    "facturas pendientes y buscar clientes. ¿Qué quieres saber?",
    "thanks": "¡De nada! Si necesitas otra consulta de ventas, aquí estoy.",
    "bye": "¡Hasta luego! Cuando quieras seguimos con tus consultas de ventas.",
    "destructive": "No puedo modificar, crear ni borrar datos del ERP: solo puedo consultar información de "
    "ventas.",
    "injection": "No puedo cambiar mis instrucciones. Puedo ayudarte con consultas de ventas, clientes, "
    "productos y facturas del ERP.",
    "unsupported": "Lo siento, no puedo ayudarte con eso: solo puedo consultar información de ventas del ERP "
    "(ventas, clientes, productos y facturas).",
    "no_operation": "No tengo una operación disponible para consultar ese dato en el ERP.",
    "which_customer": "¿De qué cliente quieres saber las compras? Indícame su nombre.",
    "which_debtor": "¿De qué cliente quieres ver las facturas pendientes? Indícame su nombre.",
    "which_year": "¿De qué año quieres la información?",
    "which_text": "¿Qué cliente quieres buscar? Indícame el nombre o parte de él.",
    "which_data": "¿Qué quieres consultar? Puedo darte, por ejemplo, las ventas, el mejor cliente, las "
    "compras de un cliente o los productos más vendidos.",
}


def not_offered(intents: list[str]) -> str:
    """The refusal when every operation a question needs is missing from those the prompt offers (the ERP
    offers each user only the operations their role may run)."""
    objects = [_as_object(DESCRIPTIONS.get(name, f"la operación {name}")) for name in dict.fromkeys(intents)]
    if not objects:
        return REPLIES["no_operation"]
    if len(objects) == 1:
        return f"No tiene acceso {objects[0]}: esa operación no está entre las disponibles para su usuario."
    return (
        f"No tiene acceso {' ni '.join(objects)}: esas operaciones no están entre las disponibles para su "
        "usuario."
    )


def _as_object(description: str) -> str:
    """ "las ventas del año" → "a las ventas del año"; "el mejor cliente" → "al mejor cliente"."""
    return f"al {description[3:]}" if description.startswith("el ") else f"a {description}"


@dataclass(frozen=True)
class Executed:
    """One operation as the model sees it afterwards: a result or an error."""

    funcion: str
    parametros: dict[str, Any]
    resultado: Any = None
    error: str | None = None


def _money(value: Any) -> str:
    return format_guaranies(value) if isinstance(value, int | float) and not isinstance(value, bool) else "₲0"


def _month(value: Any) -> str:
    return MONTHS_ES[value - 1] if isinstance(value, int) and 1 <= value <= 12 else str(value)


def _sentence(text: str) -> str:
    """``text`` with one final period, also when it ends in an abbreviation ("… S.A.")."""
    return text if text.endswith(".") else f"{text}."


def _count(value: Any, singular: str, plural: str) -> str:
    return f"{value} {singular if value == 1 else plural}"


def describe(item: Executed) -> str:
    if item.error is not None:
        what = DESCRIPTIONS.get(item.funcion, f"la operación {item.funcion}")
        detail = item.error.strip().removeprefix("Error:").strip()
        return _refusal(item, what, detail) or f"No pude consultar {what}: {detail}"
    data = item.resultado if isinstance(item.resultado, dict) else {}
    anio = data.get("anio", item.parametros.get("anio"))
    writer = _WRITERS.get(item.funcion)
    if writer is None:
        return f"Resultado de {item.funcion}: {item.resultado}"
    text = writer(data, anio)
    scope = data.get("alcance")
    if isinstance(scope, str) and scope.strip():
        text = f"{text.removesuffix('.')} ({scope.strip()})."  # whose figures: a salesperson's customers only
    return text


def _refusal(item: Executed, what: str, detail: str) -> str | None:
    """The ERP refused on the user's rights (a customer outside their scope, an operation their role may not
    run): say so plainly, or ``None``."""
    folded = fold(detail)
    not_found = "ningun cliente al que usted tenga acceso" in folded
    if not_found or "no tiene acceso" in folded:
        quoted = (_MATCHED_CUSTOMER if not_found else _QUOTED_CUSTOMER).search(detail)
        customer = quoted.group(2) if quoted else item.parametros.get("cliente")
        who = customer.strip() if isinstance(customer, str) and customer.strip() else "ese cliente"
        if not_found:
            return f"No encontré a {who} entre sus clientes: no existe o no es uno de sus clientes."
        return f"No tiene acceso a los datos de {who}: no es uno de sus clientes."
    if "no tiene permiso" in folded:
        return f"No tiene permiso para consultar {what}; esa consulta no se ejecutó."
    return None


def _ventas_anuales(data: dict[str, Any], anio: Any) -> str:
    facturas = data.get("facturas")
    extra = f" ({_count(facturas, 'factura', 'facturas')})" if isinstance(facturas, int) else ""
    return f"En {anio} las ventas fueron de {_money(data.get('total'))}{extra}."


def _mejor_cliente(data: dict[str, Any], anio: Any) -> str:
    if not data.get("cliente"):
        return f"No hubo ventas a clientes en {anio}."
    return f"El mejor cliente de {anio} fue {data['cliente']}, con compras por {_money(data.get('total'))}."


def _compras_cliente(data: dict[str, Any], anio: Any) -> str:
    facturas = data.get("facturas")
    extra = f" en {_count(facturas, 'factura', 'facturas')}" if isinstance(facturas, int) else ""
    return f"{data.get('cliente', 'El cliente')} compró {_money(data.get('total'))} en {anio}{extra}."


def _ventas_mensuales(data: dict[str, Any], anio: Any) -> str:
    months = [m for m in data.get("meses") or [] if isinstance(m, dict)]
    if data.get("mes"):
        return f"En {_month(data['mes'])} de {anio} las ventas fueron de {_money(data.get('total'))}."
    listed = "; ".join(f"{_month(m.get('mes'))}: {_money(m.get('total'))}" for m in months)
    return (
        f"Ventas mensuales de {anio}: {listed or 'sin ventas'}. Total del año: {_money(data.get('total'))}."
    )


def _top_productos(data: dict[str, Any], anio: Any) -> str:
    products = [p for p in data.get("productos") or [] if isinstance(p, dict)]
    if not products:
        return f"No hubo ventas de productos en {anio}."
    listed = "; ".join(
        f"{i}. {p.get('producto')} "
        f"({_count(p.get('unidades'), 'unidad', 'unidades')}, {_money(p.get('total'))})"
        for i, p in enumerate(products, start=1)
    )
    return f"Los productos más vendidos de {anio} fueron: {listed}."


def _ventas_por_categoria(data: dict[str, Any], anio: Any) -> str:
    categories = [c for c in data.get("categorias") or [] if isinstance(c, dict)]
    listed = "; ".join(f"{c.get('categoria')}: {_money(c.get('total'))}" for c in categories)
    return f"Ventas por categoría en {anio}: {listed or 'sin ventas'}. Total: {_money(data.get('total'))}."


def _facturas_pendientes(data: dict[str, Any], anio: Any) -> str:
    invoices = [f for f in data.get("facturas") or [] if isinstance(f, dict)]
    who = f" de {data['cliente']}" if data.get("cliente") else ""
    cantidad = data.get("cantidad", len(invoices))
    if not cantidad:
        return _sentence(f"No hay facturas pendientes{who}")
    pending = _count(cantidad, "factura pendiente", "facturas pendientes")
    head = f"Hay {pending}{who} por {_money(data.get('total'))}"
    if isinstance(data.get("listado"), str) and data["listado"].strip():
        head = f"{head}; se listan {data['listado'].strip()}"  # a listing cut short says so
    listed = "; ".join(
        f"{f.get('numero')} ({f.get('cliente')}, {f.get('fecha')}): {_money(f.get('total'))}"
        for f in invoices
    )
    return f"{head}: {listed}." if listed else f"{head}."


def _buscar_cliente(data: dict[str, Any], anio: Any) -> str:
    customers = [c for c in data.get("clientes") or [] if isinstance(c, dict)]
    texto = data.get("texto", "")
    if not customers:
        return f"No encontré clientes que coincidan con «{texto}»."
    listed = "; ".join(f"{c.get('nombre')} (RUC {c.get('ruc')}, {c.get('ciudad')})" for c in customers)
    return f"Encontré {_count(len(customers), 'cliente', 'clientes')} para «{texto}»: {listed}."


_WRITERS = {
    "ventas_anuales": _ventas_anuales,
    "mejor_cliente": _mejor_cliente,
    "compras_cliente": _compras_cliente,
    "ventas_mensuales": _ventas_mensuales,
    "top_productos": _top_productos,
    "ventas_por_categoria": _ventas_por_categoria,
    "facturas_pendientes": _facturas_pendientes,
    "buscar_cliente": _buscar_cliente,
}


def _memories(items: list[Executed]) -> list[dict[str, Any]]:
    memories: list[tuple[float, str]] = []
    for item in items:
        if item.error is not None or not isinstance(item.resultado, dict):
            continue
        data = item.resultado
        anio = data.get("anio", item.parametros.get("anio"))
        if item.funcion == "mejor_cliente" and data.get("cliente"):
            memories.append((0.9, _sentence(f"El mejor cliente de {anio} fue {data['cliente']}")))
        elif item.funcion == "compras_cliente":
            memories.append((0.8, f"{data.get('cliente')} compró {_money(data.get('total'))} en {anio}."))
        elif item.funcion == "ventas_anuales":
            memories.append((0.7, f"Las ventas de {anio} fueron de {_money(data.get('total'))}."))
        elif item.funcion == "top_productos" and data.get("productos"):
            first = data["productos"][0]
            memories.append(
                (0.6, _sentence(f"El producto más vendido de {anio} fue {first.get('producto')}"))
            )
        elif item.funcion == "facturas_pendientes":
            who = f" de {data['cliente']}" if data.get("cliente") else ""
            memories.append((0.6, f"Hay {data.get('cantidad')} facturas pendientes{who}."))
    ok = [i for i in items if i.error is None]
    if ok:
        last = ok[-1]
        anio = last.parametros.get("anio")
        topic = _TOPICS.get(last.funcion, "ventas")
        memories.append((0.5, f"La conversación trata sobre {topic}" + (f" de {anio}." if anio else ".")))
    memories.sort(key=lambda pair: -pair[0])
    return [{"contenido": text, "importancia": weight} for weight, text in memories[:3]]


def _state(items: list[Executed], conversation: Conversation) -> dict[str, Any]:
    ok = [i for i in items if i.error is None]
    if not ok:
        return {}
    state: dict[str, Any] = {}
    for item in ok:
        data = item.resultado if isinstance(item.resultado, dict) else {}
        anio = data.get("anio", item.parametros.get("anio"))
        if isinstance(anio, int):
            state["anio"] = anio
        cliente = data.get("cliente") if item.funcion != "buscar_cliente" else None
        if item.funcion == "buscar_cliente" and len(data.get("clientes") or []) == 1:
            cliente = data["clientes"][0].get("nombre")
        if isinstance(cliente, str) and cliente:
            state["cliente_actual"] = cliente
    state["tema"] = _TOPICS.get(ok[-1].funcion, "ventas")
    state["ultima_operacion"] = ok[-1].funcion
    state["ultimas_operaciones"] = [{"funcion": i.funcion, "parametros": i.parametros} for i in ok]
    return {
        key: state[key]
        for key in conversation.instructions.state_keys
        if key in state and conversation.state.get(key) != state[key]
    }


def compose_answer(
    items: list[Executed], conversation: Conversation, fallback_reply: str | None = None
) -> dict[str, Any]:
    """The answer JSON for these executed operations."""
    if not items:
        return {"respuesta": fallback_reply or "No tengo datos para responder eso."}
    answer: dict[str, Any] = {"respuesta": " ".join(describe(item) for item in items)}
    memories = _memories(items) if conversation.instructions.remember_results else []
    state = _state(items, conversation)
    if memories:
        answer["memoria"] = memories
    if state:
        answer["estado"] = state
    return answer
