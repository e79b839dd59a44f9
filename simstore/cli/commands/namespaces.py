"""``namespaces`` (list them, with counts and preset) and ``namespaces drop NAME --yes``."""

from __future__ import annotations

import dataclasses
import json

import click

from simstore.cli._app import Failure, Settings, main, open_store
from simstore.cli.output import emit, iso, shown, table
from simstore.storage.db import redact


@main.group(invoke_without_command=True)
@click.pass_context
def namespaces(ctx: click.Context) -> None:
    """The namespaces of the database: name, preset, policy, kept rows, decisions, created.

    Without a subcommand (or with 'list') lists them; nothing is written. 'drop NAME --yes'
    deletes one namespace and everything in it.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_namespaces)


@namespaces.command("list")
@click.pass_obj
def list_namespaces(settings: Settings) -> None:
    """List the namespaces with their preset, policy and counts (nothing is written)."""
    from simstore.policy.policies import recipe_summary
    from simstore.storage.namespaces import listed

    found = listed(settings.url)
    data = [
        dataclasses.asdict(info)
        | {"created_at": iso(info.created_at), "policy": info.policy and json.loads(info.policy)}
        for info in found
    ]
    rows = [
        (
            info.name,
            info.preset,
            recipe_summary(info.policy),
            f"{info.kept:,}",
            f"{info.decisions:,}",
            shown(info.created_at),
        )
        for info in found
    ]
    headers = ("name", "preset", "policy", "kept", "decisions", "created")
    text = table(headers, rows) if rows else None
    emit(settings, data, text or f"no namespaces in {redact(settings.url)}")


@namespaces.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Really drop it (without --yes nothing is deleted).")
@click.pass_obj
def drop(settings: Settings, name: str, yes: bool) -> None:
    """Delete namespace NAME: its kept rows, decisions and band keys, then the namespace.

    Refused (exit 1) without --yes, saying what would be deleted; one transaction with the
    namespace's write lock, so concurrent adds to it finish first or fail after.
    """
    from simstore.storage.namespaces import drop as drop_namespace

    chosen = dataclasses.replace(settings, namespace=name)
    with open_store(chosen) as store:
        if not yes:
            held = store.stats()
            raise Failure(
                f"not dropping namespace {name!r} ({held.kept:,} kept rows, {held.decisions:,} "
                "decisions) without --yes"
            )
        deleted = drop_namespace(store.scope)
    data = {"namespace": name, "deleted": deleted}
    counts = ", ".join(f"{count:,} from {table_name}" for table_name, count in deleted.items())
    emit(settings, data, f"dropped namespace {name!r}: deleted {counts}")
