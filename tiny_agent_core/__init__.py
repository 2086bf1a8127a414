"""tiny-agent desktop core: canonical transcript, provider adapter, sessions, ledger, agent loop. No Qt."""
