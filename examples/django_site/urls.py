"""One view: POST /comments/<key> keeps a comment or answers 409 with the one it repeats."""

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from simstore.contrib.django import get_store


@csrf_exempt
def comment(request: HttpRequest, key: str) -> JsonResponse:
    decision = get_store().add(request.body.decode("utf-8"), key=key)
    if not decision.inserted and decision.duplicate_of is not None:
        return JsonResponse({"duplicate_of": decision.duplicate_of.key}, status=409)
    return JsonResponse({"kept": key}, status=201)


urlpatterns = [path("comments/<str:key>", comment)]
