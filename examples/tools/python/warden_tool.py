"""warden_tool: turn Python functions into a warden tool component.

Register each tool with the ``@tool`` decorator, then make the component's
exported class visible from your app module::

    from warden_tool import Tool, tool

    @tool("word_count", "Count the words of a text.", {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text."}},
        "required": ["text"],
        "additionalProperties": False,
    })
    def word_count(text):
        return str(len(text.split()))

The host validates every call against the schema before the function runs;
the function gets the arguments as keyword arguments. It returns the text the
model reads (anything else is sent as JSON). Raise ``InvalidArgs``,
``NotFound``, ``Denied`` or ``Failed`` for a typed error; any other uncaught
exception becomes a ``failed`` error carrying its message, and its traceback
goes to stderr (the call's stderr record).
"""

import json
import sys
import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import tool as wit

_TOOLS = []


class ToolError(Exception):
    """A typed tool error; its message is shown to the model as it is."""

    kind = wit.Error_Failed


class InvalidArgs(ToolError):
    """Arguments that passed the schema but are still wrong."""

    kind = wit.Error_InvalidArgs


class NotFound(ToolError):
    """A file or other object named in the call does not exist."""

    kind = wit.Error_NotFound


class Denied(ToolError):
    """The sandbox refused the operation."""

    kind = wit.Error_Denied


class Failed(ToolError):
    """Anything else that went wrong."""

    kind = wit.Error_Failed


def tool(name, description, schema, aliases=(), mutates=False):
    """Registers the decorated function as tool ``name``.

    Its effects (which arguments are paths, and what a call does to each)
    are not declared: a call that may change files is shown to the user as
    "effects unknown" and cannot be undone.
    """

    def register(fn):
        _TOOLS.append((name, description, json.dumps(schema), list(aliases), mutates, fn))
        return fn

    return register


def _find(name):
    for entry in _TOOLS:
        if entry[0] == name or name in entry[3]:
            return entry
    names = ", ".join(entry[0] for entry in _TOOLS)
    raise Err(wit.Error_NotFound(f"unknown tool {name!r}; this component offers: {names}"))


class Tool(exports.Tool):
    """The component's `tool` export, made from the registered functions."""

    def describe(self):
        return [
            wit.Spec(name=n, description=d, parameters=s, aliases=a, mutates=m, effects=None)
            for (n, d, s, a, m, _) in _TOOLS
        ]

    def call(self, name, args):
        fn = _find(name)[5]
        try:
            result = fn(**json.loads(args))
        except ToolError as e:
            raise Err(e.kind(str(e)))
        except Exception as e:  # the guest's bug: report it, keep the traceback
            traceback.print_exc(file=sys.stderr)
            raise Err(wit.Error_Failed(f"{type(e).__name__}: {e}"))
        return result if isinstance(result, str) else json.dumps(result)
