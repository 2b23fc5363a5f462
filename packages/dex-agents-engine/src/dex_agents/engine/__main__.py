"""``python -m dex_agents.engine``: the same as the ``dex-agents-engine`` command."""

import sys

from dex_agents.engine._cli import main

sys.exit(main())
