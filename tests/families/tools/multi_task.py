"""A small file-system task and its calls, shared by the multi-turn tools tests."""

from __future__ import annotations

import json

FS = {
    "GorillaFileSystem": {
        "root": {
            "alex": {
                "type": "directory",
                "contents": {
                    "log.txt": {"type": "file", "content": "one Error two"},
                    "archive": {"type": "directory", "contents": {}},
                },
            }
        }
    }
}
DOCS = [{"name": n, "parameters": {"type": "dict", "properties": {}}} for n in ("ls", "cd", "mv", "cat", "touch", "cp")]


def task(*texts: str, held_out: dict | None = None) -> dict:
    return {
        "id": "t1",
        "turns": [[{"role": "user", "content": t}] if t else [] for t in texts],
        "involved_classes": ["GorillaFileSystem"],
        "initial_config": FS,
        "functions": DOCS,
        "held_out": held_out or {},
    }


def c(name: str, **args: object) -> list[dict[str, str]]:
    return [{name: json.dumps(args)}]
