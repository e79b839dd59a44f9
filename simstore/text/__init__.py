"""The pure text layer: normalise, tokenise, weight and hash a text into a SimHash fingerprint
(``presets``, ``fingerprint``), sign it with MinHash (``minhash``) and measure how alike two texts
are (``similarity``); ``encoding`` converts fingerprints to and from their stored and shown forms.

No SQLAlchemy, no I/O, no database: this layer imports only the standard library, numpy, jieba and
OpenCC (lazily), and ``simstore.errors``.
"""
