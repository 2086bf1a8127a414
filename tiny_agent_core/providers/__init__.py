"""Talking to LLM providers: the Chat Completions adapter, the streaming client, profiles, raw capture."""
