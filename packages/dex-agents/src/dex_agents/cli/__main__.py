"""``python -m dex_agents.cli``: the same as the ``dex-agents`` command."""

import sys

from dex_agents.cli._main import main

sys.exit(main())
