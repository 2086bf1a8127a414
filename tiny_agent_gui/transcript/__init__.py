"""The centre pane: the transcript model and view, streaming text, and the composer."""

from tiny_agent_gui.transcript.composer import Composer, PromptEdit
from tiny_agent_gui.transcript.model import ITEM_ROLE, StreamingItem, TranscriptModel
from tiny_agent_gui.transcript.view import TranscriptDelegate, TranscriptView

__all__ = [
    "ITEM_ROLE",
    "Composer",
    "PromptEdit",
    "StreamingItem",
    "TranscriptDelegate",
    "TranscriptModel",
    "TranscriptView",
]
