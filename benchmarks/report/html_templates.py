"""The HTML templates' Jinja2 environment, built once: every value autoescaped, an undefined name an error
(the Markdown templates have their own: :func:`benchmarks.report.markdown_text.environment`)."""

from __future__ import annotations

import functools

from jinja2 import Environment, PackageLoader, StrictUndefined


@functools.cache
def html_environment() -> Environment:
    """The environment of ``templates/*.html.j2``."""
    return Environment(
        loader=PackageLoader("benchmarks.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
