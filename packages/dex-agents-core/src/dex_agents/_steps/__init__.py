"""The Steps of the session Flow, one module per role (see ``dex_agents._flow``)."""
