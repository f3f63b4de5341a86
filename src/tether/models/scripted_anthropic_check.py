"""What the real Messages API rejects, so tests catch a bad request from our client.

`validate_request` answers the 400 message the real API would send (same wording
where we know it), or None. It covers the shape of the request, the pairing of
`tool_use` and `tool_result` blocks, the cache-breakpoint limit, thinking
signatures and the thinking rules. It is not the whole schema: images, documents
and server tools pass without a look inside.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tether.models.scripted_anthropic import thinking_signature

__all__ = ["MAX_CACHE_BREAKPOINTS", "validate_request"]

MAX_CACHE_BREAKPOINTS = 4

_BLOCK_TYPES = (
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
)
_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
_THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


class _Invalid(Exception):
    """The request is wrong; the message is the API's."""


def validate_request(body: Any) -> str | None:
    """The real API's 400 message for what is wrong with `body`, or None when it is fine."""
    try:
        _check(body)
    except _Invalid as exc:
        return str(exc)
    return None


def _check(body: Any) -> None:
    if not isinstance(body, dict):
        raise _Invalid("There was an error parsing the body: expected a JSON object.")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            raise _Invalid(f"{name}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise _Invalid("model: Input should be a non-empty string")
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        raise _Invalid("max_tokens: Input should be a valid integer")
    if max_tokens < 1:
        raise _Invalid("max_tokens: Input should be greater than or equal to 1")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise _Invalid("stream: Input should be a valid boolean")
    _check_system(body.get("system"))
    _check_tools(body.get("tools"))
    forced = _check_tool_choice(body.get("tool_choice"))
    thinking = _check_thinking(body.get("thinking"), max_tokens, forced=forced)
    messages = body["messages"]
    if not isinstance(messages, list):
        raise _Invalid("messages: Input should be a valid list")
    if not messages:
        raise _Invalid("messages: at least one message is required")
    for i, message in enumerate(messages):
        _check_message(message, i, final=i == len(messages) - 1)
    if messages[0]["role"] != "user":
        raise _Invalid('messages: first message must use the "user" role')
    _check_tool_pairs(messages)
    marks = _count_marks(body)
    if marks > MAX_CACHE_BREAKPOINTS:
        raise _Invalid(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {marks}."
        )
    if thinking:
        _check_final_thinking(messages)


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A checked message's content as blocks (a string is one text block)."""
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _check_text(block: Mapping[str, Any], where: str, section: str) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        raise _Invalid(f"{where}.text: Field required")
    if not text:
        raise _Invalid(f"{section}: text content blocks must be non-empty")
    if not text.strip():
        raise _Invalid(f"{section}: text content blocks must contain non-whitespace text")


def _check_cache_control(block: Mapping[str, Any], where: str) -> None:
    if "cache_control" not in block:
        return
    mark = block["cache_control"]
    if not isinstance(mark, dict) or mark.get("type") != "ephemeral":
        raise _Invalid(f"{where}.cache_control.type: Input should be 'ephemeral'")
    if mark.get("ttl", "5m") not in ("5m", "1h"):
        raise _Invalid(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")


def _check_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise _Invalid("system: Input should be a valid string or list")
    for i, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise _Invalid(f"system.{i}.type: Input should be 'text'")
        _check_text(block, f"system.{i}", "system")
        _check_cache_control(block, f"system.{i}")


def _check_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise _Invalid("tools: Input should be a valid list")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _Invalid(f"tools.{i}: Input should be a valid dictionary")
        if tool.get("type", "custom") != "custom":
            continue  # a server tool (web search, ...): not modelled here
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            pattern = _TOOL_NAME.pattern
            raise _Invalid(f"tools.{i}.custom.name: String should match pattern '^{pattern}$'")
        if not isinstance(tool.get("input_schema"), dict):
            raise _Invalid(f"tools.{i}.custom.input_schema: Field required")
        _check_cache_control(tool, f"tools.{i}.custom")
        if name in names:
            raise _Invalid("tools: Tool names must be unique.")
        names.add(name)


def _check_tool_choice(choice: Any) -> bool:
    """Checks `tool_choice`; True when it forces a tool call."""
    if choice is None:
        return False
    kinds = ("auto", "any", "tool", "none")
    if not isinstance(choice, dict) or choice.get("type") not in kinds:
        found = choice.get("type") if isinstance(choice, dict) else choice
        expected = ", ".join(f"'{k}'" for k in kinds)
        raise _Invalid(
            f"tool_choice: Input tag {found!r} found using 'type' does not match any of "
            f"the expected tags: {expected}"
        )
    if choice["type"] == "tool" and not isinstance(choice.get("name"), str):
        raise _Invalid("tool_choice.tool.name: Field required")
    return choice["type"] in ("any", "tool")


def _check_thinking(thinking: Any, max_tokens: int, *, forced: bool) -> bool:
    """Checks `thinking`; True when thinking is on."""
    if thinking is None:
        return False
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "disabled":
        return False
    if kind not in ("enabled", "adaptive"):
        raise _Invalid(
            f"thinking: Input tag {kind!r} found using 'type' does not match any of the "
            "expected tags: 'enabled', 'disabled', 'adaptive'"
        )
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or isinstance(budget, bool):
            raise _Invalid("thinking.enabled.budget_tokens: Field required")
        if budget < 1024:
            raise _Invalid(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        if max_tokens <= budget:
            raise _Invalid(
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult "
                f"our documentation at {_THINKING_DOCS}#max-tokens-and-context-window-size"
            )
    if forced:
        raise _Invalid("Thinking may not be enabled when tool_choice forces tool use.")
    return True


def _check_message(message: Any, i: int, *, final: bool) -> None:
    where = f"messages.{i}"
    if not isinstance(message, dict):
        raise _Invalid(f"{where}: Input should be a valid dictionary")
    for name in ("role", "content"):
        if name not in message:
            raise _Invalid(f"{where}.{name}: Field required")
    role = message["role"]
    if role not in ("user", "assistant"):
        raise _Invalid(f"{where}.role: Input should be 'user' or 'assistant'")
    content = message["content"]
    if not isinstance(content, str | list):
        raise _Invalid(f"{where}.content: Input should be a valid string or list")
    prefill = final and role == "assistant"
    if not content:
        if prefill:
            return
        raise _Invalid(
            f"{where}: all messages must have non-empty content except for the optional "
            "final assistant message"
        )
    if isinstance(content, list):
        for j, block in enumerate(content):
            _check_block(block, f"{where}.content.{j}", role)
    last = _blocks(message)[-1]
    if prefill and last["type"] == "text" and last["text"] != last["text"].rstrip():
        raise _Invalid("final assistant content cannot end with trailing whitespace")
    if isinstance(content, str):
        _check_text({"text": content}, where, "messages")


def _only_in(role: str, allowed: str, kind: str, where: str) -> None:
    if role != allowed:
        raise _Invalid(f"{where}: `{kind}` blocks can only be in `{allowed}` messages")


def _check_block(block: Any, where: str, role: str) -> None:
    if not isinstance(block, dict):
        raise _Invalid(f"{where}: Input should be a valid dictionary")
    kind = block.get("type")
    if kind not in _BLOCK_TYPES:
        expected = ", ".join(f"'{k}'" for k in _BLOCK_TYPES)
        raise _Invalid(
            f"{where}: Input tag {kind!r} found using 'type' does not match any of the "
            f"expected tags: {expected}"
        )
    if kind in ("thinking", "redacted_thinking"):
        _only_in(role, "assistant", kind, where)
        if "cache_control" in block:
            raise _Invalid(f"{where}.{kind}.cache_control: Extra inputs are not permitted")
    else:
        _check_cache_control(block, f"{where}.{kind}")
    if kind == "text":
        _check_text(block, where, "messages")
    elif kind == "tool_use":
        _only_in(role, "assistant", kind, where)
        call_id = block.get("id")
        if not isinstance(call_id, str) or not _TOOL_ID.fullmatch(call_id):
            pattern = _TOOL_ID.pattern
            raise _Invalid(f"{where}.tool_use.id: String should match pattern '^{pattern}$'")
        if not isinstance(block.get("name"), str) or not block["name"]:
            raise _Invalid(f"{where}.tool_use.name: Field required")
        if not isinstance(block.get("input"), dict):
            raise _Invalid(f"{where}.tool_use.input: Input should be a valid dictionary")
    elif kind == "tool_result":
        _only_in(role, "user", kind, where)
        _check_tool_result(block, where)
    elif kind == "thinking":
        if not isinstance(block.get("thinking"), str):
            raise _Invalid(f"{where}.thinking.thinking: Field required")
        signature = block.get("signature")
        if not isinstance(signature, str):
            raise _Invalid(f"{where}.thinking.signature: Field required")
        if signature != thinking_signature(block["thinking"]):
            raise _Invalid(f"{where}: Invalid `signature` in `thinking` block")
    elif kind == "redacted_thinking" and not isinstance(block.get("data"), str):
        raise _Invalid(f"{where}.redacted_thinking.data: Field required")


def _check_tool_result(block: Mapping[str, Any], where: str) -> None:
    if not isinstance(block.get("tool_use_id"), str):
        raise _Invalid(f"{where}.tool_result.tool_use_id: Field required")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        raise _Invalid(f"{where}.tool_result.is_error: Input should be a valid boolean")
    content = block.get("content", "")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _Invalid(f"{where}.tool_result.content: Input should be a valid string or list")
    for k, inner in enumerate(content):
        inner_where = f"{where}.tool_result.content.{k}"
        if not isinstance(inner, dict) or inner.get("type") not in ("text", "image", "document"):
            raise _Invalid(f"{inner_where}.type: Input should be 'text', 'image' or 'document'")
        if inner["type"] == "text":
            _check_text(inner, inner_where, "messages")
        _check_cache_control(inner, inner_where)


def _check_tool_pairs(messages: Sequence[Mapping[str, Any]]) -> None:
    """Each `tool_use` is answered at the start of the next message; each `tool_result`
    answers a `tool_use` of the message before it; no id is used twice."""
    seen: set[str] = set()
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        if message["role"] == "assistant":
            ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
            for j, block in enumerate(blocks):
                if block["type"] == "tool_use":
                    if block["id"] in seen:
                        raise _Invalid(f"messages.{i}.content.{j}: `tool_use` ids must be unique")
                    seen.add(block["id"])
            following = messages[i + 1] if i + 1 < len(messages) else None
            answered = set()
            if following is not None and following["role"] == "user":
                for block in _blocks(following):
                    if block["type"] != "tool_result":
                        break  # results after other content do not count
                    answered.add(block["tool_use_id"])
            missing = [call_id for call_id in ids if call_id not in answered]
            if missing:
                raise _Invalid(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must "
                    "have a corresponding `tool_result` block in the next message."
                )
            continue
        previous = messages[i - 1] if i else None
        offered = set()
        if previous is not None and previous["role"] == "assistant":
            offered = {b["id"] for b in _blocks(previous) if b["type"] == "tool_use"}
        for j, block in enumerate(blocks):
            if block["type"] == "tool_result" and block["tool_use_id"] not in offered:
                raise _Invalid(
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {block['tool_use_id']}. Each `tool_result` block "
                    "must have a corresponding `tool_use` block in the previous message."
                )


def _count_marks(body: Mapping[str, Any]) -> int:
    """How many blocks carry `cache_control`: tools, system, content, tool-result content."""
    system = body.get("system")
    blocks: list[Any] = [*(body.get("tools") or ()), *(system if isinstance(system, list) else ())]
    for message in body["messages"]:
        for block in _blocks(message):
            blocks.append(block)
            inner = block.get("content") if block["type"] == "tool_result" else None
            blocks.extend(inner if isinstance(inner, list) else ())
    return sum(1 for b in blocks if isinstance(b, dict) and "cache_control" in b)


def _check_final_thinking(messages: Sequence[Mapping[str, Any]]) -> None:
    """With thinking on, an assistant turn still in its tool loop (the last message
    answers its tool calls) must begin with its thinking block."""
    last = _blocks(messages[-1])
    if messages[-1]["role"] != "user" or not last or last[0]["type"] != "tool_result":
        return
    i = len(messages) - 2
    first = _blocks(messages[i])[0]
    if first["type"] not in ("thinking", "redacted_thinking"):
        raise _Invalid(
            f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{first['type']}`. When `thinking` is enabled, a final `assistant` message "
            "must start with a thinking block (preceeding the lastmost set of `tool_use` and "
            "`tool_result` blocks). We recommend you include thinking blocks from previous "
            "turns. To avoid this requirement, disable `thinking`. Please consult our "
            f"documentation at {_THINKING_DOCS}"
        )
