"""Optional framework adapters; importing simstore imports none of them."""
