"""Tool calling for models without native tools: a `Model` that wraps another.

`TextProtocolModel` describes the tools in the system prompt (`tools_prompt`),
sends the history with calls and results written as text (`render_messages`),
asks the inner model with no `tools`, and reads the reply back into `ToolCall`s
(`text_tools.parse_reply`). All rendering is deterministic, so the system prompt
and the history keep their bytes from turn to turn and stay in the provider's
prompt cache. A reply that tried to call a tool but could not be read is not
handed to the loop: the model is asked to restate the call, a few times, in
exchanges that are not kept; then `ToolFormatError`.

While the reply streams, text is passed on until something that may start a call
appears; the rest is held back, and once the reply is read the calls are reported
as `ToolCallDelta`s, as a native adapter would.

`rejects_tools` tells, from an endpoint's error, whether it refused the `tools`
parameter itself, so an `auto` protocol can try native tools first and fall back.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tether.errors import (
    AuthenticationError,
    ContextLengthError,
    ModelNotFoundError,
    ProviderError,
    ToolFormatError,
)
from tether.messages import FinishReason, Message, ToolCall, Usage
from tether.models.base import Model, ModelRequest, ModelResponse, OnEvent, ToolSpec
from tether.models.text_tools import CALL_EXAMPLE, ParsedReply, parse_reply
from tether.observe.events import Event, Notice, RetryScheduled, TextDelta, ToolCallDelta

__all__ = [
    "TextProtocolModel",
    "rejects_tools",
    "render_call",
    "render_messages",
    "render_results",
    "restate_request",
    "tools_prompt",
]

_RULES = f"""# Tools

You can call tools. To call one, write a block in exactly this format:

{CALL_EXAMPLE}

Rules:
- Inside the tags write one JSON object and nothing else: "name" is the tool's name and \
"arguments" an object matching its parameters. Strict JSON: double quotes, no comments, \
no trailing commas.
- One call per block. To make several independent calls at once, write several blocks.
- You may write a short note before the blocks. After the last block stop and wait: the \
results come back in the next message as <tool_result name="..." id="..."> blocks \
(error="true" marks a call that failed). Never write results yourself.
- When the task is done, or needs no tool, answer in plain text with no <tool_call> block.

Available tools:"""


def tools_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system-prompt section describing `tools`; the same tools give the same bytes."""
    parts = [_RULES]
    for spec in tools:
        schema = json.dumps(spec.schema(), ensure_ascii=False, separators=(",", ":"))
        parts.append(f"## {spec.name}\n{spec.description.strip()}\nParameters: {schema}")
    return "\n\n".join(parts)


def render_call(call: ToolCall) -> str:
    """`call` as the block the model would have written (arguments kept raw if not JSON)."""
    try:
        arguments: Any = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        arguments = call.arguments
    body = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def render_results(messages: Sequence[Message]) -> str:
    """Consecutive tool-result messages as the text of one user message."""
    blocks = []
    for message in messages:
        attributes = f'name="{_attr(message.name)}" id="{_attr(message.tool_call_id)}"'
        if message.is_error:
            attributes += ' error="true"'
        blocks.append(f"<tool_result {attributes}>\n{message.content}\n</tool_result>")
    return "\n\n".join(blocks)


def _attr(value: str | None) -> str:
    return (value or "").replace('"', "'").replace("\n", " ")


def restate_request(problem: str) -> str:
    """The user message asking the model to write an unreadable call again."""
    return (
        f"Your last reply tried to call a tool, but the call could not be read: {problem}\n"
        "Write the call again in exactly this format, one block per call, with only the "
        f"JSON object inside the tags:\n\n{CALL_EXAMPLE}\n\nIf you meant to answer without "
        "a tool, answer again in plain text with no <tool_call> block."
    )


