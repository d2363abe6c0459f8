"""The HTTP client's share of a request's cost: every client of a process uses one verifying TLS context.

Loading the CA bundle took tens of milliseconds per client and per event loop; sharing the context must not
weaken it.
"""

from __future__ import annotations

import asyncio
import ssl

from planner_mode import HttpAIClient


def test_clients_and_their_event_loops_share_one_verifying_tls_context() -> None:
    first, second = HttpAIClient(["https://a.test"]), HttpAIClient(["http://b.test"])

    async def async_context(client: HttpAIClient) -> ssl.SSLContext:
        http = await client._async_http()
        return http._transport._pool._ssl_context  # type: ignore[attr-defined,no-any-return]

    contexts = [asyncio.run(async_context(client)) for client in (first, second, first)]
    assert len({id(context) for context in contexts}) == 1
    context = contexts[0]
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
