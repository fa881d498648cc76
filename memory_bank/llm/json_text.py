"""Reading the JSON object out of what a model really replies.

Small local models wrap the object in prose or code fences, use Python literals and single
quotes, leave trailing commas, or stop mid-object when they hit their token limit. The
`json-repair` package reads all of that; this module only insists that an object came out of
it (an empty or prose-only reply is an error, and the caller re-prompts).
"""

from __future__ import annotations

from typing import Any

import json_repair


def parse_json_reply(text: str) -> dict[str, Any]:
    """The JSON object in a model's reply; ValueError when there is none to recover."""
    if not text or not text.strip():
        raise ValueError("the reply is empty")
    value = json_repair.loads(text)
    if isinstance(value, list):
        # Two objects in one reply ("{...} and also {...}") come back as a list: the first is
        # the answer, what follows is the model talking on.
        value = next((item for item in value if isinstance(item, dict)), value)
    if not isinstance(value, dict):
        raise ValueError("the reply holds no JSON object")
    return value
