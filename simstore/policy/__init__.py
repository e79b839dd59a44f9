"""Policies and the DB-free decisions: what a text needs and when a kept text is its duplicate
(``policies``), the in-order decision every door calls (``decide``), the SimHash probes of a
radius (``probes``), and the same decisions for many texts at once without a database
(``batch``, ``_planning``).

May import ``simstore.text``, ``simstore.results``, ``simstore.validate`` and
``simstore.errors``; never storage, records or any front end.
"""
