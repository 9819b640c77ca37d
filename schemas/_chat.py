"""Chat message types shared by the dataset tables (OpenAI / TRL conversational layout)."""

from __future__ import annotations

import pyarrow as pa

STR = pa.string()

#: An OpenAI tool call: `arguments` is the JSON text the model produced (kept verbatim, as the OpenAI API does).
TOOL_CALL = pa.struct([
    pa.field("id", STR),
    pa.field("type", STR),
    pa.field("function", pa.struct([pa.field("name", STR), pa.field("arguments", STR)])),
])

#: One chat message: role system|user|assistant|tool; tool results carry `tool_call_id` and the tool `name`.
MESSAGE = pa.struct([
    pa.field("role", STR),
    pa.field("content", STR),
    pa.field("tool_calls", pa.list_(TOOL_CALL)),
    pa.field("tool_call_id", STR),
    pa.field("name", STR),
])
MESSAGES = pa.list_(MESSAGE)

#: verl prompt messages: role and content only.
PROMPT_MESSAGE = pa.struct([pa.field("role", STR), pa.field("content", STR)])
