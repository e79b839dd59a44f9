"""Records in and out: reading input files (``records``), feeding them to a store (``ingest``),
exporting kept rows (``export``), the hand-over directory a batch job writes and a store loads
(``handover``) and the HTML report (``report``).

Functions here take what they need of an open store, its ``Scope`` (``SimStore.scope``) or a
Protocol of the calls they make, and never import the facade, not even for type hints, so that
``simstore.store`` can offer them as methods. Their SQL is storage's. May import storage, policy
and text.
"""
