"""Identifiers shaped like the real API's (checked against answers quoted in the API reference and bug reports).

``chatcmpl-`` + 29 letters/digits, ``call_`` + 24, ``resp_`` / ``msg_`` / ``fc_`` + 48 hex digits, ``req_`` + 32 hex
(the ``x-request-id`` header), ``fp_`` + 10 hex (``system_fingerprint``). Random (``secrets``), so two runs never share
an id.
"""

from __future__ import annotations

import secrets
import string

_ALNUM = string.ascii_letters + string.digits


def _alnum(length: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(length))


def chat_completion_id() -> str:
    return "chatcmpl-" + _alnum(29)


def tool_call_id() -> str:
    return "call_" + _alnum(24)


def response_id() -> str:
    return "resp_" + secrets.token_hex(24)


def message_item_id() -> str:
    return "msg_" + secrets.token_hex(24)


def function_call_item_id() -> str:
    return "fc_" + secrets.token_hex(24)


def request_id() -> str:
    return "req_" + secrets.token_hex(16)


def fingerprint() -> str:
    return "fp_" + secrets.token_hex(5)
