"""The memory engine: tiered queue, compaction, recall. Plain Python, no Django.

Storage is reached only through the protocol in `types.TierStore`; `memory/storage/` implements it
on the ORM and `engine.memstore.InMemoryStore` implements it for tests and benchmarks.
"""
