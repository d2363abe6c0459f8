"""The HTTP client's failover: a request's retries go to the servers after its own (what a fleet relies on).

When a server dies, every request that could not connect to it is retried on the next server in the list.
Requests run concurrently, so between two attempts of one request others take their turns: the retry must
still go to the server after the one that refused, never back to the dead one because the shared
round-robin counter happened to point there.
"""

from __future__ import annotations

import asyncio
import datetime

import httpx

from planner_mode import HttpAIClient
from planner_mode.client import last_item
from shared.memory.context import ConversationContext

CONTEXT = ConversationContext(hoy=datetime.date(2026, 11, 30))
PLAN = {"plan": {"operaciones": [], "respuesta_directa": "Hola"}, "usage": {}}


def test_a_retry_goes_to_the_next_server_even_when_another_request_took_a_turn_meanwhile() -> None:
    attempts: list[str] = []
    client: HttpAIClient

    async def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(str(request.url.host))
        if request.url.host == "down.test":
            if len(attempts) == 1:  # a concurrent request takes the next turn before this one retries
                await last_item(client.plan("otra", CONTEXT, []))
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json=PLAN)

    client = HttpAIClient(
        ["http://down.test", "http://up.test"], retries=1, transport=httpx.MockTransport(handler)
    )
    answer = asyncio.run(last_item(client.plan("pregunta", CONTEXT, [])))

    assert answer.plan.direct_answer == "Hola"
    assert attempts == ["down.test", "up.test", "up.test"]
