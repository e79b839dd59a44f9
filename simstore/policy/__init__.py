"""Policies and the DB-free decisions: what a text needs (``verify.Policy.plan``), which kept rows
are its candidates and when one is a duplicate (``verify``), validated input (``validate``), the
SimHash probes of a radius (``probes``), and the same decisions for many texts at once without a
database (``batch``, ``_planning``).

May import ``simstore.text``, ``simstore.results`` and ``simstore.errors``; never storage, records
or any front end.
"""
