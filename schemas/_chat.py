"""Chat message types shared by the dataset tables (OpenAI / TRL conversational layout)."""

from __future__ import annotations

import pyarrow as pa

STR = pa.string()

#: An OpenAI tool call: `arguments` is the JSON text the model produced (kept verbatim, as the OpenAI API does).
TOOL_CALL = pa.struct(
    [
        pa.field("id", STR),
        pa.field("type", STR),
        pa.field("function", pa.struct([pa.field("name", STR), pa.field("arguments", STR)])),
    ]
)

#: One chat message: role system|user|assistant|tool; tool results carry `tool_call_id` and the tool `name`.
MESSAGE = pa.struct(
    [
        pa.field("role", STR),
        pa.field("content", STR),
        pa.field("tool_calls", pa.list_(TOOL_CALL)),
        pa.field("tool_call_id", STR),
        pa.field("name", STR),
    ]
)
MESSAGES = pa.list_(MESSAGE)

#: verl prompt messages: role and content only.
PROMPT_MESSAGE = pa.struct([pa.field("role", STR), pa.field("content", STR)])

#: A JSON object stored as text (Arrow's canonical `arrow.json` extension, Parquet's JSON logical type).
#: `datasets` reads a `list<json>` column as `List(Json())` and hands back each item as the object it was written
#: as, with exactly its own keys. This is what the trainer-facing tables use for conversations and tool schemas:
#: a struct would unify the keys of every message (a user message would get `tool_calls: None`, which breaks
#: Llama-3.1-style templates), and a struct for `arguments` would unify the arguments of every tool.
JSON = pa.json_()
#: Conversation as trainers take it: each message an object with only the keys it uses (role, content; assistant
#: tool calls with `arguments` as an object; tool results with tool_call_id and name).
CHAT = pa.list_(JSON)
#: The OpenAI tool schemas, each an object, as `apply_chat_template(tools=...)` takes them.
TOOL_SCHEMAS = pa.list_(JSON)
