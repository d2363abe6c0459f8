"""langchain-tests' standard suites for :class:`OfflineSalesModel`.

``ChatModelUnitTests`` run in full. ``ChatModelIntegrationTests`` also run: the offline model needs no server,
so "integration" here means the real LangChain machinery end to end (invoke, stream, batch, async, tool
calling, structured output, usage metadata, agent loop). Every skip is listed below with its reason; none of
them is a failure we hide:

- ``test_pdf_inputs``, ``test_audio_inputs``, ``test_image_inputs``, ``test_image_tool_message``,
  ``test_pdf_tool_message``, ``test_anthropic_inputs``: the model reads text only (the ``supports_*``
  properties stay False), and those tests would download media from the internet, which the test-session
  network guard forbids.
- ``test_stream_time``: needs VCR cassettes of real HTTP traffic; there is no HTTP here.
- ``test_invoke_with_model_override`` and friends run: the ``model`` call argument renames the reply's
  ``model_name``.
- ``test_init_time`` runs pytest-benchmark's calibration loop (about a second) in a one-process run; under
  ``make test``'s workers the benchmark is disabled and it times one construction. The suite forbids
  overriding it.
- ``test_init_from_env`` / ``test_serdes``: skipped by the suite itself, because the model reads no
  environment variables and is not LangChain-serialisable (nothing to configure, nothing secret).
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests

from benchmarks.stand_ins.offline import OfflineSalesModel


class _OfflineSalesModel:
    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return OfflineSalesModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model": "offline-sales"}


class TestOfflineSalesModelUnit(_OfflineSalesModel, ChatModelUnitTests):
    """The standard unit suite."""


class TestOfflineSalesModelIntegration(_OfflineSalesModel, ChatModelIntegrationTests):
    """The standard integration suite, run offline."""

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def model_override_value(self) -> str | None:
        return "offline-sales-override"
