"""A Flask app that refuses near-duplicate posts.

Run: ``pip install 'simstore[flask]'`` then ``flask --app examples/flask_app.py run`` and
``curl -X POST --data 'some text' localhost:5000/posts/p1`` (twice with a near-identical text).
The store is ``instance/simstore.db`` unless SIMSTORE_URL is set.
"""

from __future__ import annotations

from flask import Flask, request

from simstore.contrib.flask import FlaskSimStore

dedup = FlaskSimStore()


def create_app(config: dict[str, object] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(SIMSTORE_KEEP="2d", **(config or {}))
    dedup.init_app(app)

    @app.post("/posts/<key>")
    def create_post(key: str) -> tuple[dict[str, object], int]:
        decision = dedup.store.add(request.get_data(as_text=True), key=key)
        if not decision.inserted and decision.duplicate_of is not None:
            match = decision.duplicate_of
            return {"duplicate_of": match.key, "distance": match.distance}, 409
        return {"kept": key, "fingerprint": decision.hex}, 201

    return app


app = create_app()
