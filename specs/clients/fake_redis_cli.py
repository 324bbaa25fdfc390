"""A stand-in ``redis-cli`` for the sweep specs: the commands a sweep uses, on a JSON state file.

Run as ``python fake_redis_cli.py ARGS...`` (the spec puts a ``redis-cli`` wrapper first on ``PATH``); the state file
is ``$REDIS_DOUBLE_STATE``: ``{"keys": {name: value}, "reachable": bool, "fail_del": bool, "log": [[args...]]}``,
read and written under an exclusive ``flock``. Output is redis-cli's raw mode (stdout not a terminal): ``--scan
--pattern P`` prints one matching key per line; ``DEL k...`` prints the number removed; ``SET k v`` prints ``OK``;
``PING`` prints ``PONG``. An unreachable server is redis-cli's message on stderr and exit 1; an error reply is printed
and exits 1. Redis glob: ``*``, ``?``, ``[abc]``, ``[^a]``, ``[a-z]``, ``\\`` escapes the next character. Standalone:
standard library only.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from typing import Any


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Redis's glob (``stringmatchlen``) as an anchored regular expression."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] == "^" else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                negate = body.startswith("^")
                body = body[1:] if negate else body
                out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def run(args: list[str], state: dict[str, Any]) -> tuple[int, str, str]:
    state.setdefault("log", []).append(args)
    if not state.get("reachable", True):
        return 1, "", "Could not connect to Redis at 127.0.0.1:6379: Connection refused\n"
    keys: dict[str, str] = state.setdefault("keys", {})
    if args[:1] == ["--scan"]:
        pattern = args[args.index("--pattern") + 1] if "--pattern" in args else "*"
        matcher = glob_regex(pattern)
        return 0, "".join(f"{k}\n" for k in sorted(keys) if matcher.fullmatch(k)), ""
    command = args[0].upper() if args else ""
    if command == "DEL" and len(args) > 1:
        if state.get("fail_del"):
            return 1, "ERR injected DEL failure\n", ""
        removed = sum(1 for k in args[1:] if keys.pop(k, None) is not None)
        return 0, f"{removed}\n", ""
    if command == "SET" and len(args) == 3:
        keys[args[1]] = args[2]
        return 0, "OK\n", ""
    if command == "PING":
        return 0, "PONG\n", ""
    return 1, f"ERR unknown command '{command}'\n", ""


def main() -> int:
    path = os.environ["REDIS_DOUBLE_STATE"]
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(path) as f:
            state = json.load(f)
        code, out, err = run(sys.argv[1:], state)
        with open(path, "w") as f:
            json.dump(state, f)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


if __name__ == "__main__":
    sys.exit(main())
