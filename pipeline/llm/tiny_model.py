"""A tiny random-weight Llama with a locally trained tokenizer and a tool-calling chat template.

Nothing can be downloaded in CI, yet the LLM plumbing must be tested against a real vLLM engine. This builds a
model small enough to load in seconds on CPU (hidden 64, 2 layers, head_dim 32: the CPU attention kernels need a
head size of at least 32). Its outputs are nonsense; that is the point: the agent loop must survive them.
"""

from __future__ import annotations

import json
from pathlib import Path

# Hermes / Qwen2.5-style template: tools listed in the system turn, calls as <tool_call>{json}</tool_call>,
# results as <tool_response> inside a user turn. Arguments may arrive as a JSON string (OpenAI format) or a dict.
CHAT_TEMPLATE = r"""{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions. Function signatures are inside <tools></tools>:
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>

For each call, return a JSON object inside <tool_call></tool_call>:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{% if message.content %}{{ message.content }}{% endif %}
{%- if message.tool_calls %}{% for tc in message.tool_calls %}
<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {% if tc.function.arguments is string %}{{ tc.function.arguments }}{% else %}{{ tc.function.arguments | tojson }}{% endif %}}
</tool_call>{% endfor %}{% endif %}<|im_end|>
{% elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}<|im_start|>user
{% else %}
{% endif %}<tool_response>
{{ message.content }}
</tool_response>
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}<|im_end|>
{% endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Added (non-special) tokens: single ids the random model can emit, so Hermes markup appears in its output.
ADDED_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def _corpus() -> list[str]:
    # Enough code- and JSON-like text for a byte-level BPE of a few hundred merges.
    names = ["read_file", "write_file", "list_files", "compile", "verify", "profile", "finish"]
    lines = [
        "__global__ void relu_kernel(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + "
        "threadIdx.x; if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f; }",
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n",
        "def get_inputs():\n    return [torch.randn(1024, 1024)]\n",
        "torch::Tensor forward(torch::Tensor x) { auto y = torch::empty_like(x); return y; }",
        "The kernel compiled and the outputs match the reference. Speedup over eager: 1.8x.",
    ]
    for n in names:
        lines.append(json.dumps({"name": n, "arguments": {"path": "kernel.cu", "content": "int main() {}"}}))
    return lines * 20


def build_tokenizer(out_dir: Path, vocab_size: int = 1024):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )
    fast.add_tokens(ADDED_TOKENS)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)
    return fast


def build_tiny_model(out_dir: str | Path, *, max_position_embeddings: int = 8192, seed: int = 0) -> Path:
    """Write a tiny random Llama + tokenizer + chat template to `out_dir` (skipped when already built)."""
    out = Path(out_dir)
    if (out / "config.json").exists() and (out / "tokenizer.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    tok = build_tokenizer(out)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=max_position_embeddings,
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
        dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out)
    GenerationConfig(eos_token_id=cfg.eos_token_id, pad_token_id=cfg.pad_token_id).save_pretrained(out)
    return out


_ENGINES: dict[str, object] = {}


def shared_tiny_engine(model_dir: str | Path, max_model_len: int = 8192):
    """One in-process VLLMEngineBackend per model dir and process (tests and benchmarks share it: an engine costs
    seconds to start and ~1.7 GiB)."""
    from pipeline.llm.vllm_engine import VLLMEngineBackend

    key = f"{Path(model_dir).resolve()}:{max_model_len}"
    if key not in _ENGINES:
        _ENGINES[key] = VLLMEngineBackend(str(build_tiny_model(model_dir)), max_model_len=max_model_len)
    return _ENGINES[key]
