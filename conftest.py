"""Settings for every test of the workspace, whichever package's tests pytest collects."""

import os

# LiteLLM fetches its model cost map from the network at import time unless told otherwise.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