def render_messages(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The history as a model without tools reads it: calls and results as text.

    An assistant message's calls follow its content as `<tool_call>` blocks; a run of
    tool results becomes one user message, and a user message right after joins it
    (chat templates that insist on alternating roles refuse two in a row). Earlier
    messages keep their bytes as the history grows: only the tail can change.
    """
    out: list[Message] = []
    results: list[Message] = []
    for message in (*messages, None):
        if message is not None and message.role == "tool":
            results.append(message)
            continue
        if results:
            out.append(Message.user(render_results(results)))
            results = []
        if message is None:
            break
        if message.role == "assistant" and message.tool_calls:
            blocks = "\n".join(render_call(call) for call in message.tool_calls)
            text = message.content.rstrip()
            content = f"{text}\n\n{blocks}" if text.strip() else blocks
            message = replace(message, content=content, tool_calls=())
        if message.role == "user" and out and out[-1].role == "user":
            message = Message.user(f"{out.pop().content}\n\n{message.content}")
        out.append(message)
    return tuple(out)


class TextProtocolModel:
    """A `Model` that gives `inner`, which has no native tool calling, tether's tools.

    `max_restates` is how often a reply whose call could not be read is sent back
    with a request to restate it before `ToolFormatError` ends the call.
    """

    def __init__(self, inner: Model, *, max_restates: int = 3) -> None:
        if max_restates < 0:
            raise ValueError(f"max_restates must be 0 or more, not {max_restates!r}")
        self._inner = inner
        self._max_restates = max_restates
        self._prefix = f"call_{secrets.token_hex(4)}_"
        self._numbers = itertools.count(1)

    @property
    def name(self) -> str:
        return self._inner.name

    def close(self) -> None:
        self._inner.close()

    def complete(self, request: ModelRequest, on_event: OnEvent) -> ModelResponse:
        """One answer, its calls read from text; restated as needed (see the module doc)."""
        system = request.system
        if request.tools:
            section = tools_prompt(request.tools)
            system = f"{system}\n\n{section}" if system else section
        history = render_messages(request.messages)
        base = replace(request, system=system, messages=history, tools=(), tool_choice="auto")
        if not request.tools or request.tool_choice == "none":
            return self._inner.complete(base, on_event)
        names = frozenset(spec.name for spec in request.tools)
        schemas = {spec.name: spec.parameters for spec in request.tools}
        spent = Usage()  # the replies thrown away: paid for, not the context's size
        extra: tuple[Message, ...] = ()
        for attempt in range(self._max_restates + 1):
            stream = _HoldBack(on_event)
            response = self._inner.complete(replace(base, messages=history + extra), stream)
            reply = response.message.content
            parsed = parse_reply(reply, names, self._new_id, schemas)
            if parsed.problem is None:
                stream.finish(reply, parsed)
                return replace(_response(response, parsed), side_usage=spent)
            spent = spent + response.usage
            problem = parsed.problem
            if response.finish_reason is FinishReason.LENGTH:
                problem += " (the reply was cut off at the output limit; make it shorter)"
            if attempt == self._max_restates:
                break
            on_event(
                Notice(
                    "warning",
                    f"The model's tool call could not be read ({_short(problem)}); asking it "
                    f"to restate the call ({attempt + 1}/{self._max_restates}).",
                )
            )
            extra += (
                Message(role="assistant", content=reply),
                Message.user(restate_request(problem)),
            )
        tries = self._max_restates + 1
        raise ToolFormatError(
            f"the model {self.name!r} did not write a readable tool call in {tries} "
            f"repl{'y' if tries == 1 else 'ies'} ({self._max_restates} restate requests); "
            f"the last problem: {problem}",
            usage=spent,
        )

    def _new_id(self) -> str:
        return f"{self._prefix}{next(self._numbers)}"


def _response(response: ModelResponse, parsed: ParsedReply) -> ModelResponse:
    """The reply with its calls; native calls a server read itself are kept too."""
    calls = parsed.calls or response.message.tool_calls
    message = replace(response.message, content=parsed.text, tool_calls=calls)
    finish = FinishReason.TOOL_CALLS if calls else response.finish_reason
    return ModelResponse(
        message=message, usage=response.usage, finish_reason=finish, model=response.model
    )


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Where a call may begin: a tag or token of some tool-call format, a code fence, a
# ReAct line, a JSON object (or a list of them) whose first key is a call's.
_MARKER = re.compile(
    r"<\s*tool_call|<function=|\[TOOL_CALLS\]|<\|python_tag\|>|<[｜|]tool[▁_]|```"
    r"|^[ \t*]*Action\**[ \t]*(?:Input\**[ \t]*)?:"
    r"|(?:\[\s*)?\{\s*(?:[\"']?(?:name|tool|tool_name|tool_calls?|function|function_call"
    r"|arguments|parameters)[\"']?\s*:|[\"']?type[\"']?\s*:\s*[\"']function)",
    re.I | re.M,
)
_TOKENS = ("<tool_call", "<function=", "<|python_tag|>", "<｜tool▁", "<|tool▁", "[tool_calls]")
_PARTIAL_OBJECT = re.compile(r"[\[{][\w\s\"':{\[]*")
_PARTIAL_ACTION = re.compile(r"[ \t*]*([a-z]{0,6})[ \t*]*", re.I)
_WINDOW = 24
_CANDIDATE = re.compile(r"[<\[{`]|(?<=\n)(?=.)", re.S)


def _partial_action(tail: str) -> bool:
    match = _PARTIAL_ACTION.fullmatch(tail)
    return match is not None and "action".startswith(match.group(1).lower())


def _held_tail(text: str, start: int) -> int:
    """Where the end of `text` may be the first characters of a marker (else its length).

    Holding too much only delays text: what is held and not a call is shown at the end.
    """
    for candidate in _CANDIDATE.finditer(text, max(start, len(text) - _WINDOW)):
        i = candidate.start()
        tail = text[i:]
        squeezed = tail.lower().replace(" ", "")
        if (
            (tail[0] in "<[" and any(token.startswith(squeezed) for token in _TOKENS))
            or (tail[0] == "`" and "```".startswith(tail))
            or (tail[0] in "{[" and _PARTIAL_OBJECT.fullmatch(tail))
            or (text[i - 1] == "\n" and _partial_action(tail))
        ):
            return i
    return len(text)


class _HoldBack:
    """Passes text deltas on until a possible call starts, then holds the rest back.

    Other events pass through; a `RetryScheduled` means the inner model starts its
    answer over, so what was seen is forgotten (the UI starts over too). Only the text
    not yet shown is searched, so a long reply costs time linear in its length.
    """

    def __init__(self, on_event: OnEvent) -> None:
        self._on_event = on_event
        self._reset()

    def _reset(self) -> None:
        self._parts: list[str] = []
        self._pending = "\n"  # the last character shown (a newline at the start), then the rest
        self._shown = 0
        self._holding = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, RetryScheduled):
            self._reset()
        elif isinstance(event, TextDelta):
            self._parts.append(event.text)
            if not self._holding:
                self._pending += event.text
                self._release()
            return
        self._on_event(event)

    def _release(self) -> None:
        text = self._pending
        marker = _MARKER.search(text, 1)
        if marker is not None:
            self._holding = True
            end = marker.start()
        else:
            end = _held_tail(text, 1)
        if end > 1:
            self._on_event(TextDelta(text=text[1:end]))
            self._shown += end - 1
            self._pending = text[end - 1 :]

    def finish(self, reply: str, parsed: ParsedReply) -> None:
        """Show the prose not yet shown, then the calls as `ToolCallDelta`s."""
        shown = "".join(self._parts)[: self._shown]
        pieces = parsed.pieces if parsed.calls else ((0, len(reply)),)
        if not reply.startswith(shown):  # what was shown is not the reply's start
            reply, pieces = parsed.text, () if shown.strip() else ((0, len(parsed.text)),)
            shown = ""
        rest: list[str] = []
        for start, end in pieces:
            if end <= len(shown):
                continue
            if start < len(shown):
                rest.append(reply[len(shown) : end])
            else:
                rest.append(("\n\n" if rest else _joint(shown)) + reply[start:end])
        if any(rest):
            self._on_event(TextDelta(text="".join(rest)))
        for index, call in enumerate(parsed.calls):
            self._on_event(ToolCallDelta(index, call.id, call.name, call.arguments))


def _joint(shown: str) -> str:
    """What goes between the text shown and the next piece of prose: a blank line."""
    if not shown.strip():
        return ""
    return "\n" * max(0, 2 - (len(shown) - len(shown.rstrip("\n"))))


# The refusal must be of tools as such: "parallel tool calls are not supported" or "does
# not support tools with vision inputs" refuse one use of them, which text cannot mend.
_TOOLS = r"(?:tools?|tool[ _-]?(?:use|calling|calls)|function[ _-]?calling)"
_NOT_QUALIFIED = (
    r"(?<!parallel )(?<!parallel_)(?<!multiple )(?<!streaming )(?<!streamed )"
    r"(?<!vision )(?<!strict )(?<!nested )(?<!forced )(?<!required )"
)
_NO_CONDITION = (
    r"(?![ \t]*(?:with|in|when|while|during|alongside|together|combined|along|unless|if"
    r"|for (?:stream|vision|image|multi))\b)"
)
_REJECTS_TOOLS = re.compile(
    rf"does not support {_TOOLS}\b{_NO_CONDITION}"
    rf"|{_NOT_QUALIFIED}\b{_TOOLS} (?:is|are) not supported\b{_NO_CONDITION}"
    r"|tool choice requires --enable-auto-tool-choice"
    r"|tools param requires --jinja"
    r"|unsupported parameter:? ['\"`]?tools\b"
    r"|unrecognized request arguments? supplied:? ['\"`]?tools\b",
    re.I,
)


def rejects_tools(exc: ProviderError) -> bool:
    """Whether the endpoint refused the `tools` parameter, so tools as text may work.

    Credentials, unknown models, rate limits, a full context and server errors (but
    llama.cpp's, which asks for `--jinja`) are other failures and never count; nor is a
    refusal of some use of tools only (parallel calls, with images, while streaming).
    """
    if isinstance(exc, AuthenticationError | ModelNotFoundError | ContextLengthError):
        return False
    if exc.status in (401, 403, 404, 408, 413, 429):
        return False
    if exc.status is not None and exc.status >= 500:
        return "--jinja" in str(exc)
    return _REJECTS_TOOLS.search(str(exc)) is not None
