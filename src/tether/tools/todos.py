"""`write_todos`: the model's plan as a list it replaces whole, shown to the user.

The list lives in the session (`TodoList`), never in the system prompt, which must
not change. The model sees it where it is fresh: in the tool's own result when it
writes the list, and as a short reminder appended at the tail of the conversation
when it has gone `every` turns without touching an unfinished list.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal, TypedDict

from tether.errors import ToolError
from tether.tools.registry import Tool, ToolContext, tool

__all__ = ["MAX_TODOS", "TodoItem", "TodoList", "render_todos", "write_todos_tool"]

MAX_TODOS = 50
MAX_CONTENT = 500
_MARK = {"done": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class TodoItem(TypedDict):
    content: str
    status: Literal["pending", "in_progress", "done"]


def render_todos(items: tuple[dict[str, Any], ...]) -> str:
    return "\n".join(f"{_MARK.get(i['status'], '[ ]')} {i['content']}" for i in items)


class TodoList:
    """The current list and how many turns have passed since the model last saw it."""

    def __init__(self, every: int = 5) -> None:
        self.every = every
        self._items: tuple[dict[str, Any], ...] = ()
        self._since = 0
        self._lock = threading.Lock()

    @property
    def items(self) -> tuple[dict[str, Any], ...]:
        with self._lock:
            return self._items

    def replace(self, items: tuple[dict[str, Any], ...]) -> None:
        with self._lock:
            self._items, self._since = items, -1  # the writing turn itself does not count

    def reminder(self) -> str | None:
        """Called once per turn: the note to append at the tail, when one is due."""
        with self._lock:
            self._since += 1
            open_items = any(i["status"] != "done" for i in self._items)
            if not open_items or self._since < self.every:
                return None
            self._since = 0
            items = self._items
        return "[tether] Your todo list (update it with write_todos as you go):\n" + render_todos(
            items
        )


def write_todos_tool(
    todo_list: TodoList, on_change: Callable[[tuple[dict[str, Any], ...]], None]
) -> Tool:
    """The write_todos tool over `todo_list`; `on_change` is told each new list."""

    @tool
    def write_todos(ctx: ToolContext, todos: list[TodoItem]) -> str:  # noqa: ARG001
        """Replace your todo list with this one (the whole list, every time).

        Use it for work with several steps: write the plan first, mark one item
        in_progress while you work on it, mark items done as you finish them. The
        user sees the list. Statuses: pending, in_progress, done.

        Args:
            todos: every item of the new list, in order: {"content": "...", "status": "..."}.
        """
        if len(todos) > MAX_TODOS:
            raise ToolError(f"at most {MAX_TODOS} items; merge some (got {len(todos)})")
        cleaned = []
        for number, item in enumerate(todos, 1):
            content = " ".join(item["content"].split())
            if not content:
                raise ToolError(f"item {number} has no content")
            if len(content) > MAX_CONTENT:
                raise ToolError(f"item {number} is over {MAX_CONTENT} characters; shorten it")
            cleaned.append({"content": content, "status": item["status"]})
        result = tuple(cleaned)
        todo_list.replace(result)
        on_change(result)
        if not result:
            return "The todo list is now empty."
        counts = {s: sum(i["status"] == s for i in result) for s in _MARK}
        head = (
            f"Todo list updated: {counts['done']} done, {counts['in_progress']} in progress, "
            f"{counts['pending']} pending."
        )
        return head + "\n" + render_todos(result)

    return write_todos
