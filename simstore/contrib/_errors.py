"""How the web adapters answer simstore's errors: the same status codes in Flask and Django.

A key already stored with another text (``KeyConflict``) is the client's conflict with the
store's state: 409. Input simstore refuses (``InvalidInput``: an empty or over-long text or key,
a wrong type, a NUL character) is a well-formed request it cannot process: 422. The body is JSON,
``{"error": <message>, "type": <error class>}``. Every other error (a database that is down, a
schema out of date, a preset mismatch) is the server's problem and is left to the framework (500).
"""

from __future__ import annotations

from typing import Any

from simstore.errors import InvalidInput, KeyConflict

STATUS = {KeyConflict: 409, InvalidInput: 422}


def error_response(error: BaseException) -> tuple[dict[str, Any], int] | None:
    """The JSON body and status code of a client error simstore raised; None for any other."""
    for kind, status in STATUS.items():
        if isinstance(error, kind):
            return {"error": str(error), "type": type(error).__name__}, status
    return None
