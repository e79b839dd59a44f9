"""``simstore.contrib.django.middleware.SimstoreErrorsMiddleware``: simstore's client errors as
JSON responses, 409 for a key conflict and 422 for invalid input (``simstore.contrib._errors``).

Add it to ``MIDDLEWARE``; any other exception goes on to Django's own handling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from simstore.contrib._errors import error_response


class SimstoreErrorsMiddleware:
    """Answers a view's ``KeyConflict`` with 409 and ``InvalidInput`` with 422 (JSON bodies)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        answer = error_response(exception)
        if answer is None:
            return None
        body, status = answer
        return JsonResponse(body, status=status)
