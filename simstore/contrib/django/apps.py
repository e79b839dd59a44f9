from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core import checks


class SimstoreConfig(AppConfig):
    name = "simstore.contrib.django"
    label = "simstore"
    verbose_name = "simstore near-duplicate store"

    def ready(self) -> None:
        checks.register(check_settings)


def check_settings(app_configs: Any = None, **_kwargs: Any) -> list[checks.CheckMessage]:
    """The ``SIMSTORE`` setting, checked when the project starts (``manage.py check``): every
    option, the database it names (a ``URL`` that does not parse or whose driver is missing, a
    ``DATABASE`` alias that ``DATABASES`` lacks), and names that are no setting (warnings)."""
    from django.conf import settings

    from simstore.contrib._knobs import KNOBS, check_database_url, unknown_settings
    from simstore.contrib.django import DJANGO_ONLY, configured_alias, database_url, store_settings
    from simstore.errors import SimstoreError

    found: list[checks.CheckMessage] = []
    given = dict(getattr(settings, "SIMSTORE", {}) or {})
    for line in unknown_settings(given, (*KNOBS, *DJANGO_ONLY), 'SIMSTORE["{}"]'):
        found.append(checks.Warning(line, id="simstore.W001"))
    for name in dir(settings):  # SIMSTORE_URL = ... at the top level is read by nothing
        if name.startswith("SIMSTORE_"):
            hint = f'SIMSTORE = {{"{name[len("SIMSTORE_") :]}": ...}}'
            found.append(
                checks.Warning(f"{name} is not read: simstore reads {hint}", id="simstore.W002")
            )
    try:
        store_settings()
        if given.get("URL"):
            check_database_url(given["URL"], 'SIMSTORE["URL"]')
        else:
            alias = configured_alias()
            if alias not in settings.DATABASES:
                known = ", ".join(sorted(settings.DATABASES))
                return [
                    *found,
                    checks.Error(
                        f'SIMSTORE["DATABASE"]: no Django database {alias!r} (DATABASES has '
                        f"{known or 'none'})",
                        id="simstore.E002",
                    ),
                ]
            check_database_url(database_url(alias), f"DATABASES[{alias!r}]")
    except SimstoreError as error:
        found.append(checks.Error(str(error), id="simstore.E001"))
    return found
