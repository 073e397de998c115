"""Memento's sendmsg gateway: any LangGraph graph behind the product's WebSocket protocol."""

from memento_gateway.frames import MAX_FRAME_BYTES, TurnIds
from memento_gateway.identities import ChangedIdentities, check_identities
from memento_gateway.keys import KeyRegistry, Space, StaticKeys
from memento_gateway.loading import load_keys, load_runnable
from memento_gateway.memory_http import MEMORY_PATH
from memento_gateway.requests import RequestError, SendMsg
from memento_gateway.server import DEFAULT_WINDOW, Gateway
from memento_gateway.voice import Sentence, Voice, VoiceHook

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_WINDOW",
    "MAX_FRAME_BYTES",
    "MEMORY_PATH",
    "ChangedIdentities",
    "Gateway",
    "KeyRegistry",
    "RequestError",
    "SendMsg",
    "Sentence",
    "Space",
    "StaticKeys",
    "TurnIds",
    "Voice",
    "VoiceHook",
    "__version__",
    "check_identities",
    "load_keys",
    "load_runnable",
]
