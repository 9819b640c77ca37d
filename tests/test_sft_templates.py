"""SFT rows as trainers take them: loaded back with `datasets.load_dataset("parquet")`, rendered through
transformers' `apply_chat_template` with the chat templates of Qwen2.5, Llama-3.1 and a Hermes-style model (written
out below, so nothing is downloaded), and tokenized by TRL's SFT data path.

The templates keep the parts of the originals that read the message layout: key presence tests (`'tool_calls' in
message`, `message.tool_calls is not defined`), `arguments | tojson`, and `tools` iterated as objects.
"""

from __future__ import annotations

import json

import pytest

from pipeline.curate.settings import CurateSettings
from pipeline.curate.stage import curate, save_result
from pipeline.curate.synthetic import scenario

QWEN25 = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}
    {%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}{%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}{{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}{%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}{{- '\n' + message.content }}{%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}{{- tool_call.arguments | tojson }}{{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}{{- '<|im_start|>user' }}{%- endif %}
        {{- '\n<tool_response>\n' }}{{- message.content }}{{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}{{- '<|im_end|>\n' }}{%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""

LLAMA31 = r"""{{- bos_token }}
{%- if not tools_in_user_message is defined %}{%- set tools_in_user_message = true %}{%- endif %}
{%- if not date_string is defined %}{%- set date_string = "26 Jul 2024" %}{%- endif %}
{%- if not tools is defined %}{%- set tools = none %}{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}
{%- else %}{%- set system_message = "" %}{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}{{- "Environment: ipython\n" }}{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}{{- "<|eot_id|>" }}
{%- if tools_in_user_message and not tools is none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}
    {%- else %}{{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}{{- t | tojson(indent=4) }}{{- "\n\n" }}{%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}{{- raise_exception("This model only supports single tool-calls at once!") }}{%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}{{- '"parameters": ' }}{{- tool_call.arguments | tojson }}{{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}{{- message.content | tojson }}
        {%- else %}{{- message.content }}{%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}"""

HERMES = r"""{{- bos_token }}
{%- if tools %}
{{- '<|im_start|>system\n' }}
{{- "You are a function calling AI model. You are provided with function signatures within <tools></tools> XML tags. Here are the available tools: <tools> " }}
{%- for tool in tools %}
    {%- if tool.function is defined %}{%- set tool = tool.function %}{%- endif %}
    {{- '{"type": "function", "function": {"name": "' + tool.name + '", "description": "' + tool.description + '", "parameters": ' }}
    {%- if tool.parameters.properties | length > 0 %}{{- tool.parameters | tojson }}{%- else %}{{- "{}" }}{%- endif %}
    {{- "}}" }}{%- if not loop.last %}{{- "\n" }}{%- endif %}
{%- endfor %}
{{- " </tools>" }}
{{- "For each function call return a json object with function name and arguments within <tool_call></tool_call> XML tags as follows:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-dict>}\n</tool_call><|im_end|>\n" }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "user" or message.role == "system" or (message.role == "assistant" and message.tool_calls is not defined) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- for tool_call in message.tool_calls %}
            {{- '\n<tool_call>\n' }}
            {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
            {{- '{"name": "' }}{{- tool_call.name }}{{- '", ' }}
            {%- if tool_call.arguments is defined %}{{- '"arguments": ' }}
                {%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
            {%- endif %}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.previtem and loop.previtem.role != "tool" %}{{- '<|im_start|>tool\n' }}{%- endif %}
        {{- '<tool_response>\n' }}{{- message.content }}{{- '\n</tool_response>' }}
        {%- if loop.last or loop.nextitem.role != "tool" %}{{- '<|im_end|>\n' }}{%- else %}{{- '\n' }}{%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""

TEMPLATES = {"qwen2.5": QWEN25, "llama-3.1": LLAMA31, "hermes": HERMES}
# How each template writes a call: the arguments must appear as a JSON object, never as a quoted JSON string.
CALL_PREFIX = {
    "qwen2.5": '"arguments": {"code": "import torch',
    "llama-3.1": '"parameters": {"code": "import torch',
    "hermes": '"arguments": {"code": "import torch',
}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """The curated SFT and critic tables written to Parquet and read back by `datasets`."""
    import datasets

    root = tmp_path_factory.mktemp("sft")
    scen = scenario()
    r = curate(
        scen["tasks"], scen["validation"], scen["contamination"], scen["trajectories"], CurateSettings(), "cur-tpl"
    )
    paths = save_result(r, root)
    out = {n: datasets.load_dataset("parquet", data_files=str(paths[n]), split="train") for n in ("sft", "critic")}
    assert out["sft"].num_rows == r.sft.num_rows > 0
    return out


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from pipeline.llm.tiny_model import build_tokenizer

    tok = build_tokenizer(tmp_path_factory.mktemp("tok"))
    tok.bos_token = "<|endoftext|>"
    return tok


def test_rows_round_trip_as_objects(loaded):
    row = loaded["sft"][0]
    assert isinstance(row["tools"], list) and all(isinstance(t, dict) for t in row["tools"])
    calls = [c for m in row["messages"] for c in m.get("tool_calls", [])]
    assert calls and all(isinstance(c["function"]["arguments"], dict) for c in calls)
    assert all(None not in m.values() for m in row["messages"])
    assert [m["role"] for m in loaded["critic"][0]["messages"]][-1] == "assistant"


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_rows_render_through_each_chat_template(loaded, tokenizer, name):
    tokenizer.chat_template = TEMPLATES[name]
    for ds in (loaded["sft"], loaded["critic"]):
        for row in ds.select(range(min(3, ds.num_rows))):
            text = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
            assert CALL_PREFIX[name] in text, text[:2000]
            assert '"arguments": "{' not in text and '"parameters": "{' not in text  # no double encoding
            assert "compile_and_test" in text
            last = row["messages"][-1]
            assert "tool_calls" in last or last["content"].strip() in text  # Hermes drops text beside calls
    print(f"\n--- {name} ---\n{text[-600:]}")


def test_the_old_layout_breaks_the_templates(loaded, tokenizer):
    """What the issue reported, checked against the same templates: null keys on every message and JSON-string
    arguments fail Llama-3.1 and double-encode in Qwen2.5 (so the test above can tell the layouts apart)."""
    row = loaded["sft"][0]
    old = [
        {
            "role": m["role"],
            "content": m["content"],
            "tool_call_id": m.get("tool_call_id"),
            "name": m.get("name"),
            "tool_calls": [
                {**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}}
                for c in m["tool_calls"]
            ]
            if "tool_calls" in m
            else None,
        }
        for m in row["messages"]
    ]
    tokenizer.chat_template = LLAMA31
    with pytest.raises(TypeError):
        tokenizer.apply_chat_template(old, tools=row["tools"], tokenize=False)
    tokenizer.chat_template = QWEN25
    assert '"arguments": "{' in tokenizer.apply_chat_template(old, tools=row["tools"], tokenize=False)
    with pytest.raises(ValueError):  # transformers takes tools as a list, not JSON text
        tokenizer.apply_chat_template(row["messages"], tools=json.dumps(row["tools"]), tokenize=False)


def test_trl_sft_data_path_tokenizes_a_batch(loaded, tokenizer, tmp_path):
    """TRL's SFTTrainer prepares the dataset as loaded (its own tokenize step passes `tools` to the template)
    and its collator builds a batch."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import SFTConfig, SFTTrainer

    tokenizer.chat_template = QWEN25
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    ds = loaded["sft"].select_columns(["messages", "tools"])
    args = SFTConfig(
        output_dir=str(tmp_path),
        report_to=[],
        max_length=4096,
        per_device_train_batch_size=2,
        use_cpu=True,
        dataset_num_proc=None,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)
    prepared = trainer.train_dataset
    assert "input_ids" in prepared.column_names and prepared.num_rows == ds.num_rows
    first = tokenizer.decode(prepared[0]["input_ids"])
    assert CALL_PREFIX["qwen2.5"] in first
    batch = trainer.data_collator([prepared[i] for i in range(min(2, prepared.num_rows))])
    assert batch["input_ids"].shape[0] == min(2, prepared.num_rows) and (batch["labels"] != -100).any()
