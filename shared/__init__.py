"""ERP side shared by both modes: ERP database, operation registry, memory store, model providers.

Optional dependencies (the AI server, provider SDKs, the CLI) are pip extras imported only where used;
:mod:`shared.extras` says which extra to install when one is missing.
"""

import logging

# A library logs; the application decides where to (no "last resort" printing of warnings to stderr).
logging.getLogger("shared").addHandler(logging.NullHandler())
