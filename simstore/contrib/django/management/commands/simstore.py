"""``manage.py simstore db upgrade|current|check`` and ``manage.py simstore stats``."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from simstore.contrib.django import get_store, store_url
from simstore.errors import SimstoreError
from simstore.storage import migrate


class Command(BaseCommand):
    help = "simstore: schema (db upgrade|current|check) and stats of the near-duplicate store"

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("action", choices=["db", "stats"])
        parser.add_argument("subaction", nargs="?", choices=["upgrade", "current", "check"])

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "stats":
                for name, value in vars(get_store().stats()).items():
                    self.stdout.write(f"{name}: {value}")
                return
            sub = options["subaction"]
            if sub is None:
                raise CommandError("say what to do: simstore db upgrade|current|check")
            if sub == "upgrade":
                migrate.upgrade(store_url())
            status = migrate.status(store_url())
            if sub == "check" and status.error is not None:
                raise CommandError(status.error)
            self.stdout.write(status.message)
        except SimstoreError as error:
            raise CommandError(str(error)) from error
