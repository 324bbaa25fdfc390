"""OpenAI's error bodies: ``{"error": {"message", "type", "param", "code"}}``, built and checked with the ``openai``
package's own ``ErrorObject`` type.

Wordings are the real API's where they were seen in answers quoted in public bug reports (a missing or wrong key,
an unparseable body, a missing model, an unknown model, a tool name that breaks the pattern, a non-object parameter
schema, ``Missing required parameter``, ``Unrecognized request argument supplied``, the 429 rate-limit message); the
others follow the same grammar and say so in their docstrings (``wording modelled``).
"""

from __future__ import annotations

from typing import Any

from openai.types.shared import ErrorObject

from fakes.core import FakeResponse

KEYS_URL = "https://platform.openai.com/account/api-keys"
REFERENCE_URL = "https://platform.openai.com/docs/api-reference"


class ApiError(Exception):
    """A request the fake refuses as the real API would: becomes an error response with this body and status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = list(headers or [])

    def body(self) -> dict[str, Any]:
        """The wire body, checked against ``openai.types.shared.ErrorObject`` (all four keys, nulls included)."""
        error = {"message": self.message, "type": self.type, "param": self.param, "code": self.code}
        ErrorObject.model_validate(error)
        return {"error": error}

    def response(self, extra_headers: list[tuple[str, str]] | None = None) -> FakeResponse:
        return FakeResponse.json(self.status, self.body(), [*self.headers, *(extra_headers or [])])


def json_type(value: Any) -> str:
    """How OpenAI's validation messages name a JSON value's type (``a string``, ``an integer``, ``a decimal``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def missing_key() -> ApiError:
    return ApiError(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization "
        "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field "
        "(with blank username) if you're accessing the API from your browser and are prompted for a "
        f"username and password. You can obtain an API key from {KEYS_URL}.",
    )


def masked(key: str) -> str:
    """A key as OpenAI echoes it back: the first 8 and last 4 characters around stars (short keys whole)."""
    return key if len(key) <= 12 else key[:8] + "*" * (len(key) - 12) + key[-4:]


def wrong_key(key: str) -> ApiError:
    return ApiError(
        401,
        f"Incorrect API key provided: {masked(key)}. You can find your API key at {KEYS_URL}.",
        code="invalid_api_key",
    )


def unparseable_body() -> ApiError:
    return ApiError(
        400,
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
        "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent "
        "was not valid JSON. If you have trouble figuring out how to fix this, please contact us "
        "through our help center at help.openai.com.)",
    )


def no_model() -> ApiError:
    return ApiError(400, "you must provide a model parameter")


def unknown_model(model: str) -> ApiError:
    return ApiError(404, f"The model `{model}` does not exist or you do not have access to it.", code="model_not_found")


def invalid_url(method: str, path: str) -> ApiError:
    """The real API's answer for a route it does not have (the fake also uses it for routes it does not model)."""
    return ApiError(404, f"Invalid URL ({method} {path})")


def missing(param: str) -> ApiError:
    return ApiError(400, f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter")


def wrong_type(param: str, expected: str, value: Any) -> ApiError:
    return ApiError(
        400,
        f"Invalid type for '{param}': expected {expected}, but got {json_type(value)} instead.",
        param=param,
        code="invalid_type",
    )


def bad_value(param: str, value: Any, supported: list[str]) -> ApiError:
    """``Invalid value: 'x'. Supported values are: 'a', 'b', and 'c'.`` (the real API's enum message)."""
    quoted = [f"'{s}'" for s in supported]
    listed = (
        quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])}{',' if len(quoted) > 2 else ''} and {quoted[-1]}"
    )
    shown = value if isinstance(value, str) else repr(value)
    return ApiError(
        400, f"Invalid value: '{shown[:200]}'. Supported values are: {listed}.", param=param, code="invalid_value"
    )


def empty_array(param: str) -> ApiError:
    return ApiError(
        400,
        f"Invalid '{param}': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        param=param,
        code="empty_array",
    )


def array_too_long(param: str, maximum: int, length: int) -> ApiError:
    """Wording modelled on the string-length message."""
    return ApiError(
        400,
        f"Invalid '{param}': array too long. Expected an array with maximum length {maximum}, but "
        f"got an array with length {length} instead.",
        param=param,
        code="array_above_max_length",
    )


def string_too_long(param: str, maximum: int, length: int) -> ApiError:
    return ApiError(
        400,
        f"Invalid '{param}': string too long. Expected a string with maximum length {maximum}, but "
        f"got a string with length {length} instead.",
        param=param,
        code="string_above_max_length",
    )


def bad_tool_name(param: str) -> ApiError:
    return ApiError(
        400,
        f"Invalid '{param}': string does not match pattern. Expected a string that matches the "
        "pattern '^[a-zA-Z0-9_-]+$'.",
        param=param,
        code="invalid_value",
    )


def bad_schema(function: str, param: str, got: Any) -> ApiError:
    shown = got.get("type") if isinstance(got, dict) else None
    return ApiError(
        400,
        f"Invalid schema for function '{function}': schema must be a JSON Schema of 'type: "
        f'"object"\', got \'type: "{shown}"\'.',
        param=param,
        code="invalid_function_parameters",
    )


def unrecognized_argument(name: str) -> ApiError:
    """Chat Completions' answer to an unknown top-level field."""
    return ApiError(400, f"Unrecognized request argument supplied: {name}")


def unknown_parameter(name: str) -> ApiError:
    """The Responses API's answer to an unknown top-level field (wording modelled)."""
    return ApiError(400, f"Unknown parameter: '{name}'.", param=name, code="unknown_parameter")


def invalid_input() -> ApiError:
    """The embeddings endpoint's answer to an empty or malformed ``input``."""
    return ApiError(400, f"'$.input' is invalid. Please check the API reference: {REFERENCE_URL}.")


def rate_limited(model: str, retry_after: float) -> ApiError:
    """429 with ``retry-after`` (seconds) and the request-limit headers the real API sends."""
    return ApiError(
        429,
        f"Rate limit reached for {model} in organization org-fake on requests per min (RPM): "
        f"Limit 3, Used 3, Requested 1. Please try again in {retry_after:g}s. Visit "
        "https://platform.openai.com/account/rate-limits to learn more.",
        type="requests",
        code="rate_limit_exceeded",
        headers=[
            ("retry-after", f"{retry_after:g}"),
            ("x-ratelimit-limit-requests", "3"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", f"{retry_after:g}s"),
        ],
    )


def for_status(status: int) -> ApiError:
    """A plausible OpenAI error for an injected ``status`` fault (wording modelled except 401, 404, 429, 500)."""
    if status == 401:
        return missing_key()
    if status == 429:
        return rate_limited("gpt-4o", 1.0)
    if status == 404:
        return ApiError(404, "The requested resource was not found.")
    if status == 500:
        return ApiError(
            500, "The server had an error while processing your request. Sorry about that!", type="server_error"
        )
    if status == 503:
        return ApiError(503, "The server is overloaded or not ready yet.", type="server_error")
    if status >= 500:
        return ApiError(
            status, f"The server had an error (HTTP {status}) while processing your request.", type="server_error"
        )
    return ApiError(status, f"Your request was refused (HTTP {status}).")
