"""The ``redis-cli`` inside the twin's Redis pod: the commands specs send, on the pod's keys in a JSON state file.

The twin's Redis pod runs shell commands from ``kubectl exec`` (``sh -c '...'``) under the host's POSIX ``sh`` with
this program first on ``PATH`` as ``redis-cli``, so a spec's sweep script runs for real. The pod's keys are written to
``$TWIN_REDIS_STATE`` (``{"keys": {name: value}}``) before the command and read back after it. Output is redis-cli's
raw mode (stdout is not a terminal): ``--scan [--pattern P]`` one matching key per line; ``DEL k...`` the number
removed; ``GET k`` the value (an empty line for none); ``SET k v`` ``OK``; ``KEYS P`` the keys; ``DBSIZE`` the count;
``PING`` ``PONG``. Anything else is Redis's unknown-command error on stdout, exit 1. Redis's glob: ``*``, ``?``,
``[abc]``, ``[^a]``, ``[a-z]``, ``\\`` escapes the next character. Standard library only (it runs as a script).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from typing import Any


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Redis's glob as an anchored regular expression."""
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


def run(args: list[str], keys: dict[str, str]) -> tuple[int, str]:
    """``redis-cli args`` on ``keys`` (changed in place): the exit status and stdout."""
    if args[:1] == ["--scan"]:
        pattern = args[args.index("--pattern") + 1] if "--pattern" in args[:-1] else "*"
        matcher = glob_regex(pattern)
        return 0, "".join(f"{k}\n" for k in sorted(keys) if matcher.fullmatch(k))
    command, rest = (args[0].upper(), args[1:]) if args else ("", [])
    if command == "PING" and not rest:
        return 0, "PONG\n"
    if command == "DBSIZE" and not rest:
        return 0, f"{len(keys)}\n"
    if command == "KEYS" and len(rest) == 1:
        matcher = glob_regex(rest[0])
        return 0, "".join(f"{k}\n" for k in sorted(keys) if matcher.fullmatch(k))
    if command == "GET" and len(rest) == 1:
        return 0, f"{keys.get(rest[0], '')}\n"
    if command == "SET" and len(rest) == 2:
        keys[rest[0]] = rest[1]
        return 0, "OK\n"
    if command == "DEL" and rest:
        return 0, f"{sum(1 for k in rest if keys.pop(k, None) is not None)}\n"
    return 1, f"ERR unknown command '{args[0] if args else ''}', with args beginning with: {' '.join(rest[:3])}\n"


def main() -> int:
    path = os.environ["TWIN_REDIS_STATE"]
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(path) as f:
            state: dict[str, Any] = json.load(f)
        code, out = run(sys.argv[1:], state.setdefault("keys", {}))
        with open(path, "w") as f:
            json.dump(state, f)
    sys.stdout.write(out)
    return code


if __name__ == "__main__":
    sys.exit(main())
