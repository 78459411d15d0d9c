"""An example warden tool in Python: counts the words of a text."""

from warden_tool import Tool, tool  # noqa: F401  (Tool is the component's export)


@tool(
    "word_count",
    "Count the words of a text (split on whitespace); with unique, count distinct words.",
    {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The text to count."},
            "unique": {"type": "boolean", "description": "Count each distinct word once."},
        },
        "required": ["text"],
        "additionalProperties": False,
    },
)
def word_count(text, unique=False):
    words = text.split()
    if not words:
        raise ValueError("the text has no words; give some text to count")
    n = len(set(words)) if unique else len(words)
    return f"{n} words"
